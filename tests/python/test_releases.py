"""The release matrix: which PyTorch versions get an adapter, and what a job on any other
release sees (capture records nothing, replay refuses, one warning each, the job runs as usual).
The unknown release is faked in a fresh process by setting torch.__version__ before
dynamo-replay is imported, which is when it chooses its adapter (PyTorch's plugin autoload,
which would import it inside `import torch`, is off there). About 20 s."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dynamo_replay._torch import releases

# version -> the adapter's release line, or None (outside the matrix). One line per case.
VERSIONS = {
    "2.13.0": "2.13",
    "2.13.0+cpu": "2.13",
    "2.14.1+cu130": "2.14",
    "2.14.0": "2.14",
    "2.15.0+cu132": "2.15",
    "2.15.1": "2.15",
    "2.15.0a0+git1234": "2.15",
    "2.16.0.dev20261101+cpu": None,
    "2.12.1": None,
    "3.0.0": None,
    "not-a-version": None,
}


@pytest.mark.parametrize("version", VERSIONS)
def test_each_version_gets_its_release_adapter(version: str) -> None:
    found = releases.release_for(version)
    assert (found.line if found else None) == VERSIONS[version]


def test_this_torch_is_in_the_matrix() -> None:
    """The suite runs on supported releases only (make test TORCH=...)."""
    import torch

    assert releases.CURRENT is not None and torch.__version__ == releases.VERSION
    assert torch.__version__.startswith(releases.CURRENT.tested), "the suite runs on the version the matrix tests"


def test_a_later_release_only_adds_guard_kinds() -> None:
    """An adapter adds rows for kinds 2.13 lacks; it never changes one of 2.13's rows, and the
    running release's table holds its own additions."""
    from dynamo_replay._torch import guards

    every = guards.guard_table_every_release()
    assert releases.RELEASES["2.13"].guard_kinds == {}
    for release in releases.RELEASES.values():
        for kind, row in release.guard_kinds.items():
            assert every[kind][2] != "2.13", f"{release.line} changes 2.13's row of {kind}"
            assert every[kind][:2] == row
    assert set(releases.CURRENT.guard_kinds) <= set(guards.GUARD_TABLE)


_JOB = textwrap.dedent("""
    import sys, warnings
    import torch
    torch.__version__ = "2.16.0"  # before dynamo-replay chooses its adapter
    import dynamo_replay

    def f(x):
        return torch.sin(x) * 2

    x = torch.linspace(0, 1, 8)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with dynamo_replay.{what}(sys.argv[1]):
            out = torch.compile(f, backend="eager")(x)
    assert torch.equal(out, f(x))
    for warning in seen:
        print(type(warning.message).__name__, warning.message)
""")


@pytest.fixture
def redis_url(tmp_path: Path):
    """A fresh redis-server on a free loopback port; yields a fleet URL on it."""
    from redis_server import free_port, start_redis

    port = free_port()
    process = start_redis(port, tmp_path, "--appendonly", "no")
    yield f"redis://127.0.0.1:{port}/0?name=job&wait=20"
    process.kill()
    process.wait()


# One line per way to turn dynamo-replay on: (context manager, store, the warning's words).
UNKNOWN_RELEASE = {
    "capture": (
        "capture",
        "file",
        "CaptureWarning dynamo-replay: PyTorch 2.16.0 is not a release dynamo-replay supports",
    ),
    "replay": ("replay", "kept store", "ReplayWarning dynamo-replay: "),
    "fleet replay": ("replay", "redis", "ReplayWarning dynamo-replay: fleet "),
    "fleet capture": ("capture", "redis", "CaptureWarning dynamo-replay: PyTorch 2.16.0 is not a release"),
}


@pytest.mark.parametrize("case", UNKNOWN_RELEASE)
def test_an_unknown_release_runs_the_job_as_usual_with_one_warning(
    tmp_path: Path, case: str, data_dir: Path, request
) -> None:
    what, where, warning = UNKNOWN_RELEASE[case]
    store = {
        "file": lambda: tmp_path / "job.dynrep",
        "kept store": lambda: data_dir / "capture-1.5" / "every-record.dynrep",
        "redis": lambda: request.getfixturevalue("redis_url"),
    }[where]()
    script = tmp_path / "job.py"
    script.write_text(_JOB.format(what=what))
    # Without PyTorch's plugin autoload, which imports dynamo-replay inside `import torch`.
    env = {k: v for k, v in os.environ.items() if not k.startswith("DYNAMO_REPLAY")}
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    done = subprocess.run(
        [sys.executable, str(script), str(store)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.endswith("Warning") or "Warning " in line]
    assert len(lines) == 1, done.stdout
    assert lines[0].startswith(warning) and "PyTorch 2.16.0 is not a release" in lines[0], done.stdout
    assert "2.13.0, 2.14.1, 2.15.0" in done.stdout
    if where == "file":
        assert not store.exists(), "capture on an unknown release must not write a store"
