"""capture_dynamic_output_shape_ops: torch.nonzero picks rows, its output's length depends on the
data; without capture_dynamic_output_shape_ops Dynamo breaks the graph there."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__, advice="capture_dynamic_output_shape_ops", outcome="graph_break", expr=None, broken_compiles=3
)


def active_rows_sum(x: torch.Tensor) -> torch.Tensor:
    active = torch.nonzero(x.amax(1) > 0).squeeze(1)  # why: here
    return x[active].sum(0) * 2


def run(variant: str) -> dict:
    config = {"capture_dynamic_output_shape_ops": True} if variant == "fixed" else {}  # the advised edit
    calls = [
        lambda: (torch.tensor([[1.0, -1], [-2, -3], [0.5, 4]]),),
        lambda: (torch.tensor([[-1.0, -1], [2, 3], [-5, 4]]),),
    ]
    return compile_and_compare(active_rows_sum, calls, config=config)
