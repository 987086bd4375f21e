"""mark_dynamic: the sequence grows between calls (generation, variable-length batches): the
first compile specializes on the length and the next length recompiles before the size becomes
dynamic. mark_dynamic (or dynamic=True) makes the first compile dynamic in that size."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__,
    advice="mark_dynamic",
    outcome="recompile",
    expr=None,
    broken_compiles=2,
    recompile={"source": "tokens.size()[0]", "expected": "8", "seen": "16"},
)


def causal_scores(tokens: torch.Tensor) -> torch.Tensor:  # why: here
    scores = tokens @ tokens.transpose(0, 1)
    return scores.masked_fill(torch.ones_like(scores, dtype=torch.bool).triu(1), float("-inf")).softmax(-1)


def _sequence(length: int, variant: str) -> tuple:
    tokens = torch.linspace(-1, 1, length * 3).reshape(length, 3)
    if variant == "fixed":
        torch._dynamo.mark_dynamic(tokens, 0)  # the advised edit
    return (tokens,)


def run(variant: str) -> dict:
    return compile_and_compare(causal_scores, [lambda n=n: _sequence(n, variant) for n in (8, 16, 32)])
