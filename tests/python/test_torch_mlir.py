"""The torch dialect form checked by torch-mlir itself (dynamo_replay.torch_mlir_check): each real
graph's module is parsed and verified with the torch dialect registered (no unregistered ops),
taken by torch-mlir's FX pipelines to the torch backend form and to linalg-on-tensors, run by its
reference backend on the stored inputs and matched against the stored outputs. Where torch-mlir
itself cannot go on (an operator it does not lower, a lowering bug of its own), the case names
the stage it stops at and why, so the emitter's part is still checked and a torch-mlir that
does better shows up as a failure to update the table. About 15 s on a 2-core machine."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
import torch

from dynamo_replay import torch_mlir_check
from dynamo_replay.graphs.stored import stored_graphs
from dynamo_replay.tools import mlir_executable


def _missing() -> str:
    try:
        torch_mlir_check.require_torch_mlir()
        mlir_executable()
    except (ImportError, FileNotFoundError) as e:
        return str(e)
    return ""


needs_torch_mlir = pytest.mark.skipif(bool(_missing()), reason=_missing() + " (make test installs it)")

# This file's job names -> graph_jobs.JOBS'.
JOBS = {
    "mlp": "mlp",
    "gpt": "gpt",
    "convnet": "convnet",
    "graph_break": "graph_break",
    "hf_bert": "hf_bert",
    "hf_gpt2_train": "hf_gpt2_train_no_dropout",
}

# job, compile, graph, the stage it reaches, what the error names there ("" when matched)
CASES = [
    ("mlp", "0/0", "inference", "matched", ""),
    ("gpt", "0/0", "inference", "matched", ""),
    ("gpt", "0/1", "inference", "linalg", "lowering assumed dim 1 of a tensor<?x?xi64> is 1"),  # its aten.view, #4743
    ("convnet", "0/0", "forward", "parsed", "torch.aten._native_batch_norm_legit_functional"),  # no such op in it
    ("convnet", "0/0", "backward", "backend", "not lowered: torch.aten.native_batch_norm_backward x2"),
    ("graph_break", "0/0_1", "forward", "matched", ""),
    ("graph_break", "0/0_1", "backward", "matched", ""),
    ("graph_break", "1/0", "forward", "matched", ""),
    ("graph_break", "1/0", "backward", "matched", ""),
    ("hf_bert", "0/0", "inference", "matched", ""),
    ("hf_gpt2_train", "1/0_1", "forward", "matched", ""),
    ("hf_gpt2_train", "1/0_1", "backward", "backend", "torch.aten.native_layer_norm_backward x5"),
    (
        "hf_gpt2_train",
        "3/0",
        "forward",
        "backend",
        "'torch.prim.NumToTensor.Scalar'",
    ),  # its nll_loss_forward decomposition
    ("hf_gpt2_train", "3/0", "backward", "matched", ""),
]
GRAPH_EVENTS = {"forward": "aot_forward_graph", "backward": "aot_backward_graph", "inference": "aot_inference_graph"}


@pytest.fixture(scope="module")
def stores(graph_stores) -> Mapping[str, Path]:
    return graph_stores.view(JOBS)


@needs_torch_mlir
def test_the_cases_are_every_aot_graph(stores: dict[str, Path]) -> None:
    stored = {
        (job, compile_id, event)
        for job, path in stores.items()
        for compile_id, event in stored_graphs(path)
        if event in GRAPH_EVENTS.values()
    }
    assert stored == {(job, compile_id, GRAPH_EVENTS[graph]) for job, compile_id, graph, _, _ in CASES}


@needs_torch_mlir
@pytest.mark.parametrize(
    ("job", "compile_id", "graph", "stage", "names"), CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASES]
)
def test_torch_mlir_parses_lowers_runs_and_matches(
    stores: dict[str, Path], job: str, compile_id: str, graph: str, stage: str, names: str
) -> None:
    result = torch_mlir_check.check(stores[job], compile_id, graph)
    assert (result.graph, result.stage) == (GRAPH_EVENTS[graph], stage), result.error
    assert names in result.error if names else result.error == ""


@needs_torch_mlir
def test_a_failed_runtime_check_is_reported_not_fatal() -> None:
    """torch-mlir guards broadcasts with runtime asserts; one failing aborts the run, which
    happens in a child process: the caller gets the assert's message."""
    text = """func.func @forward(%a: !torch.vtensor<[?],f32>, %b: !torch.vtensor<[?],f32>) -> !torch.vtensor<[?],f32> {
  %one = torch.constant.int 1
  %sum = torch.aten.add.Tensor %a, %b, %one : !torch.vtensor<[?],f32>, !torch.vtensor<[?],f32>, !torch.int -> !torch.vtensor<[?],f32>
  return %sum : !torch.vtensor<[?],f32>
}"""
    ok = torch_mlir_check.check_text(text, [torch.ones(3), torch.ones(3)], [(0, torch.full((3,), 2.0))])
    assert (ok.stage, ok.error) == ("matched", "")
    bad = torch_mlir_check.check_text(text, [torch.ones(3), torch.ones(4)], [(0, torch.full((3,), 2.0))])
    assert bad.stage == "linalg"
    assert "killed by SIGABRT" in bad.error and "mismatched size for broadcast" in bad.error


def test_torch_mlir_missing_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch_mlir.ir", None)
    with pytest.raises(ImportError, match="pip install --no-deps torch-mlir"):
        torch_mlir_check.require_torch_mlir()
