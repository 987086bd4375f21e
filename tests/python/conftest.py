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

# Every test process, and the jobs it starts, get an Inductor cache of their own, empty but for
# the CPU ISA probe (job_environment.fresh_inductor_cache): what an earlier run left in the
# shared one (compiled graphs, Dynamo packages) must not decide what compiles here.
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="dynrep-test-inductor-")
atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)
# One compile thread in every test process and job (job_environment keeps it): the suite already
# runs its files on every core (pytest-xdist), and Inductor's compile pool would start a process
# that imports torch in every job that compiles. A user's setting wins.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")


@pytest.fixture(scope="session", autouse=True)
def _worker_inductor_cache_probed():
    """The worker's Inductor cache starts like every job's (job_environment.fresh_inductor_cache):
    with the CPU vector-ISA probe's libraries, so no test pays g++ for them."""
    from job_environment import fresh_inductor_cache

    fresh_inductor_cache(os.environ["TORCHINDUCTOR_CACHE_DIR"])


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
def why_stores() -> dict[str, dict[str, Path]]:
    """{program: {"broken": store, "fixed": store}} for every why-program (why_programs.py),
    captured once a build (shared_captures) for test_why_programs and test_why."""
    from shared_captures import shared
    from why_programs import why_stores as capture_why_stores

    return capture_why_stores(shared("why-programs", capture_why_stores))


@pytest.fixture(scope="session")
def gpt2_recompile_break() -> tuple[Path, Path]:
    """jobs/gpt2_recompile_break.py captured once a build (shared_captures: GPT-2 with a
    recompile and a graph break), while PyTorch's own TORCH_TRACE handler logged the same run:
    (store, PyTorch's log). The export and report tests read it."""
    from shared_captures import shared

    folder = shared("gpt2-recompile-break", _capture_gpt2_recompile_break)
    return folder / "gpt2.dynrep", next((folder / "torch_trace").glob("dedicated_log_torch_trace_*.log"))


def _capture_gpt2_recompile_break(folder: Path) -> None:
    import sys

    job = Path(__file__).parent / "jobs" / "gpt2_recompile_break.py"
    subprocess.run(
        [sys.executable, str(job), str(folder / "gpt2.dynrep")],
        env={**os.environ, "TORCH_TRACE": str(folder / "torch_trace")},
        check=True,
        capture_output=True,
        timeout=300,
    )


@pytest.fixture(scope="session")
def graph_stores():
    """graph_jobs.JOBS' stores, each captured when a test first reads it (once a build, for every
    worker and tier: shared_captures)."""
    from graph_jobs import GraphStores
    from shared_captures import shared

    return GraphStores(lambda job, make: shared(f"graph-{job}", make))


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
        return subprocess.run(
            [inspect_executable(), *args], capture_output=True, text=True, errors="replace", cwd=cwd, timeout=60
        )

    return run


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Marks the slow tier and what runs on every release (tiers.py) before -m picks a tier,
    and puts the longest files first."""
    import tiers

    names = [item.nodeid.removeprefix("tests/python/") for item in items]
    # Only a whole file collected can show a stale line (a node id on the command line picks one test).
    stale = [] if any("::" in arg for arg in config.args) else tiers.unmatched(names)
    stale += [f for f in tiers.LONGEST_FIRST if not (Path(__file__).parent / f).exists()]
    if stale:
        raise pytest.UsageError(f"tests/python/tiers.py: {', '.join(stale)}: matches no test (renamed or removed?)")
    for item, name in zip(items, names):
        if tiers.is_slow(name):
            item.add_marker(pytest.mark.slow)
        if tiers.runs_on_every_release(name):
            item.add_marker(pytest.mark.every_release)
    # The longest files first (a stable sort: each file's tests keep their order).
    ranks = {id(item): tiers.start_rank(name) for item, name in zip(items, names)}
    items.sort(key=lambda item: ranks[id(item)])


def pytest_runtest_setup(item):
    """CI's guard against its hard stop (.ci/run sets DYNREP_TEST_DEADLINE, in seconds since the
    epoch, for its last step): a test that would start after it is skipped and says so, so that
    the run ends with its results instead of being killed without them. Unset, nothing changes."""
    import time

    deadline = os.environ.get("DYNREP_TEST_DEADLINE")
    if deadline and time.time() > float(deadline):
        pytest.skip(_NOT_STARTED)


_NOT_STARTED = "CI's time is spent (DYNREP_TEST_DEADLINE): not started"


def pytest_terminal_summary(terminalreporter):
    """The deadline's skips in one line, so a green tier that did not run whole says so."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if _NOT_STARTED in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(f"NOT RUN: {len(skipped)} tests not started, CI's time was spent:", red=True)
        for report in skipped:
            terminalreporter.write_line(f"  {report.nodeid}", red=True)
