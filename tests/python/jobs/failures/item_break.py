"""A graph break on .item() (capture_scalar_outputs is off): the advice is a config flag."""

import torch


def scale(x):
    s = x.abs().max().item()  # why: here
    return x / (s + 1)


f = torch.compile(scale, backend="aot_eager")
print(f(torch.linspace(-2, 3, 6)))
