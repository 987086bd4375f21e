"""A job for the capture tests: one function called with changing shapes, then a changed
Python float. Exits with the status given on its command line."""

import sys

import torch


def scale_and_shift(x: torch.Tensor, factor: float) -> torch.Tensor:
    return torch.relu(x * factor) + x.sum()


compiled = torch.compile(scale_and_shift, backend="eager")
for n in (4, 8, 16):
    compiled(torch.randn(n), 2.0)
compiled(torch.randn(16), 3.0)
print("ladder done")
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
