"""dtype_change: the same function gets float32 and then float64 inputs (one caller builds its
tensors from NumPy), and each dtype compiles its own graph. The fix converts at the call site so
every call has one dtype."""

import torch

from . import compile_and_compare, expect

EXPECT = expect(
    __file__,
    advice="dtype_change",
    outcome="recompile",
    expr=None,
    broken_compiles=2,
    recompile={"source": "x.dtype", "expected": "float32", "seen": "float64"},
)


def gelu_residual(x: torch.Tensor) -> torch.Tensor:  # why: here
    return x + torch.nn.functional.gelu(x)


def run(variant: str) -> dict:
    from_numpy = torch.arange(4, dtype=torch.float64)  # NumPy's default float is double
    if variant == "fixed":
        from_numpy = from_numpy.float()  # the advised edit: one dtype at the call site
    return compile_and_compare(gelu_residual, [lambda: (torch.arange(4.0),), lambda: (from_numpy,)])
