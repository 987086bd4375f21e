"""float_constant: a Python float argument changes on each call (a learning-rate or temperature
schedule): the first compile specializes on its value, and the next value recompiles. Passed as
a tensor, the value is an input of the one graph."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__,
    advice="float_constant",
    outcome="recompile",
    expr=None,
    broken_compiles=2,
    recompile={"source": "temperature", "expected": "0.5", "seen": "0.7"},
)


def softmax_with_temperature(logits: torch.Tensor, temperature) -> torch.Tensor:  # why: here
    return torch.softmax(logits / temperature, dim=-1)


def run(variant: str) -> dict:
    as_arg = float if variant == "broken" else torch.tensor  # the advised edit: a tensor, not a float
    logits = torch.tensor([1.0, 2.0, 0.5, -1.0])
    calls = [lambda t=t: (logits, as_arg(t)) for t in (0.5, 0.7, 0.9, 1.1)]
    return compile_and_compare(softmax_with_temperature, calls)
