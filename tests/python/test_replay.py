"""Replay of real torch.compile jobs in fresh processes.

Each job is captured once in its own process, then replayed in another one with an empty
Inductor cache and no C++ compiler on PATH; the outputs must be bitwise equal to the captured
run's. Captured with --precompile, nothing may compile (no Dynamo frame traced, no compile
callback, no FX-graph or AOTAutograd cache miss); captured by default, Dynamo traces again but
AOTAutograd, Inductor and the compiler are skipped (no cache miss). Calls outside what was captured must compile normally, or fail in strict
mode with the guard that rejected them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

JOB = Path(__file__).parent / "jobs" / "replay_jobs.py"
KEY = "replay-test-key"
pytestmark = pytest.mark.slow


def run(*args: str, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout)


def job_env(cache: Path, *, compiler: bool, **extra: str) -> dict[str, str]:
    """A fresh process's environment: its own Inductor cache, and without compiler, a PATH that
    holds only the Python environment's bin directory."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DYNAMO_REPLAY", "TORCHINDUCTOR_"))}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
    if not compiler:
        env["PATH"] = str(Path(sys.executable).parent)
        assert shutil.which("g++", path=env["PATH"]) is None and shutil.which("c++", path=env["PATH"]) is None
    env.update(extra)
    return env


# The training step compiles an optimizer step, which PyTorch 2.13's caching precompile fails.
PRECOMPILE = {"gpt": True, "train": False, "graph_break": True, "ladder": True}


class Captured:
    def __init__(self, root: Path, workload: str) -> None:
        self.root, self.workload = root, workload
        self.store = root / f"{workload}.dynrep"
        extra = {"DYNAMO_REPLAY_KEY": KEY} if workload == "graph_break" else {}
        options = ["--precompile"] if PRECOMPILE[workload] else []
        result = run("-m", "dynamo_replay", "capture", *options, "-o", str(self.store), str(JOB), workload,
                     str(root / "capture"), env=job_env(root / "capture-cache", compiler=True, **extra))
        assert result.returncode == 0, result.stderr[-3000:]
        self.outputs = torch.load(root / "capture" / "outputs.pt")

    def replay(self, name: str, *options: str, compiler: bool = False, new_shape: bool = False,
               **extra: str) -> tuple[subprocess.CompletedProcess[str], Path]:
        out = self.root / name
        job_args = [str(JOB), self.workload, str(out)] + (["--new-shape"] if new_shape else [])
        result = run("-m", "dynamo_replay", "replay", *options, str(self.store), *job_args,
                     env=job_env(self.root / f"{name}-cache", compiler=compiler, **extra))
        return result, out


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    stores: dict[str, Captured] = {}

    def get(workload: str) -> Captured:
        if workload not in stores:
            stores[workload] = Captured(tmp_path_factory.mktemp(workload), workload)
        return stores[workload]

    return get


def compiler_report(out: Path) -> dict:
    return json.loads((out / "compiler.json").read_text())


def assert_bitwise_equal(expected: list, actual: list) -> None:
    assert len(expected) == len(actual)
    for want, got in zip(expected, actual):
        assert want.dtype == got.dtype and want.shape == got.shape
        assert torch.equal(want, got)


@pytest.mark.parametrize("workload", ["gpt", "graph_break", "ladder"])
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
    assert "compiled anyway: 0 (0.00 s)" in result.stderr
    assert "compile time saved" in result.stderr


def test_default_capture_replays_without_aot_inductor_or_compiler(captured) -> None:
    """A whole training step (zero_grad, forward, backward, optimizer step), captured without
    --precompile: Dynamo traces each frame again, and every graph comes from the store."""
    job = captured("train")
    result, out = job.replay("replay")
    assert result.returncode == 0, result.stderr[-3000:]
    report = compiler_report(out)
    assert "step" in report["frames_traced"]
    # Inductor's graphs (forward, backward, optimizer step) all come from the store. Of the
    # AOTAutograd entries, two are found (training graph, optimizer step); the graph of
    # `return loss.detach()` calls nothing, so Inductor builds nothing and PyTorch caches nothing.
    assert report["fxgraph_cache_miss"] == 0 and report["fxgraph_cache_hit"] == 3
    assert report["autograd_cache_hit"] == 2 and report["autograd_cache_miss"] == 1
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
    assert "compiled anyway: 1" in result.stderr
    assert "scale_and_shift" in result.stderr and "failed the guards of every saved entry" in result.stderr


def test_strict_refuses_to_compile_and_names_the_guard(captured) -> None:
    result, out = captured("ladder").replay("strict-new-shape", "--strict", new_shape=True)
    assert result.returncode != 0
    assert "fail_on_recompile" in result.stderr and "rank mismatch. expected 1, actual 2" in result.stderr
    assert not (out / "outputs.pt").exists()


def test_environment_variable_replays_an_unmodified_job(captured, tmp_path: Path) -> None:
    job = captured("gpt")
    out = tmp_path / "out"
    result = run(str(JOB), "gpt", str(out), env=job_env(tmp_path / "cache", compiler=False, DYNAMO_REPLAY=str(job.store)))
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
    assert "ReplayRefusedError" in result.stderr and "signature does not verify" in result.stderr
    assert not (out / "outputs.pt").exists()


def test_changed_source_is_refused(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text(
        "import torch\n"
        "def double(x):\n"
        "    return x * 2\n"
        "print(torch.compile(double)(torch.ones(3)).tolist())\n"
    )
    store = tmp_path / "job.dynrep"
    env = job_env(tmp_path / "cache", compiler=True)
    assert run("-m", "dynamo_replay", "capture", "-o", str(store), str(script), env=env).returncode == 0
    script.write_text(script.read_text().replace("x * 2", "x + x"))
    result = run("-m", "dynamo_replay", "replay", "--strict", str(store), str(script), env=job_env(tmp_path / "c2", compiler=False))
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


def test_job_precompile_cannot_save_still_replays_without_inductor(tmp_path: Path) -> None:
    """--precompile fails such a job the way PyTorch's precompile does, and says what to do;
    by default capture works and replay skips AOTAutograd, Inductor and the C++ compiler
    (Dynamo traces again), with the same output."""
    script = tmp_path / "job.py"
    script.write_text(LOCAL_CLASS_JOB)
    store = tmp_path / "job.dynrep"
    failed = run("-m", "dynamo_replay", "capture", "--precompile", "-o", str(store), str(script), str(tmp_path / "a.pt"),
                 env=job_env(tmp_path / "c0", compiler=True))
    assert failed.returncode != 0
    assert "caching precompile, which capture turned on\n  for precompile=True (--precompile)" in failed.stderr
    captured = run("-m", "dynamo_replay", "capture", "-o", str(store), str(script),
                   str(tmp_path / "b.pt"), env=job_env(tmp_path / "c1", compiler=True))
    assert captured.returncode == 0, captured.stderr[-3000:]
    replayed = run("-m", "dynamo_replay", "replay", str(store), str(script), str(tmp_path / "c.pt"),
                   env=job_env(tmp_path / "c2", compiler=False))
    assert replayed.returncode == 0, replayed.stderr[-3000:]
    assert torch.equal(torch.load(tmp_path / "c.pt"), torch.arange(4.0) * 3.0)
    assert "0 compiled functions" in replayed.stderr and "compiled anyway: 1" in replayed.stderr
