"""Constraint violation: the batch is marked dynamic, and the code compares it with 8."""

import torch


def head(x):
    y = x * 2
    if x.size(0) == 8:  # why: here
        return y + 1
    return y - 1


x = torch.randn(8, 3)
torch._dynamo.mark_dynamic(x, 0)
print(torch.compile(head, backend="aot_eager")(x))
