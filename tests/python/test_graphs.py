"""Stored graphs rebuilt from the store alone (dynamo_replay.load_graph): every graph of real
jobs (Dynamo's, AOTAutograd's forward or inference, and backward) reproduces the outputs the
compiled graph gave, keeps the user line and module of each node, and runs as a standalone
script (`python -m dynamo_replay graph`); and capture does not change what PyTorch compiles.
About 30 s on a 2-core machine."""

from __future__ import annotations

import inspect as pyinspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

import dynamo_replay as dr  # noqa: E402
import models  # noqa: E402
from dynamo_replay.__main__ import main  # noqa: E402
from dynamo_replay.graphs import FLOAT_TOLERANCE, compile_ids  # noqa: E402
from job_environment import fresh_inductor_cache  # noqa: E402
from models import MLP, ConvNet, TinyGPT  # noqa: E402

JOBS = Path(__file__).parent / "jobs"
GRAPHS = {
    "dynamo": "dynamo_output_graph",
    "forward": "aot_forward_graph",
    "inference": "aot_inference_graph",
    "backward": "aot_backward_graph",
}


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def capture_job(path: Path, job: Callable[[], Any], **options: Any) -> Any:
    torch._dynamo.reset()
    with dr.capture(path, **options):
        return job()


def line_of(fn, text: str) -> int:
    lines, start = pyinspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def every_graph(store: Path) -> dict[tuple[str, str], torch.fx.GraphModule]:
    """Every stored graph, rebuilt: (compile id, graph event) -> module. Each one reproduces
    the outputs its compiled graph gave, bitwise (aot_eager runs the same aten ops in order)."""
    found = {}
    for compile_id in compile_ids(store):
        for graph in ("dynamo", "forward", "backward"):
            try:
                module = dr.load_graph(store, compile_id, graph)
            except dr.GraphError as error:
                assert f"compile {compile_id} has no {graph} graph" in str(error)
                continue
            assert module.expected_outputs, (compile_id, graph)
            assert module.check(0, 0) == [], (compile_id, module.graph_event)
            assert module.check(0, 0) == [], "running the graph changed its stored inputs"
            found[(compile_id, module.graph_event)] = module
    return found


def run_graph(module: torch.fx.GraphModule, inputs: list[Any] | None = None) -> tuple[list[Any], list[Any]]:
    """(outputs, inputs after the call): the graph run on copies of its stored inputs."""
    copies = [x.clone() if isinstance(x, torch.Tensor) else x for x in (inputs or module.example_inputs)]
    with torch.no_grad():
        outputs = module(*copies)
    return list(outputs) if isinstance(outputs, (list, tuple)) else [outputs], copies


def placeholders(module: torch.fx.GraphModule) -> list[dict[str, Any]]:
    return [n for n in module.ir["nodes"] if n["op"] == "placeholder"]


def position_of(module: torch.fx.GraphModule, **role: str) -> int:
    """The position of the graph input with this role (parameter, buffer, user input)."""
    return next(i for i, n in enumerate(placeholders(module)) if role.items() <= n.get("input", {}).items())


def result_position(module: torch.fx.GraphModule, result: dict[str, int]) -> int:
    return module.ir["results"].index(result)


# --- fixtures: stores shared by several tests -----------------------------------------------


@pytest.fixture(scope="module")
def mlp_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, MLP, torch.Tensor, torch.Tensor]:
    store = tmp_path_factory.mktemp("mlp") / "job.dynrep"
    model, x = MLP(), torch.randn(8, 16)

    def job() -> torch.Tensor:
        with torch.no_grad():
            return torch.compile(model, backend="aot_eager")(x)

    return store, model, x, capture_job(store, job)


@pytest.fixture(scope="module")
def gpt_job(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, TinyGPT, list[torch.Tensor]]:
    store = tmp_path_factory.mktemp("gpt") / "job.dynrep"
    model = TinyGPT().eval()
    ids = [torch.randint(0, 97, (batch, seq)) for batch, seq in ((2, 8), (3, 12), (4, 16))]

    def job() -> None:
        compiled = torch.compile(model, backend="aot_eager")
        with torch.no_grad():
            for idx in ids:
                compiled(idx)

    capture_job(store, job)
    return store, model, ids


