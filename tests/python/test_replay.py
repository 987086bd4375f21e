"""Replay of real torch.compile jobs in fresh processes.

Each job is captured once in its own process, then replayed in another one with an empty
Inductor cache and no C++ compiler on PATH; the outputs must be bitwise equal to the captured
run's. Captured by default, no frame PyTorch could save may compile (no Dynamo frame traced, no
compile callback, no FX-graph or AOTAutograd cache miss), and each frame it could not save is
traced alone, named with the reason, its graphs taken from the store; captured with
--no-precompile, Dynamo traces again but AOTAutograd, Inductor and the compiler are skipped.
Calls outside what was captured must compile normally, or fail in strict mode with the guard
that rejected them.
About 7 minutes (Inductor compiles and fresh processes) on a 2-core machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from job_environment import job_environment  # noqa: E402
from shared_captures import copy_of, shared  # noqa: E402

JOB = Path(__file__).parent / "jobs" / "replay_jobs.py"
KEY = "replay-test-key"


def run(*args: str, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout)


def job_env(cache: Path, *, compiler: bool, **extra: str) -> dict[str, str]:
    """A fresh process's environment: its own Inductor cache, and without compiler, a PATH that
    holds only the Python environment's bin directory."""
    env = job_environment(cache)
    if not compiler:
        env["PATH"] = str(Path(sys.executable).parent)
        assert shutil.which("g++", path=env["PATH"]) is None and shutil.which("c++", path=env["PATH"]) is None
    env.update(extra)
    return env


class Captured:
    """A workload captured with options (once a build: shared_captures), copied into root, where
    its replays write."""

    def __init__(self, root: Path, workload: str, *options: str) -> None:
        self.root, self.workload = root, workload
        made = shared(
            " ".join(["replay", workload, *options]), lambda f: _capture(f, workload, options), inputs=[__file__]
        )
        copy_of(made, root)
        self.store = root / f"{workload}.dynrep"
        self.stderr = (root / "capture.stderr").read_text()
        self.outputs = torch.load(root / "capture" / "outputs.pt")

    def replay(
        self, name: str, *options: str, compiler: bool = False, new_shape: bool = False, **extra: str
    ) -> tuple[subprocess.CompletedProcess[str], Path]:
        out = self.root / name
        job_args = [str(JOB), self.workload, str(out)] + (["--new-shape"] if new_shape else [])
        result = run(
            "-m",
            "dynamo_replay",
            "replay",
            *options,
            str(self.store),
            *job_args,
            env=job_env(self.root / f"{name}-cache", compiler=compiler, **extra),
        )
        return result, out


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    stores: dict[str, Captured] = {}

    def get(workload: str, *options: str) -> Captured:
        key = " ".join([workload, *options])
        if key not in stores:
            stores[key] = Captured(tmp_path_factory.mktemp(workload), workload, *options)
        return stores[key]

    return get


def _capture(folder: Path, workload: str, options: tuple[str, ...]) -> None:
    extra = {"DYNAMO_REPLAY_KEY": KEY} if workload == "graph_break" else {}
    result = run(
        "-m",
        "dynamo_replay",
        "capture",
        *options,
        "-o",
        str(folder / f"{workload}.dynrep"),
        str(JOB),
        workload,
        str(folder / "capture"),
        env=job_env(folder / "capture-cache", compiler=True, **extra),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (folder / "capture.stderr").write_text(result.stderr)
    shutil.rmtree(folder / "capture-cache", ignore_errors=True)


def compiler_report(out: Path) -> dict:
    return json.loads((out / "compiler.json").read_text())


def assert_bitwise_equal(expected: list, actual: list) -> None:
    assert len(expected) == len(actual)
    for want, got in zip(expected, actual):
        assert want.dtype == got.dtype and want.shape == got.shape
        assert torch.equal(want, got)


@pytest.mark.parametrize("workload", ["gpt", "graph_break", "ladder", "hf_gpt2", "hf_t5", "unnamed_code"])
def test_replay_compiles_nothing_and_matches_bitwise(captured, workload: str) -> None:
    job = captured(workload)
    extra = {"DYNAMO_REPLAY_KEY": KEY} if workload == "graph_break" else {}
    result, out = job.replay("replay", "--strict", **extra)
    assert result.returncode == 0, result.stderr[-3000:]
    report = compiler_report(out)
    assert report["compile_starts"] == [] and report["frames_traced"] == [] and report["unique_graphs"] == 0
    assert report["fxgraph_cache_miss"] == 0 and report["autograd_cache_miss"] == 0
    assert report["dynamo_cache_hit"] >= 1
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))
    assert "compiled here: 0 frames (0.00 s)" in result.stderr
    assert "compile time saved" in result.stderr
    # Inductor's CPU vector-ISA probe (a compiler and a Python child per ISA) does not run on
    # the CPU flags of the capture (test_isa_probe_... fakes others).
    assert "CPU ISA probe reused" in result.stderr and report["isa_checks"] == []


