"""IREE compiles and runs the lowered graphs: lower-check --runtime iree matches every graph the
JIT matches (or names why IREE refuses it) over a table of graph kinds, static and dynamic;
replay-inspect mlir --target iree writes a .vmfb and a manifest that a program without PyTorch
calls at a size the capture never saw; without IREE both commands say how to get it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import dynamo_replay as dr
from dynamo_replay import mlir
from dynamo_replay.errors import GraphError

SCRIPTS = sysconfig.get_path("scripts")
HAVE_IREE = all(shutil.which(t, path=SCRIPTS) or shutil.which(t) for t in ("iree-compile", "iree-run-module"))
pytestmark = [
    pytest.mark.skipif(shutil.which("mlir-opt-19") is None, reason="MLIR 19 is not installed (make test installs it)"),
    pytest.mark.skipif(not HAVE_IREE, reason="IREE is not installed (make test installs it)"),
]
INSTALL = "pip install iree-base-compiler==3.13.0 iree-base-runtime==3.13.0"


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _conv_bn() -> torch.nn.Module:
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU()).eval()
    return net.requires_grad_(False)  # an inference graph


# name: (function, inputs). Each is compiled once static and once with dynamic=True, one frame each.
CASES: dict[str, tuple[Callable[..., Any], Callable[[], tuple]]] = {
    "linear_gelu": (lambda x, w: F.gelu(x @ w.t()) + 1, lambda: (torch.randn(6, 8), torch.randn(5, 8))),
    "layer_norm_softmax": (
        lambda x: F.layer_norm(x, (8,)).softmax(-1),
        lambda: (torch.randn(4, 8),),
    ),
    "float64_math": (lambda x: torch.exp(x).log1p() * x.tanh(), lambda: (torch.randn(4, 5, dtype=torch.float64),)),
    "float16": (lambda x: (x * 2 + 1).sigmoid(), lambda: (torch.randn(4, 6, dtype=torch.float16),)),
    "bfloat16": (lambda x: x.float().relu().to(torch.bfloat16) * 3, lambda: (torch.randn(5, 3, dtype=torch.bfloat16),)),
    "int64_bool_where": (
        lambda x, m: torch.where(m, x * 3, x // 2),
        lambda: (torch.randint(-9, 9, (4, 5)), torch.rand(4, 5) > 0.5),
    ),
    "uint8": (lambda x: (x + 7) // 3, lambda: (torch.randint(0, 250, (3, 4), dtype=torch.uint8),)),
    "reduction_keepdim": (lambda x: x.sum(1, keepdim=True) - x.amax(0), lambda: (torch.randn(5, 7),)),
    "causal_attention": (_attention, lambda: tuple(torch.randn(1, 2, 6, 4) for _ in range(3))),
    "conv_batch_norm": (_conv_bn(), lambda: (torch.randn(2, 3, 8, 8),)),
    "embedding_gather": (
        lambda idx, table: F.embedding(idx, table).mean(1),
        lambda: (torch.tensor([[0, 3, 1], [2, 2, 4]]), torch.randn(5, 6)),
    ),
    "size_arithmetic": (
        lambda x: x.reshape(x.shape[0] * x.shape[1] // 2, 2) * (x.shape[1] % 3 + 1),
        lambda: (torch.randn(3, 4),),
    ),
    "returns_a_size": (lambda x: (x.sin(), x.shape[0] * 2), lambda: (torch.randn(3, 4),)),
    "dropout_training": (lambda x: F.dropout(x, 0.5, training=True) + 1, lambda: (torch.randn(4, 6),)),
    "training_forward_backward": (
        lambda x, w: (x @ w).tanh().sum(),
        lambda: (torch.randn(4, 3, requires_grad=True), torch.randn(3, 2, requires_grad=True)),
    ),
    "no_inputs": (lambda: torch.linspace(-2.5, 2.5, 7) * 2, lambda: ()),
}


def _capture(path: Path, dynamic: bool) -> Path:
    """Every case compiled (aot_eager) and called once, in order, into one store: one frame each."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    with dr.capture(path, precompile=False):
        for fn, inputs in CASES.values():
            out = torch.compile(fn, backend="aot_eager", dynamic=dynamic)(*inputs())
            if isinstance(out, torch.Tensor) and out.requires_grad:
                out.sum().backward()
    return path


@pytest.fixture(scope="module", params=["static", "dynamic"])
def reports(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict, dict]:
    """(mode, lower-check through the JIT, lower-check through IREE) of one store of every case."""
    store = _capture(tmp_path_factory.mktemp(request.param) / "cases.dynrep", dynamic=request.param == "dynamic")
    return request.param, mlir.lower_check(store), mlir.lower_check(store, runtime="iree")


def _graphs_of(report: dict, case: str) -> list[dict]:
    frame = list(CASES).index(case)
    return [g for g in report["graphs"] if g["compile"].split("/")[0] == str(frame)]


@pytest.mark.parametrize("case", list(CASES))
def test_iree_matches_what_the_jit_matches(case: str, reports: tuple[str, dict, dict]) -> None:
    mode, jit, iree = reports
    assert len({g["compile"].split("/")[0] for g in jit["graphs"]}) == len(CASES), "one frame per case"
    assert iree["summary"]["runtime"] == "iree"
    through_jit, through_iree = _graphs_of(jit, case), _graphs_of(iree, case)
    assert through_jit and len(through_iree) == len(through_jit), (mode, through_iree)
    for j, i in zip(through_jit, through_iree, strict=True):
        assert j["matched"], (mode, j)
        assert i["runtime"] == "iree" and i["matched"], (mode, i)
        assert i["seconds"]["jit"] > 0  # iree-compile ran


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()