# --- load_graph on real jobs ----------------------------------------------------------------


def test_mlp_inference_graphs_reproduce_and_keep_user_lines(mlp_job) -> None:
    store, model, x, out = mlp_job
    graphs = every_graph(store)
    assert sorted(graphs) == [("0/0", "aot_inference_graph"), ("0/0", "dynamo_output_graph")]
    inference = graphs[("0/0", "aot_inference_graph")]
    (got,), _ = run_graph(inference)
    assert torch.equal(got, out)  # what the user got from the compiled model
    # The addmm of fc1 keeps its module and the user line that called it.
    addmm = next(n for n in inference.graph.nodes if n.target is torch.ops.aten.addmm.default)
    assert list(addmm.meta["nn_module_stack"].values()) == [("fc1", "torch.nn.modules.linear.Linear")]
    *_, last = re.finditer(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)', addmm.meta["stack_trace"])
    user_line = line_of(MLP.forward, "self.fc1(x)")
    assert (last[1], int(last[2]), last[3]) == (models.__file__, user_line, "forward")
    assert last[4] == "return self.fc2(torch.relu(self.fc1(x)))"
    entry = next(n for n in inference.ir["nodes"] if n["name"] == addmm.name)
    assert entry["location"] == {
        "file": models.__file__,
        "line": user_line,
        "function": "forward",
        "code": "return self.fc2(torch.relu(self.fc1(x)))",
    }
    assert entry["scope"] == [{"path": "fc1", "class": "torch.nn.modules.linear.Linear"}]
    # The inputs are the model's parameters, by name, and the user's x.
    weight = position_of(inference, role="parameter", name="fc1.weight")
    assert torch.equal(inference.example_inputs[weight], model.fc1.weight.detach())
    assert torch.equal(inference.example_inputs[position_of(inference, role="user_input", source="L['x']")], x)
    with pytest.raises(dr.GraphError, match=r"job.dynrep: compile 0/0 has no backward graph \(it has: "):
        dr.load_graph(store, "0/0", "backward")


def test_gpt_dynamic_graph_reproduces_and_has_its_symbols(gpt_job) -> None:
    store, model, ids = gpt_job
    graphs = every_graph(store)
    assert sorted(graphs) == [(c, g) for c in ("0/0", "0/1") for g in ("aot_inference_graph", "dynamo_output_graph")]
    with dr.Store.open(store) as s:
        (event,) = [
            e for e in s.records(dr.TraceEvent) if e.name == "dynamo_replay.symbols" and e.compile_id == (0, 1, 0)
        ]
        table = json.loads(s.get_blob(event.payload_key))
    by_source = {entry["source"]: entry for entry in table}
    assert set(by_source) == {"L['idx'].size()[0]", "L['idx'].size()[1]"}
    batch, seq = by_source["L['idx'].size()[0]"], by_source["L['idx'].size()[1]"]
    assert all(re.fullmatch(r"s\d+", e["symbol"]) and not e["unbacked"] for e in (batch, seq))
    assert (batch["range"], batch["hint"]) == ([2, "int_oo"], 3)  # the dynamic compile's sizes: (3, 12)
    assert (seq["range"], seq["hint"]) == ([2, "int_oo"], 12)
    inference = graphs[("0/1", "aot_inference_graph")]
    (idx_node,) = [n for n in placeholders(inference) if n.get("input", {}).get("source") == "L['idx']"]
    assert idx_node["outputs"][0]["shape"] == [batch["symbol"], seq["symbol"]]
    # The rebuilt graph is as dynamic as the compiled one: at the third call's size it gives
    # what the model gives.
    inputs = list(inference.example_inputs)
    for i, node in enumerate(placeholders(inference)):
        role = node.get("input", {})
        if role.get("role") == "symbol":
            inputs[i] = {batch["symbol"]: 4, seq["symbol"]: 16}[role["symbol"]]
        elif role.get("source") == "L['idx']":
            inputs[i] = ids[2]
    (got,), _ = run_graph(inference, inputs)
    with torch.no_grad():
        torch.testing.assert_close(got, model(ids[2]), **FLOAT_TOLERANCE)


