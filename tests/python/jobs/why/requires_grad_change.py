"""requires_grad_change: the same function gets an input that does not need a gradient and then
one that does (a frozen embedding, then a trained one), and each compiles its own graph. The fix
makes requires_grad the same on every call (detach the input whose gradient is not wanted)."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__,
    advice="requires_grad_change",
    outcome="recompile",
    expr=None,
    broken_compiles=2,
    recompile={"source": "x.requires_grad", "expected": "False", "seen": "True"},
)


def layer(x: torch.Tensor) -> torch.Tensor:  # why: here
    return torch.tanh(x * 3) - x


def run(variant: str) -> dict:
    trained = torch.arange(4.0).requires_grad_()
    if variant == "fixed":
        trained = trained.detach()  # the advised edit: the same requires_grad on every call
    return compile_and_compare(layer, [lambda: (torch.arange(4.0),), lambda: (trained,)])
