"""guard_or_false: a library helper branches on the row count of a selection ("Could not guard on
data-dependent expression Eq(Mod(u0, 4), 0)" inside the library). The branch is a fast path, so
the library uses guard_or_false: when the compiler cannot tell, it takes the general path."""

import torch

from . import compile_and_compare, expect
from .lib import padding

EXPECT = expect(
    __file__,
    advice="guard_or_false",
    outcome="failure",
    expr="Eq(Mod(u0, 4), 0)",
    broken_compiles=1,
    symbols={"u0": "nonzero"},
    origin_file=padding.__file__,
)


def _rows(pad):
    def kept_rows(x: torch.Tensor) -> torch.Tensor:
        rows = x[torch.nonzero(x.sum(1) > 0).squeeze(1)]  # why: u0
        return pad(rows, 4).sum(1)

    return kept_rows


def run(variant: str) -> dict:
    fn = _rows(padding.pad_rows if variant == "broken" else padding.pad_rows_guarded)
    calls = [
        lambda: (torch.tensor([[1.0, 2], [-3, 1], [2, 2], [0, 1], [5, -1]]),),
        lambda: (torch.tensor([[1.0, 1], [2, 2], [3, 3], [4, 4], [-9, 0]]),),
    ]  # 4 rows kept: eager's fast path
    return compile_and_compare(fn, calls, eager=_rows(padding.pad_rows), fullgraph=True)
