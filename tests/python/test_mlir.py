"""The MLIR lowering (replay-inspect mlir, lower-check, dynamo_replay.mlir): real jobs' aten
graphs lowered to linalg, verified by mlir-opt-19, run by MLIR's JIT and matched against the
stored outputs (and, at other dynamic sizes, against replay-run); the torch dialect form parses;
a custom op lowers through a library; what cannot be lowered is named with its user line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import dynamo_replay as dr
from dynamo_replay import mlir
from dynamo_replay.errors import GraphError
from dynamo_replay.graphs.stored import read_compile
from dynamo_replay.tools import inspect_executable

sys.path.insert(0, str(Path(__file__).parent))
from models import MLP, ConvNet, TinyGPT  # noqa: E402
from test_graph_run import _convnet_training_step, _gpt, _mlp  # noqa: E402

MLIR_OPT = shutil.which("mlir-opt-19")
FILECHECK = shutil.which("FileCheck-19") or "/usr/lib/llvm-19/bin/FileCheck"
LIBRARY = Path(__file__).parent / "mlir" / "scale_ops.mlir"

pytestmark = pytest.mark.skipif(MLIR_OPT is None, reason="MLIR 19 is not installed (make test installs it)")


@torch.library.custom_op("dynrep_mlir::scale", mutates_args=())
def scale(x: torch.Tensor, s: float) -> torch.Tensor:
    return x * s


@scale.register_fake
def _(x: torch.Tensor, s: float) -> torch.Tensor:
    return torch.empty_like(x)


def _custom_op() -> None:
    def step(x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)
        return scale(y, 2.5) + 1  # the custom op's user line

    torch.compile(step, backend="aot_eager")(torch.randn(6, 5))


def _hf_gpt2_training_step() -> None:
    """transformers' GPT-2 training step without dropout (whose draws MLIR cannot reproduce)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=500, n_positions=64,
                        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    config._attn_implementation = "eager"  # sdpa's CPU backward kernel is not lowered yet
    compiled = torch.compile(GPT2LMHeadModel(config).train(), backend="aot_eager")
    ids = torch.randint(0, 500, (2, 8))
    compiled(ids, labels=ids).loss.backward()


JOBS = {"mlp": _mlp, "gpt": _gpt, "convnet": _convnet_training_step, "custom_op": _custom_op,
        "hf_gpt2_train": _hf_gpt2_training_step}


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name, job in JOBS.items():
        path = tmp_path_factory.mktemp(name) / "job.dynrep"
        torch._dynamo.reset()
        with dr.capture(path, precompile=False):
            job()
        out[name] = path
    return out


def inspect(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([inspect_executable(), *map(str, args)], capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("job", ["mlp", "gpt", "convnet", "hf_gpt2_train"])
def test_every_graph_lowers_runs_and_matches(stores: dict[str, Path], job: str) -> None:
    report = mlir.lower_check(stores[job])
    failed = [(g["compile"], g["graph"], g["stage"], g["error"][:300], g["issues"][:3]) for g in report["graphs"] if not g["matched"]]
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
    symbols = sorted(_dynamic_sizes(stores["gpt"]), key=lambda s: _dynamic_sizes(stores["gpt"])[s])  # batch (3) first, then seq (12)
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


def test_linalg_module_verifies_and_carries_dynamic_dims_checks_and_user_lines(stores: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "gpt.mlir"
    done = inspect("mlir", stores["gpt"], "0/1", "--graph", "forward", "-o", out)
    assert done.returncode == 0, done.stderr
    assert subprocess.run([MLIR_OPT, out], capture_output=True).returncode == 0
    checks = tmp_path / "checks.txt"
    checks.write_text("CHECK: func.func @inference(%arg0: i64, %arg1: i64, %arg2: tensor<?x?xi64>\n"
                      "CHECK: tensor.dim %arg2\n"
                      "CHECK: cf.assert {{.*}} \"input arg{{[0-9_]+}} dim 0 must be {{s[0-9]+}}\"\n"
                      "CHECK: cf.assert {{.*}} \"{{s[0-9]+}} >= 2 (the compile's range is [2,\n"
                      "CHECK: tensor.reshape {{.*}} -> tensor<?x?x4x8xf32> loc(fused<\"view{{.*}}\">[\"{{.*}}models.py\":{{[0-9]+}}:0, \"blocks.0.attn (models.CausalSelfAttention)\"])\n"
                      "CHECK: linalg.batch_matmul\n")
    done = subprocess.run([FILECHECK, checks, "--input-file", out], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_llvm_dialect_output(stores: dict[str, Path]) -> None:
    done = inspect("mlir", stores["mlp"], "0/0", "--dialect", "llvm")
    assert done.returncode == 0, done.stderr
    assert "llvm.func @inference" in done.stdout and "linalg." not in done.stdout


def test_torch_dialect_parses_with_symbolic_shapes(stores: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "gpt.torch.mlir"
    done = inspect("mlir", stores["gpt"], "0/1", "--dialect", "torch", "-o", out)
    assert done.returncode == 0, done.stderr
    assert subprocess.run([MLIR_OPT, "--allow-unregistered-dialect", out], capture_output=True).returncode == 0
    text = out.read_text()
    assert "!torch.vtensor<[?,?],si64>" in text
    assert "torch.symbolic_int" in text and "torch.bind_symbolic_shape" in text
    assert "torch.aten.native_layer_norm" in text


def test_custom_op_is_reported_without_a_library_and_lowers_with_one(stores: dict[str, Path]) -> None:
    report = mlir.lower_check(stores["custom_op"])
    assert report["summary"]["matched"] == 0
    op = report["operators"]["dynrep_mlir::scale.default"]
    assert op["not_lowered"] == 1
    assert "dynrep_mlir::scale(Tensor x, float s) -> Tensor" in op["schema"]
    assert any("return scale(y, 2.5) + 1" in line for line in op["lines"]), op
    with_library = mlir.lower_check(stores["custom_op"], library=LIBRARY)
    assert with_library["summary"]["matched"] == with_library["summary"]["graphs"] == 1, with_library
    text = mlir.lower(stores["custom_op"], "0/0", library=LIBRARY)
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
