"""data_dependent_loop: a Python loop runs as many times as a count read from the data ("Could not
extract specialized integer from data-dependent expression u0"): one graph cannot hold a loop of
unknown length. The fix loops to a fixed upper bound (the buffer's length) and masks the steps
past the count."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__,
    advice="data_dependent_loop",
    outcome="failure",
    expr="u0",
    broken_compiles=1,
    symbols={"u0": "item|_local_scalar_dense"},
)


def decayed_sum(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    steps = valid.sum().item()  # why: u0
    total = x.new_zeros(x.shape[1:])
    for i in range(steps):  # why: here
        total = total * 0.5 + x[i]
    return total


def decayed_sum_bounded(x: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    steps = valid.sum()  # stays a tensor
    total = x.new_zeros(x.shape[1:])
    for i in range(x.size(0)):  # the advised edit: a fixed bound, steps past the count masked
        total = torch.where(i < steps, total * 0.5 + x[i], total)
    return total


def run(variant: str) -> dict:
    fn = decayed_sum if variant == "broken" else decayed_sum_bounded
    calls = [
        lambda: (torch.arange(12.0).reshape(6, 2), torch.tensor([1, 1, 1, 0, 0, 0])),
        lambda: (torch.arange(12.0).reshape(6, 2), torch.tensor([1, 1, 1, 1, 1, 0])),
    ]
    return compile_and_compare(fn, calls, eager=decayed_sum, fullgraph=True)
