"""Run-time assert (the issue's case): nonzero's count must be even for view(-1, 2); the data
has 9 nonzeros, so the compiled code's deferred assert Eq(Mod(u0, 2), 0) fails when it runs."""

import sys

import torch

torch._dynamo.config.capture_dynamic_output_shape_ops = True
backend = sys.argv[1] if len(sys.argv) > 1 else "aot_eager"


@torch.compile(fullgraph=True, backend=backend)
def pairs(x):
    idx = torch.nonzero(x).flatten()  # why: u0
    return idx.view(-1, 2).float().mean(0)  # why: here


print(pairs(torch.tensor([1, 0, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9])))