# The frames of each training job that PyTorch's precompile cannot save, and the words that say
# why: none. transformers' loss_function (a property) and a dataclass __init__ (generated code)
# are named through the function that holds their code (the unnamed_code workload proves they
# run compiled). The optimizer step is saved and replayed (tests/python/test_training.py).
NOT_SAVED: dict[str, dict[str, str]] = {"train": {}, "hf_train": {}}


@pytest.mark.parametrize("workload", ["train", "hf_train"])
def test_frames_precompile_cannot_save_are_named_and_traced_alone(captured, workload: str) -> None:
    """A whole training step: the frames PyTorch could not save are traced at replay, each named
    with its reason at capture and at replay, and no other (the optimizer's step replays). The
    losses and trained parameters are bitwise those of the captured run."""
    job = captured(workload)
    for frame, reason in NOT_SAVED[workload].items():
        assert f"not saved for replay without Dynamo, compiles at replay: {frame} (" in job.stderr
        assert reason in job.stderr
    result, out = job.replay("replay")
    assert result.returncode == 0, result.stderr[-3000:]
    report = compiler_report(out)
    assert set(report["frames_traced"]) == set(NOT_SAVED[workload])
    assert "CLASS_MATCH guard cannot be serialized" not in job.stderr + result.stderr
    assert report["fxgraph_cache_miss"] == 0 and report["autograd_cache_miss"] == 0
    assert "not compiled during capture" not in result.stderr
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))


# Each way a frame compiles at replay though the store holds its graphs, one line each:
# (workload, capture options, why its frame compiles here).
FALLBACKS = {
    "not saved, and recompiled": ("local_class", (), "class is defined inside a function"),
    "refused at install": ("train_opaque", (), "(ID_MATCH) has no description that another process can compare"),
    "captured without precompile": ("gpt", ("--no-precompile",), "traced again (captured with --no-precompile)"),
}


@pytest.mark.parametrize("case", FALLBACKS)
def test_a_frame_compiled_at_replay_takes_every_graph_from_the_store(captured, case: str) -> None:
    """At least what PyTorch's warm caches give: a frame Dynamo traces again at replay finds
    every AOTAutograd entry and kernel it needs in the store, so Inductor generates no code and
    no compiler runs (none is on PATH)."""
    workload, options, why = FALLBACKS[case]
    job = captured(workload, *options)
    result, out = job.replay(f"fallback-{workload}")
    assert result.returncode == 0, result.stderr[-3000:]
    report = compiler_report(out)
    assert report["frames_traced"] and why in result.stderr
    # (AOTAutograd may also look up a key it never stores, a miss that generates nothing.)
    assert report["autograd_cache_hit"] >= 1 and report["fxgraph_cache_miss"] == 0
    assert report["inductor_codegens"] == 0, "a frame compiled at replay generated code the store holds"
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))


def test_a_saved_graph_that_does_not_load_makes_its_frame_compile_and_the_job_runs(captured) -> None:
    """A training step of several frames and resume functions, its first saved graph failing to
    load at install: that frame compiles, named, and nothing else of the package is dropped or
    left calling a global that was not installed."""
    job = captured("train")
    out = job.root / "unloadable"
    result = run(
        str(Path(__file__).parent / "jobs" / "replay_graph_unloadable.py"),
        "replay",
        str(job.store),
        str(JOB),
        "train",
        str(out),
        env=job_env(job.root / "unloadable-cache", compiler=True),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "its compiled graph does not load (RuntimeError: a saved graph that does not load)" in result.stderr
    traced = compiler_report(out)["frames_traced"]
    # That frame, and the resume functions its new compile made (named after it); no other.
    assert traced and all(traced[0] in name for name in traced) and "step" not in traced, traced
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))


def test_no_precompile_capture_replays_without_aot_inductor_or_compiler(captured) -> None:
    """A whole training step (zero_grad, forward, backward, optimizer step), captured with
    --no-precompile: Dynamo traces each frame again, and every graph comes from the store."""
    job = captured("train", "--no-precompile")
    result, out = job.replay("replay")
    assert result.returncode == 0, result.stderr[-3000:]
    report = compiler_report(out)
    assert "step" in report["frames_traced"]
    # Inductor's graphs (forward, backward, optimizer step) all come from the store. Of the
    # AOTAutograd entries, two are found (training graph, optimizer step); the graph of
    # `return loss.detach()` calls nothing, so Inductor builds nothing and PyTorch caches nothing.
    assert report["fxgraph_cache_miss"] == 0 and report["fxgraph_cache_hit"] == 3
    assert report["autograd_cache_hit"] == 2 and report["autograd_cache_miss"] == 1
    assert "traced again (captured with --no-precompile)" in result.stderr
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))


