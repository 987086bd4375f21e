"""torch_check: a length read from a tensor is clamped to the sequence length ("Could not guard
on data-dependent expression u0 > 8"). The lengths never exceed the sequence, so the clamp never
fires: torch._check(length <= x.size(0)) says so and the branch folds away."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__,
    advice="torch_check",
    outcome="failure",
    expr="u0 > 8",
    broken_compiles=1,
    symbols={"u0": "item|_local_scalar_dense"},
)


def prefix_mean(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    length = lengths.max().item()  # why: u0
    if length > x.size(0):  # why: here
        length = x.size(0)
    return x[:length].mean(0)


def prefix_mean_checked(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    length = lengths.max().item()
    torch._check(length <= x.size(0))  # the advised edit: the clamp never fires
    if length > x.size(0):
        length = x.size(0)
    return x[:length].mean(0)


def run(variant: str) -> dict:
    fn = prefix_mean if variant == "broken" else prefix_mean_checked
    calls = [
        lambda: (torch.arange(32.0).reshape(8, 4), torch.tensor([3, 5])),
        lambda: (torch.arange(32.0).reshape(8, 4), torch.tensor([2, 7])),
    ]
    return compile_and_compare(fn, calls, eager=prefix_mean, fullgraph=True)