# A program that knows nothing of PyTorch: the manifest says what each input is, IREE's runtime
# calls the module; inputs come from the .npz the test writes (by name), sizes from argv.
CALLER = """
import json, sys
import numpy as np
import iree.runtime as ireert
vmfb, arrays, batch, out = sys.argv[1], np.load(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
manifest = json.load(open(vmfb + ".json"))
args = [batch if i["kind"] == "size" else arrays[i["name"]] for i in manifest["inputs"]]
module = ireert.load_vm_flatbuffer_file(vmfb, driver="local-task")
result = getattr(module, manifest["function"])(*args)
result = result[0] if isinstance(result, (tuple, list)) else result
np.save(out, np.asarray(result.to_host()))
assert "torch" not in sys.modules
"""


def test_target_iree_writes_a_module_a_program_without_pytorch_calls(tmp_path: Path) -> None:
    model = _mlp()
    torch._dynamo.reset()
    with dr.capture(tmp_path / "mlp.dynrep", precompile=False), torch.no_grad():
        torch.compile(model, backend="aot_eager", dynamic=True)(torch.randn(3, 16))
    vmfb = tmp_path / "mlp.vmfb"
    manifest = mlir.compile_iree(tmp_path / "mlp.dynrep", "0/0", vmfb, graph="inference")
    assert vmfb.stat().st_size > 0 and manifest["function"] == "inference"
    assert manifest["checked"].startswith("lower-check ran this module through IREE and it matched")
    kinds = [(i["kind"], i.get("role")) for i in manifest["inputs"]]
    assert ("size", "symbol") in kinds and kinds.count(("tensor", "parameter")) == 4, kinds
    assert [o["type"] for o in manifest["outputs"]] == ["tensor<?x4xf32>"]
    # At a batch size the capture never saw: the module is dynamic in it.
    x = torch.randn(7, 16)
    params = dict(zip(["0.weight", "0.bias", "2.weight", "2.bias"], model.parameters(), strict=True))
    named = {}
    for i in manifest["inputs"]:
        if i["kind"] != "tensor":
            continue
        if i["role"] == "parameter":
            named[i["name"]] = next(p for k, p in params.items() if i["qualified_name"].endswith(k)).detach().numpy()
        else:
            named[i["name"]] = x.numpy()
    (tmp_path / "caller.py").write_text(CALLER)
    import numpy as np

    np.savez(tmp_path / "inputs.npz", **named)
    done = subprocess.run(
        [
            sys.executable,
            str(tmp_path / "caller.py"),
            str(vmfb),
            str(tmp_path / "inputs.npz"),
            "7",
            str(tmp_path / "o.npy"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = torch.from_numpy(np.load(tmp_path / "o.npy"))
    with torch.no_grad():
        torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-5)


WRONG_RELU = """func.func @"aten::relu.default"(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  return %x : tensor<?x?xf32>
}
"""


def test_a_module_iree_computes_differently_is_not_written(tmp_path: Path) -> None:
    store = tmp_path / "relu.dynrep"
    torch._dynamo.reset()
    with dr.capture(store, precompile=False):
        torch.compile(lambda x: torch.relu(x) * 2, backend="aot_eager")(torch.randn(3, 4))
    (tmp_path / "wrong.mlir").write_text(WRONG_RELU)
    out = tmp_path / "relu.vmfb"
    with pytest.raises(GraphError, match="computes a different number"):
        mlir.compile_iree(store, "0/0", out, graph="inference", library=tmp_path / "wrong.mlir")
    assert not out.exists() and not Path(str(out) + ".json").exists()


def test_usage_errors_of_target_iree(tmp_path: Path) -> None:
    store = tmp_path / "relu.dynrep"
    torch._dynamo.reset()
    with dr.capture(store, precompile=False):
        torch.compile(lambda x: torch.relu(x) + 1, backend="aot_eager")(torch.randn(3, 4))
    base = [mlir._tool(), "mlir", str(store), "0/0", "--graph", "inference", "--target", "iree"]
    env = mlir._environment()
    no_output = subprocess.run(base, capture_output=True, text=True, env=env)
    assert no_output.returncode == 2 and "give -o FILE.vmfb" in no_output.stderr
    torch_dialect = subprocess.run(
        [*base, "--dialect", "torch", "-o", str(tmp_path / "x.vmfb")], capture_output=True, text=True, env=env
    )
    assert torch_dialect.returncode == 2 and "IREE compiles the linalg module" in torch_dialect.stderr


def test_without_iree_both_commands_say_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "relu.dynrep"
    torch._dynamo.reset()
    with dr.capture(store, precompile=False):
        torch.compile(lambda x: torch.relu(x) - 1, backend="aot_eager")(torch.randn(3, 4))
    env = {**os.environ, "DYNREP_IREE_TOOLS": str(tmp_path)}  # a folder without IREE's tools
    for args in (
        ["mlir", str(store), "0/0", "--graph", "inference", "--target", "iree", "-o", str(tmp_path / "x.vmfb")],
        ["lower-check", str(store), "--runtime", "iree"],
    ):
        done = subprocess.run([mlir._tool(), *args], capture_output=True, text=True, env=env)
        assert done.returncode == 2, done.stderr
        assert "IREE is not installed" in done.stderr and INSTALL in done.stderr, done.stderr
    monkeypatch.setenv("DYNREP_IREE_TOOLS", str(tmp_path))
    with pytest.raises(GraphError, match="iree-base-compiler"):
        mlir.compile_iree(store, "0/0", tmp_path / "x.vmfb", graph="inference")
    with pytest.raises(GraphError, match="iree-base-runtime"):
        mlir.lower_check(store, runtime="iree")
    assert mlir.lower_check(store)["summary"]["matched"] == 1  # the JIT needs no IREE
