"""The suite's shared captures (shared_captures.py): a capture is made once and read after, one
that failed half way is made again, and a worker waiting on another that never finishes fails
with the capture's name instead of hanging. About 2 s, no torch job."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

import shared_captures


@pytest.fixture
def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(shared_captures, "_build_folder", lambda: tmp_path)
    return tmp_path


def test_made_once_then_read(build: Path) -> None:
    made = []

    def make(folder: Path) -> None:
        made.append(folder)
        (folder / "store").write_text("bytes")

    first = shared_captures.shared("job --option", make)
    second = shared_captures.shared("job --option", make)
    assert first == second and len(made) == 1 and (second / "store").read_text() == "bytes"
    other = shared_captures.shared("job --other-option", make)
    assert other != first and len(made) == 2  # another option is another capture


def test_a_capture_that_failed_half_way_is_made_again(build: Path) -> None:
    def broken(folder: Path) -> None:
        (folder / "half").write_text("")
        raise RuntimeError("the job died")

    with pytest.raises(RuntimeError):
        shared_captures.shared("job", broken)
    folder = shared_captures.shared("job", lambda f: (f / "store").write_text("whole"))
    assert (folder / "store").read_text() == "whole" and not (folder / "half").exists()


def test_a_copy_leaves_the_shared_capture_unchanged(build: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = shared_captures.shared("job", lambda f: (f / "store").write_text("kept"))
    copy = shared_captures.copy_of(folder, tmp_path_factory.mktemp("copy"))
    (copy / "store").write_text("changed by a test")
    assert (folder / "store").read_text() == "kept"


def test_a_stuck_maker_fails_the_waiting_worker_by_name(build: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shared_captures, "LOCK_WAIT_S", 1)

    def make(folder: Path) -> None:
        raise AssertionError("made while another worker held the lock")

    # Another worker making the same capture, and never finishing: it holds the lock.
    with open(shared_captures.lock_file(shared_captures.capture_folder("stuck")), "w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        with pytest.raises(TimeoutError, match="shared capture 'stuck'"):
            shared_captures.shared("stuck", make)
    # Released, the next caller makes it.
    folder = shared_captures.shared("stuck", lambda f: (f / "store").write_text("made"))
    assert (folder / "store").read_text() == "made"
