"""Capture of real torch.compile jobs: the store holds the right compiles, reasons, guards,
graphs, code and symbols, and capture leaves PyTorch as it found it. About 25 s on a 2-core machine."""

from __future__ import annotations

import contextlib
import inspect as pyinspect
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import dynamo_replay as dr  # noqa: E402
from dynamo_replay import kernels as kernel_files  # noqa: E402
from job_environment import fresh_inductor_cache  # noqa: E402
from models import MLP, ConvNet, TinyGPT  # noqa: E402

JOBS = Path(__file__).parent / "jobs"


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def ls(inspect, store: Path) -> dict:
    result = inspect("ls", "--json", str(store))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def show(inspect, store: Path, compile_id: str, *sections: str) -> dict:
    result = inspect("show", "--json", str(store), compile_id, *sections)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def line_of(fn, text: str) -> int:
    lines, start = pyinspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_mlp_aten_graph_guards_and_code(store_path: Path, inspect) -> None:
    model = MLP()
    compiled = torch.compile(model, backend="aot_eager")
    x = torch.randn(8, 16)
    with dr.capture(store_path), torch.no_grad():
        compiled(x)
    listing = ls(inspect, store_path)
    (c,) = listing["compiles"]
    assert (c["compile_id"], c["function"], c["status"], c["reason"]) == ("0/0", "forward", "ok", "first compile")
    detail = show(inspect, store_path, "0/0")
    aten = detail["graphs"]["aot_inference_graph"]
    assert aten.count("torch.ops.aten.addmm.default") == 2
    assert '"f32[8, 32]' in aten and '"f32[8, 4]' in aten  # the hidden and output activations
    assert "torch.ops.aten.relu.default" in aten
    # The same graph as torch-free IR: operators with overloads, output metadata and schemas.
    ir = detail["graph_ir"]["aot_inference_graph"]
    assert ir["format"] == 2 and ir["origin"] == "graph"  # read from the graph module, not parsed from text
    addmms = [n for n in ir["nodes"] if n.get("target") == "aten::addmm.default"]
    assert [n["outputs"][0]["shape"] for n in addmms] == [[8, 32], [8, 4]]
    assert addmms[0]["outputs"][0] | {"shape": None} == {
        "dtype": "float32",
        "shape": None,
        "stride": [32, 1],
        "storage_offset": 0,
        "device": "cpu",
        "requires_grad": False,
    }
    assert all(arg.keys() == {"ref"} for arg in addmms[0]["args"])
    # Each node keeps the user line it came from and the module that ran it.
    assert addmms[0]["location"] | {"file": Path(addmms[0]["location"]["file"]).name} == {
        "file": "models.py",
        "line": line_of(MLP.forward, "self.fc1(x)"),
        "function": "forward",
        "code": "return self.fc2(torch.relu(self.fc1(x)))",
    }
    assert [s["path"] for s in addmms[0]["scope"]] == ["fc1"] and [s["path"] for s in addmms[1]["scope"]] == ["fc2"]
    relu = next(n for n in ir["nodes"] if n.get("target") == "aten::relu.default")
    assert relu["args"] == [{"ref": addmms[0]["name"]}]
    schema = ir["schemas"]["aten::addmm.default"]
    assert [a["name"] for a in schema["arguments"]] == ["self", "mat1", "mat2", "beta", "alpha"]
    assert schema["arguments"][3] == {"name": "beta", "type": "Scalar", "kwarg_only": True, "default": "1"}
    assert schema["returns"] == [{"name": "", "type": "Tensor"}]
    dynamo_ir = detail["graph_ir"]["dynamo_output_graph"]  # torch-level: calls as Dynamo recorded them
    assert [n["target"] for n in dynamo_ir["nodes"] if n["op"] == "call_function"].count("torch._C._nn.linear") == 2
    placeholders = [n for n in ir["nodes"] if n["op"] == "placeholder"]
    x_meta = {"dtype": "float32", "shape": [8, 16], "stride": [16, 1], "storage_offset": 0}
    assert x_meta | {"device": "cpu", "requires_grad": False} in [p["outputs"][0] for p in placeholders]
    # Each input says what it is in the job: the user's x, or a parameter by its qualified name.
    assert {"role": "user_input", "source": "L['x']"} in [p["input"] for p in placeholders]
    assert "fc1.weight" in [p["input"].get("name") for p in placeholders]
    assert "TENSOR_MATCH" in detail["guards"] and "L['x']" in detail["guards"]
    (tensor_match,) = [g for g in detail["guard_list"] if g["kind"] == "TENSOR_MATCH" and g["source"] == "L['x']"]
    assert "torch.float32" in tensor_match["code"] and "size=[8, 16]" in tensor_match["code"]
    # PyTorch names the innermost user frame that first used x: nn.Linear.forward.
    assert tensor_match["file"].endswith("nn/modules/linear.py") and tensor_match["function"] == "forward"
    assert "F.linear(input, self.weight, self.bias)" in tensor_match["user_code"]
    roles = {(code["role"], code["name"]) for code in detail["code"]}
    assert roles == {("original", "MLP.forward"), ("transformed", "MLP.forward")}
    original = next(code for code in detail["code"] if code["role"] == "original")
    assert "(fc1)" in original["disassembly"] and "(fc2)" in original["disassembly"]
    assert original["fields"]["co_varnames"] == ["self", "x"]


