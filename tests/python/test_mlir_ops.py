"""Operators the lowering reaches two ways: directly (transposed convolution, sort, scatter_reduce,
checked at the captured sizes and at two other dynamic sizes against replay-run), and through the
Core ATen decomposition capture stores (operators without a lowering of their own: the module
names the decomposition's ops, FileCheck-checked, and matches the job's outputs). About 30 s."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import dynamo_replay as dr
from dynamo_replay import mlir
from dynamo_replay.graphs.stored import read_compile

sys.path.insert(0, str(Path(__file__).parent))
from compiled_capture import capture_compiled  # noqa: E402
from test_mlir import FILECHECK, MLIR_OPT  # noqa: E402

pytestmark = pytest.mark.skipif(MLIR_OPT is None, reason="MLIR 19 is not installed (make test installs it)")

_TCONV = torch.nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1)


def _sort(x: torch.Tensor) -> torch.Tensor:
    return torch.sort(x, dim=-1, descending=True)[0] + torch.sort(x, dim=0, stable=True)[1]


def _scatter_reduce(x: torch.Tensor, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    return (
        x.scatter_reduce(1, index, src, reduce="amax", include_self=False)
        + x.scatter_reduce(1, index, src, reduce="mean")
        + x.scatter_reduce(1, index, src, reduce="prod")
    )


def _sort_input(rows: int, cols: int) -> torch.Tensor:
    x = torch.randn(rows, cols)
    x[1, 2] = float("nan")  # NaN sorts last ascending, first descending
    x[2, 3] = x[2, 4]  # ties keep their order (stable)
    return x


# name: (function, inputs at the captured sizes). Each is compiled with dynamic=True.
DIRECT: dict[str, tuple[Callable[..., Any], Callable[[], tuple]]] = {
    "conv_transpose2d": (lambda x: _TCONV(x), lambda: (torch.randn(2, 3, 5, 6),)),
    "sort": (_sort, lambda: (_sort_input(5, 7),)),
    "scatter_reduce": (_scatter_reduce, lambda: (torch.randn(4, 6), torch.randint(0, 6, (4, 5)), torch.randn(4, 5))),
    # a uint8 result: MLIR spells it i8 like int8; read back as unsigned (values over 127)
    "uint8_result": (lambda x: (x * 3 + 200).to(torch.uint8) // 2, lambda: (torch.arange(12).reshape(3, 4),)),
}

# name: (function, an op the decomposed module must hold, its FileCheck lines).
THROUGH_CORE_ATEN: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], str]] = {
    "hardswish": (
        torch.nn.functional.hardswish,
        "CHECK: func.func @inference\nCHECK: arith.addf\nCHECK: arith.maximumf\nCHECK: arith.minimumf\nCHECK: arith.mulf\n",
    ),
    "logit": (
        lambda x: torch.logit(x, eps=1e-3),
        "CHECK: func.func @inference\nCHECK: arith.cmpf olt\nCHECK: arith.cmpf ogt\nCHECK: math.log\n",
    ),
    "diag_embed": (
        torch.diag_embed,
        "CHECK: func.func @inference\nCHECK: tensor.reshape\nCHECK: linalg.index\nCHECK: arith.cmpi eq\n",
    ),
}


@pytest.mark.parametrize("name", list(DIRECT))
def test_operator_matches_at_captured_and_other_dynamic_sizes(name: str, tmp_path: Path) -> None:
    fn, inputs = DIRECT[name]
    store = capture_compiled(tmp_path / "op.dynrep", fn, inputs(), dynamic=True)
    report = mlir.lower_check(store)
    assert report["graphs"] and all(g["matched"] for g in report["graphs"]), report["graphs"]
    stored = read_compile(store, "0/0")
    _, ir = stored.ir("forward")
    sizes = {
        d
        for n in ir["nodes"]
        if n["op"] == "placeholder"
        for d in (n["outputs"][0].get("shape") or [])
        if isinstance(d, str)
    }
    hints = {s["symbol"]: s["hint"] for s in stored.symbols if s["symbol"] in sizes and isinstance(s.get("hint"), int)}
    assert hints, "captured with dynamic=True: the input sizes are symbols"
    for grow in (1, 3):  # two other sizes: every symbol larger by `grow`
        report = mlir.lower_check(store, sizes={s: v + grow for s, v in hints.items()}, seed=grow)
        dynamic = [g for g in report["graphs"] if g["stage"] != "static"]
        assert dynamic and all(g["matched"] for g in dynamic), (grow, report["graphs"])


@pytest.mark.parametrize("name", list(THROUGH_CORE_ATEN))
def test_operator_without_a_lowering_goes_through_core_aten(name: str, tmp_path: Path) -> None:
    fn, checks = THROUGH_CORE_ATEN[name]
    store = capture_compiled(tmp_path / "op.dynrep", fn, (torch.rand(4, 4),), dynamic=False)
    report = mlir.lower_check(store)
    (graph,) = report["graphs"]
    assert graph["matched"] and graph["opset"] == "core_aten", graph
    assert "no lowering for aten::" in graph["opset_reason"]
    out = tmp_path / "module.mlir"
    done = subprocess.run([mlir._tool(), "mlir", str(store), "0/0", "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0 and "lowered its Core ATen decomposition" in done.stderr, done.stderr
    assert subprocess.run([MLIR_OPT, str(out)], capture_output=True).returncode == 0
    (tmp_path / "checks.txt").write_text(checks)
    checked = subprocess.run(
        [FILECHECK, str(tmp_path / "checks.txt"), "--input-file", str(out)], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


def test_a_store_without_core_aten_graphs_names_why(tmp_path: Path) -> None:
    torch._dynamo.reset()
    store = tmp_path / "plain.dynrep"
    with dr.capture(store, precompile=False, core_aten=False), torch.no_grad():
        torch.compile(torch.nn.functional.hardswish, backend="aot_eager")(torch.rand(4, 4))
    (graph,) = mlir.lower_check(store)["graphs"]
    assert graph["stage"] == "not lowered" and graph["opset"] == "aten"
    assert "captured without one" in graph["opset_reason"]
    assert [i["op"] for i in graph["issues"]] == ["aten::hardswish.default"]
