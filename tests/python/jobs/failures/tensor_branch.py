"""A branch on a tensor's value under fullgraph=True: only torch.cond fixes it, a change a
person makes (why --verify refuses)."""

import torch


def pick(x):
    if x.sum() > 0:  # why: here
        return x * 2
    return -x


print(torch.compile(pick, backend="aot_eager", fullgraph=True)(torch.linspace(-1, 2, 4)))
