"""The run-time assert of pairs_view, failing first in a forked child (as in a DataLoader worker)
and then in the parent. The child's copy of the store has no writer: its failure is not
recorded, and recording it must neither hang the child nor touch the parent's file."""

import os

import torch

torch._dynamo.config.capture_dynamic_output_shape_ops = True


@torch.compile(fullgraph=True, backend="aot_eager")
def pairs(x):
    idx = torch.nonzero(x).flatten()  # why: u0
    return idx.view(-1, 2).float().mean(0)  # why: here


pairs(torch.tensor([1, 0, 2, 3, 0, 4, 5, 6, 0, 7, 8, 0]))  # compiled in the parent: 8 nonzeros
bad = torch.tensor([1, 0, 2, 3, 0, 4, 5, 6, 0, 7, 8, 9])
child = os.fork()
if child == 0:
    try:
        pairs(bad)
    except RuntimeError:
        os._exit(0)
    os._exit(1)
_, status = os.waitpid(child, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
pairs(bad)  # the parent dies of it
