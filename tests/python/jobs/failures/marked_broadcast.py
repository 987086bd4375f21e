"""Constraint violation: the batch is marked dynamic, and adding a fixed (8, 3) bias makes it 8."""

import torch

bias = torch.linspace(0, 1, 24).reshape(8, 3)


def shift(x):
    return (x + bias).relu()  # why: here


batch = torch.randn(8, 3)
torch._dynamo.mark_dynamic(batch, 0)
print(torch.compile(shift, backend="aot_eager")(batch))
