"""torch_cond: which path runs depends on a count read from the data ("Could not guard on
data-dependent expression u0 > 4"), and both paths happen: torch.cond keeps both in one graph."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__,
    advice="torch_cond",
    outcome="failure",
    expr="u0 > 4",
    broken_compiles=1,
    symbols={"u0": "item|_local_scalar_dense"},
)


def activate(x: torch.Tensor) -> torch.Tensor:
    positives = (x > 0).sum().item()  # why: u0
    if positives > 4:  # why: here
        return torch.sin(x)
    return torch.cos(x)


def activate_cond(x: torch.Tensor) -> torch.Tensor:
    positives = (x > 0).sum().item()
    return torch.cond(positives > 4, torch.sin, torch.cos, (x,))  # the advised edit


def run(variant: str) -> dict:
    fn = activate if variant == "broken" else activate_cond
    calls = [lambda: (torch.linspace(-1, 3, 8),), lambda: (torch.linspace(-3, 1, 8),)]  # both sides
    return compile_and_compare(fn, calls, eager=activate, fullgraph=True)