def stored_samples(store: Path) -> list[dict]:
    with dr.Store.open(store) as s:
        return [json.loads(e.metadata_json) for e in s.records(dr.TraceEvent) if e.name == "dynamo_replay.sample"]


def tensor_from(store: Path, entry: dict) -> torch.Tensor:
    """A stored sample tensor, rebuilt from its raw bytes, dtype and shape."""
    with dr.Store.open(store) as s:
        raw = bytearray(s.get_blob(entry["blob"]))
    return torch.frombuffer(raw, dtype=getattr(torch, entry["dtype"])).reshape(entry["shape"])


def test_samples_hold_first_call_inputs_and_outputs(store_path: Path, inspect) -> None:
    model = MLP()
    x = torch.randn(8, 16)
    with dr.capture(store_path), torch.no_grad():
        compiled = torch.compile(model, backend="aot_eager")
        compiled(x)
        compiled(x + 1)  # a second call is not sampled
    (sample,) = stored_samples(store_path)
    assert sample["graph"].startswith("__compiled_fn")
    with torch.no_grad():
        torch.testing.assert_close(tensor_from(store_path, sample["outputs"][0]), model(x), rtol=0, atol=0)
    # replay-inspect names each input by the Dynamo graph's placeholder; parameters are marked.
    (shown,) = show(inspect, store_path, "0/0", "--graph")["samples"]
    by_name = {entry["name"]: entry for entry in shown["inputs"]}
    weight = by_name["l_self_modules_fc1_parameters_weight_"]
    assert weight["parameter"] is True and "parameter" not in by_name["l_x_"]
    torch.testing.assert_close(tensor_from(store_path, weight), model.fc1.weight, rtol=0, atol=0)
    torch.testing.assert_close(tensor_from(store_path, by_name["l_x_"]), x, rtol=0, atol=0)
    text = inspect("show", str(store_path), "0/0", "--graph").stdout
    assert "in  0: float32[32, 16] parameter l_self_modules_fc1_parameters_weight_" in text
    with torch.no_grad():  # the graph was put back: later calls run it and are right
        torch.testing.assert_close(compiled(x + 2), model(x + 2), rtol=0, atol=0)
    assert len(stored_samples(store_path)) == 1


def test_sample_size_cap_and_opt_out(tmp_path: Path) -> None:
    model, x = MLP(), torch.randn(8, 16)
    capped, off = tmp_path / "capped.dynrep", tmp_path / "off.dynrep"
    with dr.capture(capped, sample_limit_bytes=600), torch.no_grad():
        torch.compile(model, backend="aot_eager")(x)  # x is 512 bytes; fc1's weight 2048
    (sample,) = stored_samples(capped)
    stored = [e for e in sample["inputs"] + sample["outputs"] if "blob" in e]
    assert sum(e["bytes"] for e in stored) <= 600
    assert any(e.get("skipped", "").endswith("over the sample size cap") for e in sample["inputs"])
    torch._dynamo.reset()
    with dr.capture(off, samples=False), torch.no_grad():
        torch.compile(model, backend="aot_eager")(x)
    assert stored_samples(off) == []


