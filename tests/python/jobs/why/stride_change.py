"""stride_change: the same function gets a contiguous matrix and then its transpose (a view with
other strides, as `x.t()` or `x.permute(...)` hand on), and each layout compiles its own graph.
The fix makes the caller pass one layout: `.contiguous()` at the call that brought the view."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__,
    advice="contiguous",
    outcome="recompile",
    expr=None,
    broken_compiles=2,
    recompile={"source": "x.stride()[0]", "expected": "4", "seen": "1"},
)


def rows_softmax(x: torch.Tensor) -> torch.Tensor:  # why: here
    return torch.softmax(x * 2, dim=-1)


def run(variant: str) -> dict:
    weights = torch.arange(16.0).reshape(4, 4)
    transposed = weights.t()  # the same values seen column-first: strides (1, 4)
    if variant == "fixed":
        transposed = transposed.contiguous()  # the advised edit: one layout on every call
    return compile_and_compare(rows_softmax, [lambda: (weights,), lambda: (transposed,)])
