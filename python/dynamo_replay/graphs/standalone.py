"""The pieces of running a stored graph that repro scripts carry with them.

They need torch alone: repro.py copies their source into every script it writes, and the
rebuild and load_graph's check use them here, so a script and the library behave the same.
"""

import torch


def register_constants(module, constants):
    """Puts each constant tensor on `module` as a buffer under its dotted name (`sub._tensor_constant0`)."""
    for qualified, value in constants.items():
        *owners, leaf = qualified.split(".")
        holder = module
        for owner in owners:
            if not hasattr(holder, owner):
                holder.add_module(owner, torch.nn.Module())
            holder = getattr(holder, owner)
        holder.register_buffer(leaf, value)


def differences(outputs, expected, rtol, atol):
    """One line per output that differs from its stored value; `expected` is (position, value)
    pairs. Empty when all match (bitwise with rtol=atol=0)."""
    problems = []
    for position, want in expected:
        got = outputs[position]
        if isinstance(want, torch.Tensor):
            if not isinstance(got, torch.Tensor) or got.shape != want.shape or got.dtype != want.dtype:
                shape = f"{got.dtype} {list(got.shape)}" if isinstance(got, torch.Tensor) else repr(got)
                problems.append(f"output {position}: got {shape}, stored {want.dtype} {list(want.shape)}")
            elif not torch.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
                worst = (got.double() - want.double()).abs().max().item() if got.numel() else 0.0
                problems.append(f"output {position}: values differ (max abs difference {worst:.3g})")
        elif got != want:
            problems.append(f"output {position}: got {got!r}, stored {want!r}")
    return problems
