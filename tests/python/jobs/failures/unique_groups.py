"""Run-time assert: the distinct labels are read as groups of 4; there are 5."""

import torch

torch._dynamo.config.capture_dynamic_output_shape_ops = True


@torch.compile(backend="aot_eager", fullgraph=True)
def groups(labels):
    distinct = torch.unique(labels)  # why: u0
    return distinct.view(-1, 4).float().mean(1)  # why: here


print(groups(torch.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3])))
