"""Run-time assert from the user's own torch._check: a count read with .item() is promised to be
at most 8, and the data sums to 12."""

import torch

torch._dynamo.config.capture_scalar_outputs = True


@torch.compile(backend="aot_eager", fullgraph=True)
def padded(counts):
    n = counts.sum().item()  # why: u0
    torch._check(n <= 8)  # why: here
    return torch.ones(n).cumsum(0)


print(padded(torch.tensor([3, 4, 5])))