# Tensors whose data is not a plain buffer of their dtype: reading them as bytes used to crash
# the job (a quantized tensor's storage read as uint8 is a segfault). name: (function, input).
UNREADABLE = {
    "quantized_output": (lambda x: torch.quantize_per_tensor(x, 0.1, 3, torch.qint8), torch.randn(3, 4)),
    "quantized_uint8_output": (lambda x: torch.quantize_per_tensor(x, 0.05, 7, torch.quint8), torch.rand(5)),
    "quantized_then_read": (
        lambda x: torch.quantize_per_tensor(x, 0.1, 0, torch.qint8).int_repr() + 1,
        torch.randn(2, 3),
    ),
}


@pytest.mark.parametrize("name", list(UNREADABLE))
def test_a_tensor_without_plain_data_is_described_not_read(name: str, tmp_path: Path) -> None:
    fn, x = UNREADABLE[name]
    torch._dynamo.reset()
    with dr.capture(tmp_path / "q.dynrep", precompile=False):
        out = torch.compile(fn, backend="aot_eager")(x)
    want = fn(x)
    assert out.dtype == want.dtype
    assert torch.equal(out.int_repr() if out.is_quantized else out, want.int_repr() if want.is_quantized else want)
    entries = [e for s in stored_samples(tmp_path / "q.dynrep") for e in s["inputs"] + s["outputs"]]
    skipped = [e["skipped"] for e in entries if "skipped" in e]
    assert all("quantized tensor" in why for why in skipped), skipped
    assert skipped or name == "quantized_then_read"


def test_training_step_has_a_backward_graph(store_path: Path, inspect) -> None:
    model = MLP()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        return loss

    compiled = torch.compile(step, backend="aot_eager")
    with dr.capture(store_path):
        for _ in range(2):
            optimizer.zero_grad()
            compiled(torch.randn(8, 16), torch.randn(8, 4))
            optimizer.step()
    graphs = {}
    for c in ls(inspect, store_path)["compiles"]:
        graphs.update(show(inspect, store_path, c["compile_id"], "--graph")["graphs"])
    assert "aten.mse_loss.default" in graphs["aot_forward_graph"]
    backward = graphs["aot_backward_graph"]
    assert "torch.ops.aten.threshold_backward.default" in backward  # relu's gradient
    assert "torch.ops.aten.mse_loss_backward.default" in backward
    backward_ir = next(
        show(inspect, store_path, c["compile_id"], "--graph")["graph_ir"]["aot_backward_graph"]
        for c in ls(inspect, store_path)["compiles"]
        if "aot_backward_graph" in show(inspect, store_path, c["compile_id"], "--graph")["graph_ir"]
    )
    assert "aten::threshold_backward.default" in backward_ir["schemas"]
    assert {n.get("target") for n in backward_ir["nodes"]} >= {"aten::mse_loss_backward.default", "aten::mm.default"}


def test_gpt_with_dynamic_batch_and_sequence(store_path: Path, inspect) -> None:
    model = TinyGPT().eval()
    compiled = torch.compile(model, backend="aot_eager")
    with dr.capture(store_path), torch.no_grad():
        for batch, seq in ((2, 8), (3, 12), (4, 16)):
            idx = torch.randint(0, 97, (batch, seq))
            torch.testing.assert_close(compiled(idx), model(idx))
    compiles = ls(inspect, store_path)["compiles"]
    # The second shape makes both dimensions dynamic; the third fits the dynamic graph.
    assert [c["compile_id"] for c in compiles] == ["0/0", "0/1"]
    assert compiles[1]["reason"].startswith("0/0: tensor 'idx' size mismatch at index 0. expected 2, actual 3")
    detail = show(inspect, store_path, "0/1", "--shapes", "--graph")
    sources = {s["source"] for s in detail["shapes"] if s["event"] == "create_symbol"}
    assert sources == {"L['idx'].size()[0]", "L['idx'].size()[1]"}
    aten = detail["graphs"]["aot_inference_graph"]
    assert "torch.ops.aten._softmax.default" in aten and "torch.ops.aten.native_layer_norm.default" in aten
    assert "torch.ops.aten.embedding.default" in aten


