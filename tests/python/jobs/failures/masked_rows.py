"""Run-time assert: the positive entries are read as rows of 3, which needs their count to be a
multiple of 3; the data has 7."""

import torch

torch._dynamo.config.capture_dynamic_output_shape_ops = True


def rows(x):
    kept = torch.masked_select(x, x > 0)  # why: u0
    return kept.reshape(-1, 3).sum(1)  # why: here


f = torch.compile(rows, backend="aot_eager", fullgraph=True)
print(f(torch.tensor([1.0, -1.0, 2.0, 3.0, -2.0, 4.0, 5.0, 6.0, 7.0])))
