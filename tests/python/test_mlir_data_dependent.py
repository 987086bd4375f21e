"""Operators whose result size is counted at run time (nonzero, masked_select, indexing with a
boolean mask): compiled with aot_eager, static and dynamic=True, captured, and every graph lowered,
JIT-run and matched by lower_check. Dynamo puts nonzero, masked_select and x[mask] in the graph
only with `capture_dynamic_output_shape_ops` (else it breaks the graph there); index_put with a
mask, and x[mask] = scalar (a masked_fill), have a static result and need nothing."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import dynamo_replay as dr
from dynamo_replay import mlir

sys.path.insert(0, str(Path(__file__).parent))
from compiled_capture import capture_compiled  # noqa: E402


def _set_values(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[m] = x[m] * 2 + 1  # values of [count] rows
    return y


def _set_given(x: torch.Tensor, m: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[m] = v  # as many rows as the mask holds, checked at run time
    return y


def _set_rows(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    y = x.clone()
    y[m] = torch.arange(x.shape[1], dtype=x.dtype)  # one row broadcast to every selected row
    return y


def _follow_on(x: torch.Tensor) -> torch.Tensor:
    pos, neg = x[x > 0], x[x < 0]
    return torch.cat([pos * 2, neg]).sum() + pos.shape[0]


def _nonzero_rows(x: torch.Tensor) -> torch.Tensor:
    return x[torch.nonzero(x[:, 0] > 0).squeeze(1)] * 3  # the count as a gather's size


def _mixed(n: int, zero_every: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    x = torch.randn(n) + 3
    x[::zero_every] = 0
    return x.to(dtype)


ROWS_MASK = torch.tensor([True, False, True, True, False])

# name: (function, inputs). Each is compiled static and with dynamic=True.
CASES: dict[str, tuple[Callable[..., Any], Callable[[], tuple]]] = {
    "nonzero_1d_float": (torch.nonzero, lambda: (_mixed(7, 3),)),
    "nonzero_2d_float": (torch.nonzero, lambda: (_mixed(20, 3).reshape(4, 5),)),
    "nonzero_2d_int": (torch.nonzero, lambda: (_mixed(12, 2, torch.int64).reshape(3, 4),)),
    "nonzero_3d_bool": (torch.nonzero, lambda: (torch.randn(2, 3, 4) > 0,)),
    "nonzero_nan_is_nonzero": (torch.nonzero, lambda: (torch.tensor([0.0, float("nan"), 0.0, -1.0]),)),
    "nonzero_all_zero": (torch.nonzero, lambda: (torch.zeros(3, 4),)),
    "nonzero_static": (
        lambda x: torch.nonzero_static(x, size=5, fill_value=-7),  # 6 nonzero: the first 5
        lambda: (_mixed(12, 2).reshape(3, 4),),
    ),
    "argwhere": (torch.argwhere, lambda: (_mixed(12, 4).reshape(3, 4),)),
    "where_one_argument": (lambda x: torch.where(x)[1] * 2, lambda: (_mixed(12, 4).reshape(3, 4),)),
    "nonzero_then_gather": (_nonzero_rows, lambda: (torch.randn(6, 3),)),
    "mask_2d": (lambda x: x[x > 0], lambda: (torch.randn(4, 5),)),
    "mask_1d_rows": (lambda x, m: x[m], lambda: (torch.randn(5, 3), ROWS_MASK)),
    "mask_after_slice": (lambda x, m: x[:, m] + 1, lambda: (torch.randn(3, 5, 2), ROWS_MASK)),
    "mask_all_false": (lambda x: x[x > 10], lambda: (torch.randn(4, 5),)),
    "set_scalar": (lambda x: x.masked_fill(x > 0, 0), lambda: (torch.randn(4, 5),)),
    "set_values": (_set_values, lambda: (torch.randn(5, 3), ROWS_MASK)),
    "set_values_input": (_set_given, lambda: (torch.randn(5, 3), ROWS_MASK, torch.randn(3, 3))),
    "set_rows": (_set_rows, lambda: (torch.randn(5, 3), ROWS_MASK)),
    "index_put_accumulate": (
        lambda x, m: x.index_put((m,), torch.tensor(1.5), accumulate=True),
        lambda: (torch.randn(5, 3), ROWS_MASK),
    ),
    "index_put_all_false": (
        lambda x, m: x.index_put((m,), torch.tensor(1.5), accumulate=True),
        lambda: (torch.randn(5, 3), torch.zeros(5, dtype=torch.bool)),
    ),
    "masked_select": (lambda x: torch.masked_select(x, x > 0), lambda: (torch.randn(4, 5),)),
    "masked_select_broadcast": (
        lambda x, m: torch.masked_select(x, m[:, None]),
        lambda: (torch.randn(5, 3), ROWS_MASK),
    ),
    "follow_on_sum_and_cat": (_follow_on, lambda: (torch.randn(4, 5),)),
}


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("name", list(CASES))
def test_data_dependent_size_matches(name: str, dynamic: bool, tmp_path: Path) -> None:
    fn, inputs = CASES[name]
    torch.manual_seed(0)
    store = capture_compiled(tmp_path / "op.dynrep", fn, inputs(), dynamic, fullgraph=True, sizes_from_data=True)
    report = mlir.lower_check(store)
    assert report["graphs"] and all(g["matched"] for g in report["graphs"]), report["graphs"]


def _train_step(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = x * w
    return (y[y > 0] ** 2).sum() + torch.masked_select(y, y < -0.5).sum()


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_gradient_through_a_mask_matches(dynamic: bool, tmp_path: Path) -> None:
    """The backward graph takes the counts as symbolic inputs and scatters through the masks
    (index_put with accumulate, masked_scatter); x[mask] there is asserted to hold that count."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    x, w = torch.randn(4, 5), torch.randn(4, 5, requires_grad=True)
    store = tmp_path / "train.dynrep"
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True), dr.capture(store, precompile=False):
        torch.compile(_train_step, backend="aot_eager", dynamic=dynamic, fullgraph=True)(x, w).backward()
    report = mlir.lower_check(store)
    assert {g["graph"] for g in report["graphs"]} == {"aot_forward_graph", "aot_backward_graph"}
    assert all(g["matched"] for g in report["graphs"]), report["graphs"]
