"""Captures made once and shared by every test that reads them.

A capture is a job run through a compile from scratch (a minute for a real model, most of it
g++ building Inductor's kernels), and its result depends only on the job, the package and the
PyTorch release. So a fixture's capture is kept under build/test-captures, keyed by all three,
and made again only when one changes: pytest's workers share it (a lock per capture: the second
worker waits for the first), and so do the tiers of one build (CI's `make test`, then
`make test-slow` on the same release, read the captures the first one made).

What a capture writes is the same whether it was made now or by an earlier run of this build:
its store, the job's outputs and the capture's own report (a test that reads the capture's
messages reads them from the file its fixture kept). A fixture whose tests change a store (an
update, an eviction) takes a copy (`copy_of`).

DYNREP_TEST_FRESH_CAPTURES=1 makes every capture again, in a folder of this run only.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from dynamo_replay.update.files import UpdateError, store_lock

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent.parent / "build" / "test-captures"
# A build's folder unused this long is one an earlier build left: removed on the next run.
STALE_AFTER_S = 6 * 3600
# How long a worker waits for another one making the same capture: longer than any capture takes
# (its jobs time out at 600 s), shorter than pytest's own timeout (1500 s), so a stuck maker
# fails the waiting test with its name instead of hanging it.
LOCK_WAIT_S = 1200


def shared(name: str, make: Callable[[Path], None], *, inputs: Iterable[Path | str] = ()) -> Path:
    """The folder that make(folder) filled, for this build: made by the first caller (in any
    process), read by the others. `name` says what was captured and how (every option the
    capture takes); `inputs` are files make reads beyond the package and the test helpers (the
    test file that defines it)."""
    folder = capture_folder(name, inputs)
    done = folder / ".done"
    if done.exists():
        return folder
    try:
        with store_lock(str(folder), wait=LOCK_WAIT_S):  # another worker making it: wait for it
            if not done.exists():
                shutil.rmtree(folder, ignore_errors=True)  # what a killed run left half made
                folder.mkdir()
                make(folder)
                done.touch()
    except UpdateError:  # only the wait raises it: make runs jobs in processes of their own
        raise TimeoutError(f"shared capture {name!r}: another worker held it for {LOCK_WAIT_S} s") from None
    return folder


def capture_folder(name: str, inputs: Iterable[Path | str] = ()) -> Path:
    """Where this build keeps the capture `name` made from `inputs`."""
    key = hashlib.sha256("\0".join([name, *(_digest(Path(p)) for p in inputs)]).encode()).hexdigest()[:16]
    return _build_folder() / f"{_safe(name)}-{key}"


def lock_file(folder: Path) -> Path:
    """The lock a capture's maker holds: the file store_lock(folder) takes."""
    return Path(f"{folder}.lock")


def copy_of(folder: Path, destination: Path) -> Path:
    """A copy of a shared folder that its tests may change."""
    shutil.copytree(folder, destination, ignore=shutil.ignore_patterns(".done"), dirs_exist_ok=True)
    return destination


@functools.cache
def _build_folder() -> Path:
    if os.environ.get("DYNREP_TEST_FRESH_CAPTURES"):
        return Path(tempfile.mkdtemp(prefix="dynrep-test-captures-"))
    release = ROOT / _torch_release()
    folder = release / _build_fingerprint()
    folder.mkdir(parents=True, exist_ok=True)
    for other in release.iterdir():  # earlier builds' captures, not read for hours
        if other != folder and time.time() - other.stat().st_mtime > STALE_AFTER_S:
            shutil.rmtree(other, ignore_errors=True)
    os.utime(folder)
    return folder


def _torch_release() -> str:
    from importlib.metadata import version

    return "torch-" + version("torch")


@functools.cache
def _build_fingerprint() -> str:
    """The package (its Python and its built extension), the interpreter, the test helpers and
    jobs: a change to any of them is a new build whose captures are made again."""
    import dynamo_replay
    import dynamo_replay._core

    files = [
        *_sources(Path(dynamo_replay.__file__).parent),
        *sorted(Path(dynamo_replay._core.__file__).parent.glob("*.so")),
        *(p for p in _sources(TESTS) if not p.name.startswith("test_")),
    ]
    digest = hashlib.sha256(sys.executable.encode())
    for path in files:
        digest.update(f"{path}\0{_digest(path)}\0".encode())
    return digest.hexdigest()[:16]


def _sources(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def _digest(path: Path) -> str:
    if path.suffix == ".so":  # tens of megabytes: its size and time say when it was built
        stat = path.stat()
        return f"{stat.st_size}:{stat.st_mtime_ns}"
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80]
