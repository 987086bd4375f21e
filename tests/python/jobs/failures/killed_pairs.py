"""The issue's run-time assert in a job killed on the spot (os._exit: no unwinding, capture never
closes the store): the failure was written when it happened, and the recovered store holds it.
`noise` is 32 MiB of random floats: capture's writer is still compressing its sample when the
failure is recorded, so the failure is in the file only if capture waits for it to be written."""

import os

import torch

torch._dynamo.config.capture_dynamic_output_shape_ops = True


@torch.compile(fullgraph=True, backend="aot_eager")
def pairs(x, noise):
    idx = torch.nonzero(x).flatten()  # why: u0
    return idx.view(-1, 2).float().mean(0) + noise.mean()  # why: here


try:
    pairs(torch.tensor([1, 0, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9]), torch.rand(8 << 20))
except RuntimeError:
    os._exit(3)
