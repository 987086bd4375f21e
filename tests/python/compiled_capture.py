"""One function compiled with aot_eager and captured into its own store, as the MLIR tests
capture their cases: a fresh Dynamo, a fixed seed, and the backward run when the output needs a
gradient (so the store holds the forward and the backward graph)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import dynamo_replay as dr


def capture_compiled(
    path: Path,
    fn: Callable[..., Any],
    args: tuple,
    dynamic: bool,
    *,
    fullgraph: bool = False,
    sizes_from_data: bool = False,
) -> Path:
    """`fn(*args)` compiled (dynamic=True or static) and captured into `path`. `sizes_from_data`
    lets Dynamo keep ops whose result size is data-dependent (nonzero, x[mask]) in the graph."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    config = (
        torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True, capture_scalar_outputs=True)
        if sizes_from_data
        else contextlib.nullcontext()
    )
    with config, dr.capture(path, precompile=False):
        out = torch.compile(fn, backend="aot_eager", dynamic=dynamic, fullgraph=fullgraph)(*args)
        if isinstance(out, torch.Tensor) and out.requires_grad:
            out.sum().backward()
    return path
