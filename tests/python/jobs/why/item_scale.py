"""capture_scalar_outputs: `.item()` normalizes by a value read from the data; without
capture_scalar_outputs Dynamo breaks the graph there. With it, the scalar stays in the graph."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(__file__, advice="capture_scalar_outputs", outcome="graph_break", expr=None, broken_compiles=3)


def normalize(x: torch.Tensor) -> torch.Tensor:
    peak = x.abs().max().item()  # why: here
    return torch.tanh(x / peak)


def run(variant: str) -> dict:
    config = {"capture_scalar_outputs": True} if variant == "fixed" else {}  # the advised edit
    calls = [lambda: (torch.tensor([1.0, -4, 2]),), lambda: (torch.tensor([3.0, 0.5, -4]),)]  # one peak: no other cause
    return compile_and_compare(normalize, calls, config=config)
