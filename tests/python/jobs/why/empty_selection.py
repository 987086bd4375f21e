"""torch_check: a function branches on whether a selection is empty ("Could not guard on
data-dependent expression Eq(u0, 0)" under fullgraph=True). The inputs always select something,
so the empty side never happens: torch._check(count > 0) tells the compiler so."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__, advice="torch_check", outcome="failure", expr="Eq(u0, 0)", broken_compiles=1, symbols={"u0": "nonzero"}
)


def top_scores(scores: torch.Tensor) -> torch.Tensor:
    picked = torch.nonzero(scores > 0.5).squeeze(1)  # why: u0
    if picked.numel() == 0:  # why: here
        return scores.new_zeros(1)
    return scores[picked].sort(descending=True).values


def top_scores_checked(scores: torch.Tensor) -> torch.Tensor:
    picked = torch.nonzero(scores > 0.5).squeeze(1)
    torch._check(picked.numel() > 0)  # the advised edit: never empty
    if picked.numel() == 0:
        return scores.new_zeros(1)
    return scores[picked].sort(descending=True).values


def run(variant: str) -> dict:
    fn = top_scores if variant == "broken" else top_scores_checked
    calls = [lambda: (torch.tensor([0.9, 0.1, 0.7, 0.3, 0.6]),), lambda: (torch.tensor([0.2, 0.8, 0.4, 0.95, 0.1]),)]
    return compile_and_compare(fn, calls, eager=top_scores, fullgraph=True)
