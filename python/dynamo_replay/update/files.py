"""The files of a store that grows: the lock that lets one updater at a time replace it, the
usage file beside it (each saved frame's hits per start, each generation's last use), the
atomic replacement of a file, and what dead updaters left behind."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LOCK_WAIT_SECONDS = 300.0  # another updater writing a large store; past this, this update is dropped


class UpdateError(Exception):
    """Why an update was not written (the store is left exactly as it was)."""


def usage_path(path: str) -> Path:
    return Path(f"{path}.usage.json")


def delta_path(path: str) -> str:
    return f"{path}.update-{os.getpid()}"


@contextlib.contextmanager
def store_lock(path: str, wait: float = LOCK_WAIT_SECONDS) -> Iterator[None]:
    """The exclusive right to replace PATH (an flock, released if the holder dies)."""
    with open(f"{path}.lock", "a+b") as handle:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise UpdateError(f"another process held {path}.lock for {wait:g} s") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_usage(path: str) -> dict[str, Any]:
    """{"starts": N, "frames": {frame: {"hits": [per start, newest last], "last_used": t}},
    "generations": {"G": {"last_used": t, "created": t}}}; empty when absent or unreadable."""
    try:
        usage = json.loads(usage_path(path).read_text())
        return usage if isinstance(usage, dict) else {}
    except (OSError, ValueError):
        return {}


def record_usage(
    usage: dict[str, Any], hits: dict[str, int], generation_hits: dict[int, int], now: float, keep_starts: int = 16
) -> dict[str, Any]:
    """Adds one start's hits to the usage (the last keep_starts starts are kept per frame)."""
    usage = {
        "starts": int(usage.get("starts", 0)) + 1,
        "frames": dict(usage.get("frames", {})),
        "generations": dict(usage.get("generations", {})),
    }
    for frame in set(usage["frames"]) | set(hits):
        entry = dict(usage["frames"].get(frame, {"hits": [], "last_used": None}))
        entry["hits"] = (list(entry.get("hits", [])) + [hits.get(frame, 0)])[-keep_starts:]
        if hits.get(frame):
            entry["last_used"] = now
        usage["frames"][frame] = entry
    for generation, count in generation_hits.items():
        entry = dict(usage["generations"].get(str(generation), {}))
        if count:
            entry["last_used"] = now
        usage["generations"][str(generation)] = entry
    return usage


def write_atomically(path: Path, data: bytes) -> None:
    temp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    with open(temp, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, path)
    sync_directory(path.parent)


def sync_directory(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def remove_leftovers(path: str) -> None:
    """Temporary files of updaters that died (their pid is gone)."""
    base = Path(path)
    for leftover in base.parent.glob(f"{base.name}.*"):
        suffix = leftover.name[len(base.name) + 1 :]
        kind, _, pid = suffix.partition("-")
        if kind in ("update", "tmp") and pid.isdigit() and not _alive(int(pid)):
            leftover.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
