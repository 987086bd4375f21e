"""torch_check: argument validation on a count read from a tensor ("Could not guard on
data-dependent expression u0 < 0"). A count is never negative: torch._check(count >= 0) says so and
the validation folds away. (PyTorch 2.13 deprecates torch._check_is_size for this: a FutureWarning
that says to use _check(i >= 0).)"""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__,
    advice="torch_check",
    outcome="failure",
    expr="u0 < 0",
    broken_compiles=1,
    symbols={"u0": "item|_local_scalar_dense"},
)


def first_tokens(tokens: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    n = count.sum().item()  # why: u0
    if n < 0:  # why: here
        raise ValueError("negative token count")
    return tokens.new_ones(n) * tokens.sum()


def first_tokens_checked(tokens: torch.Tensor, count: torch.Tensor) -> torch.Tensor:
    n = count.sum().item()
    torch._check(n >= 0)  # the advised edit: a count is never negative
    if n < 0:
        raise ValueError("negative token count")
    return tokens.new_ones(n) * tokens.sum()


def run(variant: str) -> dict:
    fn = first_tokens if variant == "broken" else first_tokens_checked
    calls = [lambda: (torch.arange(6.0), torch.tensor([1, 2])), lambda: (torch.arange(6.0), torch.tensor([4, 0]))]
    return compile_and_compare(fn, calls, eager=first_tokens, fullgraph=True)
