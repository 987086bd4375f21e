"""capture_scalar_outputs: splitting a packed batch by lengths from `.tolist()` (a ragged batch);
without capture_scalar_outputs Dynamo breaks the graph at the data-dependent scalars."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(__file__, advice="capture_scalar_outputs", outcome="graph_break", expr=None, broken_compiles=3)


def per_sequence_mean(packed: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    pieces = torch.split(packed, lengths.tolist())  # why: here
    return torch.stack([p.mean(0) for p in pieces])


def run(variant: str) -> dict:
    config = {"capture_scalar_outputs": True} if variant == "fixed" else {}  # the advised edit
    calls = [
        lambda: (torch.arange(16.0).reshape(8, 2), torch.tensor([3, 5])),
        lambda: (torch.arange(16.0).reshape(8, 2), torch.tensor([3, 5])),
    ]  # one split: no other cause
    return compile_and_compare(per_sequence_mean, calls, config=config)
