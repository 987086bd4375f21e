"""mark_unbacked: the batch dimension is marked dynamic, yet a batch of one recompiles ("2 <=
L['x'].size()[0]" fails): a backed size is specialized at 0 and 1. mark_unbacked makes the size
a symbol with no 0/1 specialization, so every batch size runs the one graph."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__,
    advice="mark_unbacked",
    outcome="recompile",
    expr=None,
    broken_compiles=2,
    recompile={"source": "x.size()[0]", "expected": "2 <=", "seen": "1"},
)

WEIGHT = torch.linspace(-1, 1, 12).reshape(4, 3)


def project(x: torch.Tensor) -> torch.Tensor:  # why: here
    return torch.relu(x @ WEIGHT) + 1


def _batch(rows: int, mark) -> tuple:
    x = torch.arange(rows * 4.0).reshape(rows, 4)
    mark(x, 0)
    return (x,)


def run(variant: str) -> dict:
    mark = torch._dynamo.mark_dynamic if variant == "broken" else torch._dynamo.decorators.mark_unbacked  # the edit
    return compile_and_compare(project, [lambda: _batch(8, mark), lambda: _batch(1, mark), lambda: _batch(5, mark)])