def test_convnet_with_batch_norm(store_path: Path, inspect) -> None:
    model = ConvNet().eval()
    x = torch.randn(2, 3, 16, 16)
    with dr.capture(store_path), torch.no_grad():
        torch.testing.assert_close(torch.compile(model, backend="aot_eager")(x), model(x))
    aten = show(inspect, store_path, "0/0", "--graph")["graphs"]["aot_inference_graph"]
    assert aten.count("torch.ops.aten.convolution.default") == 2
    assert aten.count("torch.ops.aten._native_batch_norm_legit_no_training.default") == 2


def test_recompile_ladder_reasons_through_the_cli(tmp_path: Path, inspect) -> None:
    store = tmp_path / "ladder.dynrep"
    result = subprocess.run(
        [sys.executable, "-m", "dynamo_replay", "capture", "-o", str(store), str(JOBS / "recompile_ladder.py"), "3"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 3, result.stderr  # the job's own status passes through
    assert "ladder done" in result.stdout
    compiles = {c["compile_id"]: c for c in ls(inspect, store)["compiles"]}
    assert list(compiles) == ["0/0", "0/1", "0/2"]
    assert compiles["0/1"]["reason"].startswith("0/0: tensor 'x' size mismatch at index 0. expected 4, actual 8")
    assert compiles["0/2"]["reason"].startswith("0/1: factor == 2.0")
    # The guard that failed, as structured data: the Python float specialized at 2.0.
    guard_list = show(inspect, store, "0/1", "--guards")["guard_list"]
    (factor,) = [g for g in guard_list if g["source"] == "L['factor']" and g["kind"] == "EQUALS_MATCH"]
    assert factor["code"] == "L['factor'] == 2.0"
    assert (Path(factor["file"]).name, factor["function"]) == ("recompile_ladder.py", "scale_and_shift")
    assert factor["user_code"] == "return torch.relu(x * factor) + x.sum()"
    shapes = show(inspect, store, "0/1", "--shapes")["shapes"]
    backed = [s for s in shapes if s["event"] == "create_symbol"]
    assert backed and backed[0]["source"] == "L['x'].size()[0]" and backed[0]["value"] == "8"
    # Each recompile's failed guard with the value it was compiled for and the value the call brought.
    (size,) = show(inspect, store, "0/1")["recompile_causes"]
    # Found by comparing what 0/0 was compiled for with the call's own tensor, named as guards name it.
    assert (size["entry"], size["source"], size["expected"], size["seen"]) == ("0/0", "L['x'].size()[0]", "4", "8")
    assert size["from"] == "compared"
    # Newest entry first: 0/1 (dynamic size) failed on the float, 0/0 still on the size.
    factor_cause, first_entry = show(inspect, store, "0/2")["recompile_causes"]
    assert (first_entry["entry"], first_entry["source"], first_entry["seen"]) == ("0/0", "L['x'].size()[0]", "16")
    assert (factor_cause["source"], factor_cause["expected"], factor_cause["seen"]) == ("factor", "2.0", "3.0")
    # Hit counts: 0/0 ran once (n=4), 0/1 twice (dynamic n=8, 16), 0/2 once; two calls fell through.
    listing = ls(inspect, store)
    assert [c["calls"] for c in listing["compiles"]] == [1, 2, 1]
    (function,) = listing["functions"]
    assert (function["function"], function["compiles"], function["calls"], function["fell_through"]) == (
        "scale_and_shift",
        3,
        4,
        2,
    )
    (manifest,) = dr.Store.open(store).records(dr.Manifest)
    assert manifest.command_line[0].endswith("recompile_ladder.py")
    assert manifest.environment["torch.version"] == torch.__version__


def test_unbacked_symbol_points_at_the_user_line(store_path: Path, inspect) -> None:
    def total_plus(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        n = y.sum().item()
        return x * 2 + n

    with dr.capture(store_path), torch._dynamo.config.patch(capture_scalar_outputs=True):
        torch.compile(total_plus, backend="aot_eager", fullgraph=True)(torch.randn(4), torch.ones(3))
    shapes = show(inspect, store_path, "0/0", "--shapes")["shapes"]
    unbacked = [s for s in shapes if s["event"] == "create_unbacked_symbol" and s["user_stack"]]
    frame = unbacked[0]["user_stack"][-1]
    assert (frame["file"], frame["line"]) == (__file__, line_of(total_plus, ".item()"))
    assert frame["code"] == "n = y.sum().item()"


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_symbols_made_after_dynamo_take_their_graph_node_line(store_path: Path, inspect, backend: str) -> None:
    def count_and_check(x: torch.Tensor) -> torch.Tensor:
        n = torch.nonzero(x > 0.5).size(0)
        torch._check(n <= 3)
        return x * n

    with dr.capture(store_path), torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        torch.compile(count_and_check, backend=backend, fullgraph=True)(torch.tensor([0.9, 0.1, 0.7, 0.2]))
    shown = show(inspect, store_path, "0/0", "--shapes")
    line = line_of(count_and_check, "torch.nonzero")
    origins = {o["symbol"]: o for o in shown["symbol_origins"]}
    # u0 is Dynamo's; AOTAutograd traces the graph again and makes its own, attributed to the graph node.
    assert origins["u0"]["phase"] == "dynamo" and origins["u0"]["attributed"] == "user_stack"
    later = [o for o in origins.values() if o["phase"] != "dynamo"]
    assert {o["phase"] for o in later} == ({"aot", "inductor"} if backend == "inductor" else {"aot"})
    assert all(o["attributed"] == "graph_node" for o in later)
    for origin in origins.values():
        assert origin["op"] == "aten.nonzero.default"
        assert (origin["user_frame"]["file"], origin["user_frame"]["line"]) == (__file__, line)
    # Final ranges: what the compile learned (a count, at most 3 by the check), not the
    # [-int_oo, int_oo] it was made with.
    table = {entry["symbol"]: entry for entry in shown["symbols"]}
    assert table["u0"]["range"] == [0, 3]
    (check,) = shown["shape_guards"]
    assert (check["kind"], check["symbols"], check["user_frame"]["line"]) == (
        "runtime_assert",
        ["u0"],
        line_of(count_and_check, "torch._check"),
    )


def test_graph_break_is_recorded_with_its_user_line(store_path: Path, inspect) -> None:
    def sin_then_cos(x: torch.Tensor) -> torch.Tensor:
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos()

    with dr.capture(store_path):
        out = torch.compile(sin_then_cos, backend="aot_eager")(torch.zeros(4))
    assert torch.equal(out, torch.ones(4))
    compiles = {c["compile_id"]: c for c in ls(inspect, store_path)["compiles"]}
    # Dynamo restarts the frame's analysis at the break, then compiles the rest as a resume function.
    assert compiles["0/0"]["status"] == "restarted"
    (reason,) = compiles["0/0"]["graph_breaks"]
    assert reason.startswith(f"Graph break in user code at {__file__}:{line_of(sin_then_cos, 'graph_break()')}")
    assert compiles["0/0_1"]["status"] == "ok"
    assert any(c["function"].startswith("torch_dynamo_resume_in_sin_then_cos") for c in compiles.values())


def nonzero_sum(x: torch.Tensor) -> torch.Tensor:
    idx = x.nonzero()
    return idx.sum()


def masked_sum(x: torch.Tensor) -> torch.Tensor:
    picked = x[x > 0]
    return picked.sum()


def first_flag_plus(x: torch.Tensor) -> torch.Tensor:
    flags = (x > 0).int().tolist()
    return x + flags[0]


DATA_DEPENDENT = {nonzero_sum: "x.nonzero()", masked_sum: "x[x > 0]", first_flag_plus: ".tolist()"}


@pytest.mark.parametrize("capture_flags", [True, False], ids=["flags-on", "flags-off"])
@pytest.mark.parametrize("fn", list(DATA_DEPENDENT), ids=lambda fn: fn.__name__)
def test_data_dependent_ops_are_traced_to_their_user_line(store_path: Path, inspect, fn, capture_flags: bool) -> None:
    user_line = line_of(fn, DATA_DEPENDENT[fn])
    flags = {"capture_dynamic_output_shape_ops": capture_flags, "capture_scalar_outputs": capture_flags}
    with dr.capture(store_path), torch._dynamo.config.patch(**flags):
        x = torch.tensor([1.0, -2.0, 3.0, 0.5])
        assert torch.equal(torch.compile(fn, backend="aot_eager")(x), fn(x))
    first = ls(inspect, store_path)["compiles"][0]
    if capture_flags:
        # The op is traced: its output size or value becomes an unbacked symbol born at the user line.
        shapes = show(inspect, store_path, first["compile_id"], "--shapes")["shapes"]
        u0 = next(s for s in shapes if s["event"] == "create_unbacked_symbol" and s["symbol"] == "u0")
        assert (u0["user_stack"][-1]["file"], u0["user_stack"][-1]["line"]) == (__file__, user_line)
        assert not first["graph_breaks"]
    else:
        # Not traced: Dynamo breaks the graph there and says why.
        assert first["graph_breaks"][0].startswith(f"Graph break in user code at {__file__}:{user_line}")


def test_data_dependent_error_still_leaves_a_finished_store(store_path: Path) -> None:
    def branchy(x: torch.Tensor) -> torch.Tensor:
        if x.sum().item() > 0:  # Dynamo cannot trace a branch on data with fullgraph=True
            return x + 1
        return x - 1

    with pytest.raises(Exception) as excinfo, dr.capture(store_path):
        torch.compile(branchy, backend="eager", fullgraph=True)(torch.ones(3))
    store = dr.Store.open(store_path)
    assert store.info().state == "finished"
    # The failure's facts apart from the message: the expression, its symbol, the user line.
    (failure,) = [
        json.loads(e.metadata_json) for e in store.records(dr.TraceEvent) if e.name == "dynamo_replay.compile_failure"
    ]
    assert failure["expr"] and failure["symbols"] and failure["type"] == type(excinfo.value).__qualname__
    assert (failure["user_frame"]["line"], failure["user_frame"]["code"]) == (
        line_of(branchy, "if x.sum()"),
        "if x.sum().item() > 0:  # Dynamo cannot trace a branch on data with fullgraph=True",
    )
    errors = [e for e in store.records(dr.TraceEvent) if e.name == "dynamo_replay.error"]
    assert len(errors) == 1
    assert json.loads(errors[0].metadata_json)["type"] == type(excinfo.value).__qualname__
    assert "branchy" in store.get_blob(errors[0].payload_key).decode()  # the traceback names the user function


@pytest.mark.parametrize("precompile", [False, True])
def test_inductor_compile_keeps_its_code_and_pytorch_cache_artifacts(
    store_path: Path, inspect, tmp_path: Path, monkeypatch, request, precompile: bool
) -> None:
    # One small Inductor graph (it runs g++): its generated code and PyTorch's Mega-Cache
    # bytes, which replay will load, must be in the store.
    cache = fresh_inductor_cache(tmp_path / "inductor-cache")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    # Capture leaves caching precompile on for the rest of the process: put it back for later tests.
    settings = contextlib.ExitStack()
    settings.enter_context(torch._dynamo.config.patch(caching_precompile=False))
    settings.enter_context(torch._functorch.config.patch(bundled_autograd_cache=False))
    request.addfinalizer(settings.close)

    def sin_relu(x: torch.Tensor) -> torch.Tensor:
        return (x.sin() + 1).relu()

    x = torch.randn(64)
    with dr.capture(store_path, precompile=precompile):
        out = torch.compile(sin_relu, backend="inductor")(x)
    torch.testing.assert_close(out, sin_relu(x))
    graphs = show(inspect, store_path, "0/0", "--graph")["graphs"]
    # Inductor fuses sin, add and relu into one C++ kernel named after them.
    assert "cpp_fused_add_relu_sin_0" in graphs["inductor_output_code"]
    store = dr.Store.open(store_path)
    (mega,) = [a for a in store.records(dr.Artifact) if a.name == "torch/mega_cache.bin"]
    assert len(store.get_blob(mega.blob_key)) == mega.size
    kernels = [a.name for a in store.records(dr.Artifact) if a.name.endswith(".main.so")]
    assert len(kernels) == 1  # the fused kernel's library
    # And the CPU ISA probe's, which replay puts back (capture took them from the job's cache).
    probes = {"inductor/" + p.relative_to(cache).as_posix() for p in kernel_files.isa_probe_files(cache)}
    assert {a.name for a in store.records(dr.Artifact) if a.name in probes} == {n for n in probes if n.endswith(".so")}
    if precompile:  # Inductor's graph is bundled into the AOTAutograd entry the frame's package names
        assert int(mega.attributes["aot_autograd"]) >= 1 and int(mega.attributes["precompile"]) == 1
    else:
        assert int(mega.attributes["inductor"]) >= 1 and int(mega.attributes["aot_autograd"]) >= 1
        assert "precompile" not in mega.attributes


# Who makes a private cache, and whether it starts with the ISA probe of the job's cache.
PRIVATE_CACHES = {"capture": True, "a replay of a rank's own store": False}


@pytest.mark.parametrize("maker", PRIVATE_CACHES)
def test_a_private_cache_starts_with_the_job_s_isa_probe_only_for_capture(
    tmp_path: Path, monkeypatch, maker: str
) -> None:
    """Capture compiles in a cache of its own, which starts with the CPU ISA probe's libraries
    of the job's cache: without them Inductor builds the probe again (g++ once per ISA, about
    15 s on 2 cores) in every capture. Replay's (its store brings the probe) starts empty. The
    job's cache is left as it was."""
    job_cache = fresh_inductor_cache(tmp_path / "job-cache")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(job_cache))
    before = sorted(p.relative_to(job_cache) for p in job_cache.rglob("*"))
    private = kernel_files.PrivateCacheDir(with_isa_probes=PRIVATE_CACHES[maker])
    try:
        copied = {p.relative_to(private.path): p.read_bytes() for p in private.path.rglob("*") if p.is_file()}
    finally:
        private.restore()
    probes = {p.relative_to(job_cache): p.read_bytes() for p in kernel_files.isa_probe_files(job_cache)}
    assert any(name.suffix == ".so" for name in probes)
    assert copied == (probes if PRIVATE_CACHES[maker] else {})
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(job_cache)
    assert sorted(p.relative_to(job_cache) for p in job_cache.rglob("*")) == before


def test_hooks_come_out_and_decorator_form(store_path: Path) -> None:
    trace_logger = logging.getLogger("torch.__trace")
    handlers, level, propagate = list(trace_logger.handlers), trace_logger.level, trace_logger.propagate
    from torch._dynamo.convert_frame import _bytecode_hooks

    @dr.capture(store_path)
    def job() -> torch.Tensor:
        return torch.compile(lambda t: t.cos() + 1, backend="eager")(torch.zeros(2))

    assert torch.equal(job(), torch.full((2,), 2.0))  # the job's result passes through
    assert (trace_logger.handlers, trace_logger.level, trace_logger.propagate) == (handlers, level, propagate)
    assert len(_bytecode_hooks) == 0
    assert len(dr.Store.open(store_path).records(dr.CodeObject)) == 2


def test_gpt2_recompile_symbols_and_calls(store_path: Path, inspect) -> None:
    """transformers' GPT-2 (random weights): a longer sequence recompiles with the sequence
    dynamic; the record names the failed guard with both lengths, the symbol's input and final
    range, and counts the calls the dynamic entry served."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=128)).eval()
    compiled = torch.compile(model, backend="aot_eager")
    with dr.capture(store_path), torch.no_grad():
        for seq in (8, 12, 16):
            ids = torch.randint(0, 128, (2, seq))
            torch.testing.assert_close(compiled(ids).logits, model(ids).logits)
    listing = ls(inspect, store_path)
    ok = [c for c in listing["compiles"] if c["status"] == "ok"]
    assert [c["calls"] for c in ok] == [1, 2]  # 8; then 12 and 16 on the dynamic entry
    second = show(inspect, store_path, ok[1]["compile_id"], "--shapes")
    (cause,) = second["recompile_causes"]
    # transformers' forward is compiled through its `wrapper(*args, **kwargs)` decorator.
    assert (cause["source"], cause["expected"], cause["seen"]) == ("L['args'][0].size()[1]", "8", "12")
    (seq,) = [o for o in second["symbol_origins"] if o["source"] == "L['args'][0].size()[1]"]
    assert not seq["unbacked"] and seq["value"] == "12"
    (entry,) = [e for e in second["symbols"] if e["symbol"] == seq["symbol"]]
    assert entry["range"][0] == 2 and entry["hint"] == 12  # the 0/1 rule: 2 and above