def test_convnet_batch_norm_in_training_and_eval(tmp_path: Path) -> None:
    model, x = ConvNet().train(), torch.randn(2, 3, 16, 16)
    start_mean = model.features[1].running_mean.clone()

    def train() -> torch.Tensor:
        out = torch.compile(model, backend="aot_eager")(x)
        out.sum().backward()
        return out

    out = capture_job(tmp_path / "train.dynrep", train)
    graphs = every_graph(tmp_path / "train.dynrep")
    assert sorted(graphs) == [("0/0", g) for g in ("aot_backward_graph", "aot_forward_graph", "dynamo_output_graph")]
    forward = graphs[("0/0", "aot_forward_graph")]
    # The running statistics are inputs the graph updates: stored as they were before the call,
    # they come out of the rebuilt graph as the model has them after it.
    mean = position_of(forward, role="buffer", name="features.1.running_mean")
    assert torch.equal(forward.example_inputs[mean], start_mean)
    outputs, after = run_graph(forward)
    if {"mutated_input": mean} in forward.ir["results"]:  # returned as an output rather than updated in place
        after[mean] = outputs[result_position(forward, {"mutated_input": mean})]
    assert torch.equal(after[mean], model.features[1].running_mean)
    assert not torch.equal(after[mean], start_mean)
    tracked = position_of(forward, role="buffer", name="features.4.num_batches_tracked")
    assert after[tracked].item() == 1
    assert torch.equal(outputs[result_position(forward, {"sample_output": 0})], out.detach())

    model.eval()

    def evaluate() -> torch.Tensor:
        with torch.no_grad():
            return torch.compile(model, backend="aot_eager")(x)

    out = capture_job(tmp_path / "eval.dynrep", evaluate)
    graphs = every_graph(tmp_path / "eval.dynrep")
    assert sorted(graphs) == [("0/0", "aot_inference_graph"), ("0/0", "dynamo_output_graph")]
    inference = graphs[("0/0", "aot_inference_graph")]
    assert "aten::_native_batch_norm_legit_no_training.default" in {n.get("target") for n in inference.ir["nodes"]}
    assert torch.equal(run_graph(inference)[0][0], out)


