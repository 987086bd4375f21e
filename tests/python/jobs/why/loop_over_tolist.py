"""data_dependent_loop: a Python loop over `.tolist()` of a selection whose length depends on the
data ("Could not guard on data-dependent expression Eq(u0, 0)" as the loop asks whether the list
is empty). The fix computes over every position with a mask instead of looping over the picked ones."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__,
    advice="data_dependent_loop",
    outcome="failure",
    expr="Eq(u0, 0)",
    broken_compiles=1,
    symbols={"u0": "nonzero"},
)


def weighted_hits(x: torch.Tensor) -> torch.Tensor:
    total = x.new_zeros(())
    hits = torch.nonzero(x > 0).squeeze(1)  # why: u0
    for i in hits.tolist():  # why: here
        total = total + x[i] * (i + 1)
    return total


def weighted_hits_masked(x: torch.Tensor) -> torch.Tensor:
    positions = torch.arange(1, x.size(0) + 1, dtype=x.dtype)  # the advised edit: every position, masked
    return torch.where(x > 0, x * positions, 0).sum()


def run(variant: str) -> dict:
    fn = weighted_hits if variant == "broken" else weighted_hits_masked
    calls = [lambda: (torch.tensor([1.0, -2, 3, 0, 5]),), lambda: (torch.tensor([-1.0, 2, -3, 4, 5]),)]
    return compile_and_compare(fn, calls, eager=weighted_hits, fullgraph=True)