def test_isa_probe_is_reused_only_on_the_same_cpu_flags(captured, tmp_path: Path) -> None:
    """Inductor's CPU vector-ISA probe is reused at replay only on the CPU's flags of the
    capture (test_replay_compiles_nothing_... shows it reused): other flags refuse the store,
    and the job compiles as usual with the probe, never with the captured kernels."""
    job = captured("gpt")
    out = tmp_path / "faked"
    code = (
        "import sys\nfrom dynamo_replay import fingerprint, __main__ as cli\n"
        "fingerprint.cpu_isa_flags = lambda: 'x86_64,avx2,avx512,amx_tile'\n"
        f"sys.exit(cli.main(['replay', {str(job.store)!r}, {str(JOB)!r}, 'gpt', {str(out)!r}]))"
    )
    result = run("-c", code, env=job_env(tmp_path / "faked-cache", compiler=True))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "cpu.flags: captured" in result.stderr and "now x86_64,avx2,avx512,amx_tile" in result.stderr
    report = compiler_report(out)
    assert report["compile_starts"] and report["isa_checks"]  # compiled as usual, probe included
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))


def test_new_shape_compiles_normally_and_is_right(captured) -> None:
    job = captured("ladder")
    result, out = job.replay("new-shape", compiler=True, new_shape=True)
    assert result.returncode == 0, result.stderr[-3000:]
    report = compiler_report(out)
    assert report["compile_starts"] == ["DYNAMO 1/0"] and report["frames_traced"] == ["scale_and_shift"]
    outputs = torch.load(out / "outputs.pt")
    assert_bitwise_equal(job.outputs, outputs[:4])
    x = torch.linspace(-1, 1, 32).reshape(4, 8)
    torch.testing.assert_close(outputs[4], torch.relu(x * 3.0) + x.sum())
    assert "compiled here: 1 frames" in result.stderr
    assert "scale_and_shift" in result.stderr and "failed the guards of every saved entry" in result.stderr


def test_strict_refuses_to_compile_and_names_the_guard(captured) -> None:
    result, out = captured("ladder").replay("strict-new-shape", "--strict", new_shape=True)
    assert result.returncode != 0
    assert "dynamo-replay: strict replay: scale_and_shift (" in result.stderr
    assert "would compile: the call failed the guards of every saved entry" in result.stderr
    assert "rank mismatch. expected 1, actual 2" in result.stderr and "Traceback" not in result.stderr
    assert not (out / "outputs.pt").exists()


def test_environment_variable_replays_an_unmodified_job(captured, tmp_path: Path) -> None:
    job = captured("gpt")
    out = tmp_path / "out"
    result = run(
        str(JOB), "gpt", str(out), env=job_env(tmp_path / "cache", compiler=False, DYNAMO_REPLAY=str(job.store))
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert compiler_report(out)["compile_starts"] == []
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))
    assert f"dynamo-replay: {job.store}" in result.stderr


def test_changed_config_is_refused_and_the_job_compiles_normally(captured) -> None:
    job = captured("graph_break")
    result, out = job.replay("changed-config", compiler=True, TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE="1")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "not loaded: this process differs from the one captured" in result.stderr
    assert "config.inductor.max_autotune_pointwise: captured False, now True" in result.stderr
    assert compiler_report(out)["compile_starts"]  # compiled as usual
    assert_bitwise_equal(job.outputs, torch.load(out / "outputs.pt"))


def test_wrong_key_is_refused_before_loading(captured) -> None:
    job = captured("graph_break")
    result, out = job.replay("wrong-key", "--strict", DYNAMO_REPLAY_KEY="not-the-key")
    assert result.returncode != 0
    assert (
        result.stderr.startswith("dynamo-replay: ")
        and "not loaded: the store's signature does not verify" in result.stderr
    )
    assert "Traceback" not in result.stderr
    assert not (out / "outputs.pt").exists()


