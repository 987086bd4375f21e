"""Shared fixtures: paths to the committed data, fresh store paths, and the inspect CLI."""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from dynamo_replay.tools import inspect_executable

DATA = Path(__file__).resolve().parent.parent / "data"

# Every test process, and the jobs it starts, get an empty Inductor cache: what an earlier run
# left in the shared one (compiled graphs, Dynamo packages) must not decide what compiles here.
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="dynrep-test-inductor-")
atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)


@pytest.fixture(autouse=True)
def _precompile_settings_put_back():
    """Capture and replay leave PyTorch's caching precompile on for the rest of the process
    (as a job needs); each test starts from PyTorch's defaults."""
    yield
    import sys

    if "torch._dynamo.config" in sys.modules:
        from dynamo_replay import _torch

        for module_name, attr, _ in _torch.PRECOMPILE_SETTINGS:
            setattr(sys.modules.get(module_name) or __import__(module_name, fromlist=["_"]), attr, False)


@pytest.fixture(scope="session")
def why_stores(tmp_path_factory) -> dict[str, dict[str, Path]]:
    """{program: {"broken": store, "fixed": store}} for every why-program (why_programs.py),
    captured once a session for test_why_programs and test_why."""
    from why_programs import why_stores as capture_why_stores

    return capture_why_stores(tmp_path_factory.mktemp("why"))


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "job.dynrep"


@pytest.fixture
def inspect():
    """Runs replay-inspect with the given arguments; returns the CompletedProcess."""

    def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([inspect_executable(), *args], capture_output=True, text=True, errors="replace", cwd=cwd,
                              timeout=60)

    return run
