"""The jobs test_replay and test_replay_changes run in fresh processes: a workload of
jobs/replay_jobs.py captured once a build (shared_captures) and replayed with an empty Inductor
cache and, unless a test gives one, no C++ compiler on PATH."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from job_environment import job_environment
from shared_captures import copy_of, shared

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


def capture_script(
    store: Path, script: Path, *args: str, cache: Path, **extra: str
) -> subprocess.CompletedProcess[str]:
    """`python -m dynamo_replay capture -o STORE SCRIPT ARGS` in a fresh process with a compiler."""
    return run(
        "-m",
        "dynamo_replay",
        "capture",
        "-o",
        str(store),
        str(script),
        *args,
        env=job_env(cache, compiler=True, **extra),
    )


def replay_script(
    store: Path, script: Path, *args: str, cache: Path, strict: bool = False, **extra: str
) -> subprocess.CompletedProcess[str]:
    """`python -m dynamo_replay replay [--strict] STORE SCRIPT ARGS` in a fresh process without a compiler."""
    options = ["--strict"] if strict else []
    return run(
        "-m",
        "dynamo_replay",
        "replay",
        *options,
        str(store),
        str(script),
        *args,
        env=job_env(cache, compiler=False, **extra),
    )