def test_changed_source_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        "import torch\ndef double(x):\n    return x * 2\nprint(torch.compile(double)(torch.ones(3)).tolist())\n"
    )
    store = tmp_path / "job.dynrep"
    env = job_env(tmp_path / "cache", compiler=True)
    assert run("-m", "dynamo_replay", "capture", "-o", str(store), str(script), env=env).returncode == 0
    script.write_text(script.read_text().replace("x * 2", "x + x"))
    result = run(
        "-m",
        "dynamo_replay",
        "replay",
        "--strict",
        str(store),
        str(script),
        env=job_env(tmp_path / "c2", compiler=False),
    )
    assert result.returncode != 0
    assert f"source of double ({script}:2-3) changed since capture" in result.stderr


LOCAL_CLASS_JOB = """\
import sys
import torch


def main():
    class Scale:  # not at module level: PyTorch 2.13 cannot save guards that name it
        factor = 3.0

    scale = Scale()
    compiled = torch.compile(lambda x: x * scale.factor)
    torch.save(compiled(torch.arange(4.0)), sys.argv[1])


main()
"""


def test_frame_whose_guards_cannot_be_saved_compiles_at_replay_with_its_graphs_from_the_store(tmp_path: Path) -> None:
    """PyTorch 2.13 cannot save guards that name a class defined inside a function: capture
    says so in one line and the job finishes; replay traces that frame alone with Dynamo,
    skipping AOTAutograd, Inductor and the C++ compiler, with the same output."""
    script = tmp_path / "job.py"
    script.write_text(LOCAL_CLASS_JOB)
    store = tmp_path / "job.dynrep"
    captured = run(
        "-m",
        "dynamo_replay",
        "capture",
        "-o",
        str(store),
        str(script),
        str(tmp_path / "b.pt"),
        env=job_env(tmp_path / "c1", compiler=True),
    )
    assert captured.returncode == 0, captured.stderr[-3000:]
    assert "not saved for replay without Dynamo, compiles at replay: <lambda> (" in captured.stderr
    assert "its guards check an object whose class is defined inside a function" in captured.stderr
    replayed = run(
        "-m",
        "dynamo_replay",
        "replay",
        str(store),
        str(script),
        str(tmp_path / "c.pt"),
        env=job_env(tmp_path / "c2", compiler=False),
    )
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    assert torch.equal(torch.load(tmp_path / "c.pt"), torch.arange(4.0) * 3.0)
    assert "compiled here: 1 frames" in replayed.stderr
    assert "<lambda>" in replayed.stderr and "class is defined inside a function" in replayed.stderr


DECORATED_JOB = """\
import functools
import sys

import torch


def capture_outputs(func):  # the shape of transformers' output-capturing decorator
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    @capture_outputs
    def forward(self, x, scale=2.0):  # a default: Dynamo guards the wrapped function's __defaults__
        return torch.relu(self.lin(x)) * scale


torch.manual_seed(0)
if len(sys.argv) > 2:  # as PyTorch alone: where it saved the wrapped function as missing, its guards do not load
    from torch._dynamo.guards import _Missing
    from dynamo_replay._torch import install as _torch_install

    def _leave_missing(state, *args):  # and say whether this release saved anything as missing
        scopes = (state.output_graph.local_scope, state.output_graph.global_scope)
        missing = any(isinstance(v, _Missing) for scope in scopes for v in scope.values())
        with open(sys.argv[1] + ".missing", "w") as out:
            out.write(str(int(missing)))
        return []
    _torch_install._fill_missing = _leave_missing
with torch.no_grad():
    torch.save(torch.compile(Net())(torch.ones(4, 8)), sys.argv[1])
"""


