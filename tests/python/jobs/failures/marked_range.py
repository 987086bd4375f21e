"""Constraint violation over a range: the length is marked dynamic in [2, 16], and the code only
works above 4 (its branch on the length is decided for the first call's 8)."""

import torch


def tail(x):
    if x.size(0) > 4:  # why: here
        return x[4:].sum(0)
    return x.sum(0)


x = torch.randn(8, 3)
torch._dynamo.mark_dynamic(x, 0, min=2, max=16)
print(torch.compile(tail, backend="aot_eager")(x))