def test_mutated_input_and_a_gradient_that_never_flowed(store_path: Path) -> None:
    def scale_then_sin(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x.mul_(2)
        return (x * y).sin()

    a, y = torch.randn(4, requires_grad=True), torch.randn(4)

    def job() -> torch.Tensor:
        x = a.clone()  # needs a gradient: AOTAutograd returns its new value rather than updating it
        out = torch.compile(scale_then_sin, backend="aot_eager")(x, y)
        out.sum().backward()  # no gradient flows into x's new value: autograd passes zeros
        return out

    out = capture_job(store_path, job)
    graphs = every_graph(store_path)
    forward = graphs[("0/0", "aot_forward_graph")]
    assert forward.ir["results"][:2] == [{"mutated_input": 0}, {"sample_output": 0}]
    outputs, _ = run_graph(forward)
    assert torch.equal(outputs[1], out.detach())
    backward = graphs[("0/0", "aot_backward_graph")]
    feeds = [n["feed"] for n in placeholders(backward) if n["name"].startswith("tangents_")]
    assert feeds == [{"tangent": 0, "grad_output": 0}, {"tangent": 1, "grad_output": 1}]
    assert torch.equal(backward.example_inputs[-2], torch.zeros(4))  # x's new value: no gradient
    assert torch.equal(run_graph(backward)[0][0], a.grad)


def test_training_step_backward_reproduces_the_gradients(store_path: Path) -> None:
    model = MLP()

    def step(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()  # a graph break: the backward runs between two compiled pieces
        return loss

    capture_job(store_path, lambda: torch.compile(step, backend="aot_eager")(torch.randn(8, 16), torch.randn(8, 4)))
    graphs = every_graph(store_path)
    (compile_id,) = {c for c, g in graphs if g == "aot_backward_graph"}
    assert {g for c, g in graphs if c == compile_id} == {
        "dynamo_output_graph",
        "aot_forward_graph",
        "aot_backward_graph",
    }
    forward, backward = graphs[(compile_id, "aot_forward_graph")], graphs[(compile_id, "aot_backward_graph")]
    outputs, _ = run_graph(backward)
    for name in ("fc1.weight", "fc1.bias", "fc2.weight"):
        grad = outputs[result_position(backward, {"grad_input": position_of(forward, role="parameter", name=name)})]
        assert torch.equal(grad, model.get_parameter(name).grad), name


def test_graph_break_each_graph_reproduces(store_path: Path) -> None:
    def sin_break_cos(x: torch.Tensor) -> torch.Tensor:
        y = torch.sin(x) * 2
        torch._dynamo.graph_break()
        return torch.cos(y).sum(dim=0)

    x = torch.randn(5, 3, requires_grad=True)
    capture_job(store_path, lambda: torch.compile(sin_break_cos, backend="aot_eager")(x).sum().backward())
    graphs = every_graph(store_path)
    compiles = sorted({c for c, _ in graphs})
    assert len(compiles) == 2, graphs.keys()
    for compile_id in compiles:
        assert {g for c, g in graphs if c == compile_id} == {
            "dynamo_output_graph",
            "aot_forward_graph",
            "aot_backward_graph",
        }
    # The first graph's backward gives the gradient x got.
    first = graphs[(compiles[0], "aot_backward_graph")]
    assert torch.equal(run_graph(first)[0][0], x.grad)


def test_inductor_forward_reproduces_within_float_tolerance(store_path: Path) -> None:
    def gelu_scale(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x * w).sum(dim=-1)

    x, w = torch.randn(4, 32), torch.randn(32)

    def job() -> torch.Tensor:
        with torch.no_grad():
            return torch.compile(gelu_scale, backend="inductor")(x, w)

    out = capture_job(store_path, job, precompile=False)
    module = dr.load_graph(store_path, "0/0", "forward")
    assert module.graph_event == "aot_inference_graph"
    # The stored outputs are Inductor's (a fused C++ kernel); the rebuilt graph runs the aten ops.
    assert torch.equal(module.expected_outputs[0][1], out)
    assert module.check() == []
    (got,), _ = run_graph(module)
    torch.testing.assert_close(got, out, **FLOAT_TOLERANCE)


# --- the graph command: a standalone script ---------------------------------------------------


def run_alone(script: Path) -> subprocess.CompletedProcess[str]:
    """Runs a repro script in a fresh interpreter, in its own directory, as if dynamo_replay
    were not installed: it cannot be imported, and torch does not call its entry point."""
    blocker = (
        "import runpy, sys; sys.modules['dynamo_replay'] = None; sys.argv = [sys.argv[1]]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')"
    )
    return subprocess.run(
        [sys.executable, "-c", blocker, script.name],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
    )


def test_repro_script_runs_without_model_store_or_dynamo_replay(gpt_job, mlp_job, tmp_path: Path, capsys) -> None:
    store, _, _ = gpt_job
    written = tmp_path / "written"
    written.mkdir()
    assert main(["graph", str(store), "0/1", "-o", str(written / "repro.py"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {
        "script": str(written / "repro.py"),
        "data": str(written / "repro.pt"),
        "compile": "0/1",
        "graph": "aot_inference_graph",
        "inputs": 32,
        "outputs": 1,
        "compared_outputs": 1,
    }
    elsewhere = Path(tempfile.mkdtemp(dir=tmp_path))  # no store, no model beside it
    for name in ("repro.py", "repro.pt"):
        shutil.move(written / name, elsewhere / name)
    done = run_alone(elsewhere / "repro.py")
    assert (done.returncode, done.stdout) == (0, "match: 1 output equals the stored one (bitwise)\n"), done.stderr
    script = (elsewhere / "repro.py").read_text()
    assert "models.py:" in script  # the user lines, as comments
    assert "L['idx'].size()[0]" in script and "parameter tokens.weight" in script  # what each input is
    # A stored output that differs is named, and the exit status says so.
    data = torch.load(elsewhere / "repro.pt", weights_only=True)
    data["expected_values"][0] = data["expected_values"][0] + 1
    torch.save(data, elsewhere / "repro.pt")
    done = run_alone(elsewhere / "repro.py")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "mismatch: 1 of 1 stored outputs differ (rtol=0.0001, atol=1e-05)",
        "  output 0: values differ (max abs difference 1)",
    ]

    # Without -o the script goes to stdout, its (small) data inside it.
    store, _, _, _ = mlp_job
    assert main(["graph", str(store), "0/0", "--graph", "dynamo"]) == 0
    (elsewhere / "mlp.py").write_text(capsys.readouterr().out)
    done = run_alone(elsewhere / "mlp.py")
    assert (done.returncode, done.stdout) == (0, "match: 1 output equals the stored one (bitwise)\n"), done.stderr


def format_1_store(path: Path) -> Path:
    """A store as capture wrote it before graph IR format 2 (the IR parsed from printed text)."""
    ir = {"format": 1, "graph": "aot_inference_graph", "nodes": [{"name": "arg0_1", "op": "placeholder"}]}
    with dr.Store.create(path) as store:
        key = store.put_blob(json.dumps(ir).encode())
        store.put(
            dr.TraceEvent(
                name="dynamo_replay.graph_ir",
                compile_id=(0, 0, 0),
                metadata_json=json.dumps({"graph": "aot_inference_graph", "nodes": 1}),
                payload_key=key,
                payload_size=len(json.dumps(ir)),
                time=0.0,
            )
        )
    return path


def test_graph_command_names_what_is_missing(mlp_job, tmp_path: Path, capsys) -> None:
    store, model, x, _ = mlp_job
    no_samples = tmp_path / "no-samples.dynrep"
    with torch.no_grad():
        capture_job(no_samples, lambda: torch.compile(model, backend="aot_eager")(x), samples=False)
    capsys.readouterr()  # what capture said
    cases = [
        ([str(store), "7/0"], f"error: {store}: no graphs for compile 7/0 (compiles with graphs: 0/0)"),
        (
            [str(store), "0/0", "--graph", "backward"],
            f"error: {store}: compile 0/0 has no backward graph (it has: aot_inference_graph, dynamo_output_graph)",
        ),
        (
            [str(no_samples), "0/0"],
            f"error: {no_samples}: compile 0/0 has no stored sample (captured with samples "
            "off, or the graph never ran)",
        ),
        (
            [str(format_1_store(tmp_path / "old.dynrep")), "0/0"],
            f"error: {tmp_path / 'old.dynrep'}: this graph was stored as graph IR format 1",
        ),
        ([str(tmp_path / "absent.dynrep"), "0/0"], f"error: {tmp_path / 'absent.dynrep'}: no such file"),
    ]
    for args, message in cases:
        assert main(["graph", *args, "-o", str(tmp_path / "repro.py")]) == 2, args
        out, err = capsys.readouterr()
        assert out == "" and len(err.splitlines()) == 1 and err.startswith(message), (args, err)
    assert not (tmp_path / "repro.py").exists()


# --- capture does not change what PyTorch compiles ------------------------------------------


def test_capture_leaves_inductor_cache_keys_and_code_unchanged(tmp_path: Path) -> None:
    """The same small Inductor job, each run in a fresh process with an empty cache: without
    capture, captured without precompile, and captured with it (the default)."""
    runs = {
        "plain": ["plain"],
        "no-precompile": ["capture", str(tmp_path / "a.dynrep"), "--no-precompile"],
        "precompile": ["capture", str(tmp_path / "b.dynrep")],
    }
    processes = {}
    for name, args in runs.items():
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(fresh_inductor_cache(tmp_path / f"cache-{name}"))}
        processes[name] = subprocess.Popen(
            [sys.executable, str(JOBS / "cache_keys.py"), *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    found = {}
    for name, process in processes.items():
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        found[name] = json.loads(out)
    plain = found["plain"]
    assert [event for event, _ in plain["fx_graph"]] == ["fx_graph_cache_miss"] * 2  # forward and backward
    # Without precompile, capture changes nothing PyTorch hashes: the same FX-graph and
    # AOTAutograd keys, and the same generated code.
    assert found["no-precompile"] == plain
    # With precompile, PyTorch bundles Inductor's graphs into its AOTAutograd cache entry and
    # does not look up its FX-graph cache at all (torch/_inductor/compile_fx.py), and the
    # AOTAutograd key takes the compiled graph's per-process name (AOTConfig.precompile_backend_id),
    # so it differs from run to run. What Inductor generates is the same.
    assert found["precompile"]["fx_graph"] == []
    assert found["precompile"]["aot_autograd"][0][1] != plain["aot_autograd"][0][1]
    assert found["precompile"]["output_code"] == plain["output_code"] and len(plain["output_code"]) == 2