def test_decorated_forward_replays_and_a_frame_whose_guards_do_not_load_compiles(tmp_path: Path) -> None:
    """PyTorch saves the function a decorator wraps as missing, and its guards then fail to
    load (the crash of transformers' models under PyTorch's own precompile). Replay rebuilds it
    from the live function: nothing compiles. Where it cannot, that frame compiles as usual,
    named with the cause, and the job finishes with the same output."""
    script = tmp_path / "job.py"
    script.write_text(DECORATED_JOB)
    store = tmp_path / "job.dynrep"
    captured = run(
        "-m",
        "dynamo_replay",
        "capture",
        "-o",
        str(store),
        str(script),
        str(tmp_path / "a.pt"),
        env=job_env(tmp_path / "c1", compiler=True),
    )
    assert captured.returncode == 0, captured.stderr[-3000:]
    expected = torch.load(tmp_path / "a.pt")
    replayed = run(
        "-m",
        "dynamo_replay",
        "replay",
        "--strict",
        str(store),
        str(script),
        str(tmp_path / "b.pt"),
        env=job_env(tmp_path / "c2", compiler=False),
    )
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    assert "compiled here: 0 frames" in replayed.stderr
    assert torch.equal(torch.load(tmp_path / "b.pt"), expected)
    unfilled = run(
        "-m",
        "dynamo_replay",
        "replay",
        str(store),
        str(script),
        str(tmp_path / "c.pt"),
        "unfilled",
        env=job_env(tmp_path / "c3", compiler=False),
    )
    assert unfilled.returncode == 0, unfilled.stderr[-3000:]
    assert torch.equal(torch.load(tmp_path / "c.pt"), expected)
    if (tmp_path / "c.pt.missing").read_text() == "0":  # this PyTorch saved the wrapped function itself (2.15)
        assert "compiled here: 0 frames" in unfilled.stderr
        return
    assert "compiled here: 1 frames" in unfilled.stderr
    assert "wrapper (" in unfilled.stderr and "its saved guards do not load" in unfilled.stderr
    assert "'_Missing' object has no attribute '__defaults__'" in unfilled.stderr
    strict = run(
        "-m",
        "dynamo_replay",
        "replay",
        "--strict",
        str(store),
        str(script),
        str(tmp_path / "d.pt"),
        "unfilled",
        env=job_env(tmp_path / "c4", compiler=False),
    )
    assert strict.returncode != 0 and not (tmp_path / "d.pt").exists()
    assert (
        "dynamo-replay: strict replay: a saved frame of" in strict.stderr
        and "its saved guards do not load" in strict.stderr
    )


SWAPPED_JOB = Path(__file__).parent / "jobs" / "swapped_job.py"


@pytest.fixture(scope="module")
def swapped_store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("swapped")
    store = root / "swapped.dynrep"
    result = run(
        "-m",
        "dynamo_replay",
        "capture",
        "-o",
        str(store),
        str(SWAPPED_JOB),
        str(root / "out.pt"),
        env=job_env(root / "cache", compiler=True),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "replay re-checks the" in result.stderr  # one line, not a warning per guard
    assert "is dropped with caching_precompile" not in result.stderr
    return store


# What each change does to the saved frame: the guards PyTorch's precompile dropped (identity
# of a global function, a module attribute, a closure cell) and a class's methods are re-checked
# by dynamo-replay; a global float is still guarded by PyTorch.
SWAPS = {
    "global_function": "G['ACT'] was function __main__.relu_fn",
    "method": "type(L['net']) was class __main__.Net contents",
    "module_attribute": "G['swap_helpers'].act was callable torch._VariableFunctionsClass.relu",
    "closure": "L['inner'] was callable torch._VariableFunctionsClass.relu",
    "global_float": "the call failed the guards of every saved entry",
}


@pytest.mark.parametrize("swap", SWAPS)
def test_changed_global_method_module_attribute_or_closure_gives_the_right_answer(
    swapped_store: Path, swap: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.pt"
    result = run(
        "-m",
        "dynamo_replay",
        "replay",
        str(swapped_store),
        str(SWAPPED_JOB),
        str(out),
        env=job_env(tmp_path / "cache", compiler=True, SWAP=swap),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    compiled, eager = torch.load(out)
    assert torch.equal(compiled, eager)
    assert "compiled here: 1 frames" in result.stderr and SWAPS[swap] in result.stderr


def test_without_the_re_check_the_swapped_global_gives_a_wrong_answer(swapped_store: Path, tmp_path: Path) -> None:
    """What the re-check prevents: PyTorch's saved frame alone returns the captured process's
    answer for a swapped global function."""
    out = tmp_path / "out.pt"
    checks_off = Path(__file__).parent / "jobs" / "replay_checks_off.py"
    result = run(
        str(checks_off),
        "replay",
        str(swapped_store),
        str(SWAPPED_JOB),
        str(out),
        env=job_env(tmp_path / "cache", compiler=True, SWAP="global_function"),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    compiled, eager = torch.load(out)
    assert not torch.equal(compiled, eager)
    assert "compiled here: 0 frames" in result.stderr


def test_saved_frames_are_installed_at_the_first_call_and_once(tmp_path: Path) -> None:
    """A compiled function's saved frames cost nothing until it is first called, and a function
    compiled twice has them installed once; a compiled function never called installs nothing."""
    job = Path(__file__).parent / "jobs" / "lazy_install.py"
    store, out = tmp_path / "job.dynrep", tmp_path / "out.json"
    captured = run(str(job), "capture", str(store), str(out), env=job_env(tmp_path / "c1", compiler=True))
    assert captured.returncode == 0, captured.stderr[-3000:]
    replayed = run(str(job), "replay", str(store), str(out), env=job_env(tmp_path / "c2", compiler=False))
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["installed"] == [0, 1, 1] and result["compiled"] == [] and result["right"]
