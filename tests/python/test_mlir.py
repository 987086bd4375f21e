"""The MLIR lowering (replay-inspect mlir, lower-check, dynamo_replay.mlir): real jobs' aten
graphs lowered to linalg, verified by mlir-opt-19, run by MLIR's JIT and matched against the
stored outputs (and, at other dynamic sizes, against replay-run); the torch dialect form parses;
a custom op lowers through a library; what cannot be lowered is named with its user line.
About 10 s on a 2-core machine."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from dynamo_replay import mlir
from dynamo_replay.errors import GraphError
from dynamo_replay.graphs.stored import read_compile
from dynamo_replay.tools import inspect_executable

sys.path.insert(0, str(Path(__file__).parent))
import graph_jobs as jobs  # noqa: E402

MLIR_OPT = shutil.which("mlir-opt-19")
FILECHECK = shutil.which("FileCheck-19") or "/usr/lib/llvm-19/bin/FileCheck"

pytestmark = pytest.mark.skipif(MLIR_OPT is None, reason="MLIR 19 is not installed (make test installs it)")


# This file's job names -> graph_jobs.JOBS' (the GPT-2 training step without dropout: its masks would be inputs).
JOBS = {
    "mlp": "mlp",
    "gpt": "gpt",
    "convnet": "convnet",
    "custom_op": "custom_op",
    "hf_gpt2_train": "hf_gpt2_train_no_dropout",
    "bf16_convnet": "bf16_convnet",
}


@pytest.fixture(scope="module")
def stores(graph_stores) -> Mapping[str, Path]:
    return graph_stores.view(JOBS)


def inspect(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([inspect_executable(), *map(str, args)], capture_output=True, text=True, timeout=600)


def lower_and_filecheck(
    tmp_path: Path, store: Path, args: list[str], checks: str, mlir_opt_flags: tuple[str, ...] = ()
) -> None:
    """`replay-inspect mlir STORE ARGS`: the module mlir-opt-19 parses and FileCheck's CHECK lines match."""
    out = tmp_path / "module.mlir"
    done = inspect("mlir", store, *args, "-o", out)
    assert done.returncode == 0, done.stderr
    parsed = subprocess.run([MLIR_OPT, *mlir_opt_flags, out], capture_output=True, text=True)
    assert parsed.returncode == 0, parsed.stderr
    (tmp_path / "checks.txt").write_text(checks)
    done = subprocess.run([FILECHECK, tmp_path / "checks.txt", "--input-file", out], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("job", ["mlp", "gpt", "convnet", "hf_gpt2_train", "bf16_convnet"])
def test_every_graph_lowers_runs_and_matches(stores: dict[str, Path], job: str) -> None:
    report = mlir.lower_check(stores[job])
    failed = [
        (g["compile"], g["graph"], g["stage"], g["error"][:300], g["issues"][:3])
        for g in report["graphs"]
        if not g["matched"]
    ]
    assert not failed, failed
    assert report["summary"]["graphs"] == len(report["graphs"]) > 0
    for g in report["graphs"]:
        assert g["outputs"] and all(o["status"] in ("bitwise", "close") for o in g["outputs"])
    if job in ("convnet", "hf_gpt2_train"):
        assert any(g["graph"] == "aot_backward_graph" for g in report["graphs"])


def _dynamic_sizes(store: Path) -> dict[str, int]:
    """The symbols of the GPT job's dynamic compile (0/1), with their captured values."""
    return {s["symbol"]: s["hint"] for s in read_compile(store, "0/1").symbols if "hint" in s}


@pytest.mark.parametrize("scale_sizes", [(5, 7), (1, 3)])
def test_dynamic_gpt_matches_libtorch_at_other_sizes(stores: dict[str, Path], scale_sizes: tuple[int, int]) -> None:
    symbols = sorted(
        _dynamic_sizes(stores["gpt"]), key=lambda s: _dynamic_sizes(stores["gpt"])[s]
    )  # batch (3) first, then seq (12)
    assert len(symbols) == 2, symbols
    batch, seq = scale_sizes
    report = mlir.lower_check(stores["gpt"], sizes={symbols[0]: batch + 1, symbols[1]: seq}, seed=3)
    dynamic = [g for g in report["graphs"] if g["stage"] != "static"]
    assert [g["compile"] for g in dynamic] == ["0/1"]
    assert dynamic[0]["matched"], dynamic[0]


def test_sizes_outside_the_compiled_range_are_refused(stores: dict[str, Path]) -> None:
    symbols = _dynamic_sizes(stores["gpt"])
    batch = min(symbols, key=lambda s: symbols[s])
    report = mlir.lower_check(stores["gpt"], sizes={batch: 1})
    dynamic = [g for g in report["graphs"] if g["stage"] != "static"][0]
    assert not dynamic["matched"]
    assert f"{batch} = 1 is outside the compile's range [2," in dynamic["error"]


def test_linalg_module_verifies_and_carries_dynamic_dims_checks_and_user_lines(
    stores: dict[str, Path], tmp_path: Path
) -> None:
    lower_and_filecheck(
        tmp_path,
        stores["gpt"],
        ["0/1", "--graph", "forward"],
        "CHECK: func.func @inference(%arg0: i64, %arg1: i64, %arg2: tensor<?x?xi64>\n"
        "CHECK: tensor.dim %arg2\n"
        'CHECK: cf.assert {{.*}} "input arg{{[0-9_]+}} dim 0 must be {{s[0-9]+}}"\n'
        "CHECK: cf.assert {{.*}} \"{{s[0-9]+}} >= 2 (the compile's range is [2,\n"
        'CHECK: tensor.reshape {{.*}} -> tensor<?x?x4x8xf32> loc(fused<"view{{.*}}">["{{.*}}models.py":{{[0-9]+}}:0, "blocks.0.attn (models.CausalSelfAttention)"])\n'
        "CHECK: linalg.batch_matmul\n",
    )


def test_llvm_dialect_output_translates_to_llvm_ir(stores: dict[str, Path]) -> None:
    done = inspect("mlir", stores["mlp"], "0/0", "--dialect", "llvm")
    assert done.returncode == 0, done.stderr
    llvm_ir = subprocess.run(
        ["mlir-translate-19", "--mlir-to-llvmir"], input=done.stdout, capture_output=True, text=True
    )
    assert llvm_ir.returncode == 0, llvm_ir.stderr  # only the LLVM dialect is left
    assert "define { ptr, ptr, i64, [2 x i64], [2 x i64] } @inference(" in llvm_ir.stdout  # returns the [8, 4] memref


def test_torch_dialect_parses_with_symbolic_shapes(stores: dict[str, Path], tmp_path: Path) -> None:
    # The dynamic GPT: both sizes are symbols with the compile's range, the token ids are bound
    # to them, layer norm's operands come in schema order (eps filled from the call), and a view
    # that flattens batch and sequence is bound to their product, at the user's line and module.
    lower_and_filecheck(
        tmp_path,
        stores["gpt"],
        ["0/1", "--dialect", "torch"],
        (
            "CHECK: func.func @inference(%arg0: !torch.int, %arg1: !torch.int, %arg2: !torch.vtensor<[?,?],si64>\n"
            'CHECK: %[[B:s[0-9]+]] = "torch.symbolic_int"() {symbol_name = "[[B]]", min_val = 2 : i64\n'
            'CHECK: %[[T:s[0-9]+]] = "torch.symbolic_int"() {symbol_name = "[[T]]", min_val = 2 : i64\n'
            'CHECK: "torch.bind_symbolic_shape"(%arg2, %{{s[0-9]+}}, %{{s[0-9]+}}) {shape_expressions = affine_map<()[s0, s1] -> ({{s[01]}}, {{s[01]}})>}\n'
            'CHECK: %list = "torch.prim.ListConstruct"(%int32) : (!torch.int) -> !torch.list<int>\n'
            'CHECK: %float = "torch.constant.float"() {value = 1.0e-05 : f64}\n'
            'CHECK: "torch.aten.native_layer_norm"(%{{[a-z_0-9]+}}, %list, %arg{{[0-9]+}}, %arg{{[0-9]+}}, %float) : '
            "(!torch.vtensor<[?,?,32],f32>, !torch.list<int>, !torch.vtensor<[32],f32>, !torch.vtensor<[32],f32>, !torch.float)\n"
            'CHECK: %view = "torch.aten.view"({{.*}}) : (!torch.vtensor<[?,?,32],f32>, !torch.list<int>) -> !torch.vtensor<[?,32],f32> '
            'loc(fused<"view">["{{.*}}models.py":{{[0-9]+}}:0, "blocks.0.attn.qkv (torch.nn.modules.linear.Linear)"])\n'
            'CHECK-NEXT: "torch.bind_symbolic_shape"(%view, %{{s[0-9]+}}, %{{s[0-9]+}}) {shape_expressions = affine_map<()[s0, s1] -> (s0 * s1, 32)>}\n'
        ),
        ("--allow-unregistered-dialect",),
    )


def test_custom_op_is_reported_without_a_library_and_lowers_with_one(stores: dict[str, Path]) -> None:
    report = mlir.lower_check(stores["custom_op"])
    assert report["summary"]["matched"] == 0
    op = report["operators"]["dynrep_mlir::scale.default"]
    assert op["not_lowered"] == 1
    assert "dynrep_mlir::scale(Tensor x, float s) -> Tensor" in op["schema"]
    assert any("return scale(y, 2.5) + 1" in line for line in op["lines"]), op
    with_library = mlir.lower_check(stores["custom_op"], library=jobs.SCALE_LIBRARY)
    assert with_library["summary"]["matched"] == with_library["summary"]["graphs"] == 1, with_library
    text = mlir.lower(stores["custom_op"], "0/0", library=jobs.SCALE_LIBRARY)
    assert 'func.call @"dynrep_mlir::scale.default"' in text


def test_bad_inputs_get_clear_errors(stores: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(GraphError, match="has no backward graph"):
        mlir.lower(stores["mlp"], "0/0", graph="backward")
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @oops(")
    done = inspect("lower-check", stores["mlp"], "--library", bad)
    assert done.returncode == 2 and "is not a valid MLIR module" in done.stderr
    not_a_store = tmp_path / "x.dynrep"
    not_a_store.write_bytes(b"not a store at all")
    done = inspect("mlir", not_a_store, "0/0")
    assert done.returncode == 2 and "x.dynrep" in done.stderr
