"""torch_cond: `if x.sum() > 0:` branches on a tensor's value ("Data-dependent branching" under
fullgraph=True); both sides happen, so torch.cond keeps both in one graph."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(__file__, advice="torch_cond", outcome="failure", expr=None, broken_compiles=1)


def flip_if_positive(x: torch.Tensor) -> torch.Tensor:
    if x.sum() > 0:  # why: here
        return x.flip(0)
    return x * 2


def flip_if_positive_cond(x: torch.Tensor) -> torch.Tensor:
    return torch.cond(x.sum() > 0, lambda t: t.flip(0), lambda t: t * 2, (x,))  # the advised edit


def run(variant: str) -> dict:
    fn = flip_if_positive if variant == "broken" else flip_if_positive_cond
    calls = [lambda: (torch.arange(4.0),), lambda: (-torch.arange(4.0),)]  # both sides
    return compile_and_compare(fn, calls, eager=flip_if_positive, fullgraph=True)
