"""capture_dynamic_output_shape_ops: a loss averaged over the valid entries with masked_select,
whose output's length depends on the mask; without capture_dynamic_output_shape_ops Dynamo
breaks the graph there."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__, advice="capture_dynamic_output_shape_ops", outcome="graph_break", expr=None, broken_compiles=3
)


def masked_loss(pred: torch.Tensor, target: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    errors = torch.masked_select(pred - target, valid)  # why: here
    return (errors**2).mean()


def run(variant: str) -> dict:
    config = {"capture_dynamic_output_shape_ops": True} if variant == "fixed" else {}  # the advised edit
    calls = [
        lambda: (torch.arange(6.0), torch.ones(6), torch.tensor([1, 0, 1, 1, 0, 1], dtype=torch.bool)),
        lambda: (torch.arange(6.0), torch.zeros(6), torch.tensor([0, 0, 1, 1, 1, 1], dtype=torch.bool)),
    ]
    return compile_and_compare(masked_loss, calls, config=config)
