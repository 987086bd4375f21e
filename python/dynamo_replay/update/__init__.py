"""Stores that grow with the job: replay(..., update=True) (updating_replay) records what
compiled during a replay (a new shape, a new code path, a frame whose saved entry was refused)
as a new generation of the store (dynamo_replay.generations), so the next start replays that
too. Its rooms: files.py (the lock, the usage file, atomic replacement), merge.py (the store
rewritten with the new generation, and eviction).

How an update is written, so that nothing is ever lost:
- while the job runs, a capture records only what compiles, into PATH.update-PID beside the store;
- when replay ends, under an exclusive lock on PATH.lock (two updaters take turns), the store as
  it is now (another process may have updated it meanwhile) and the new records are written to
  PATH.tmp-PID, which is flushed to disk and renamed over PATH. A reader sees the old store or
  the new one, never part of one; a job killed at any point leaves the old store as it was.
- the usage file PATH.usage.json (each saved frame's hits per start, each generation's last use)
  is rewritten the same way, and eviction drops whole generations, the one unused the longest
  first, until the store fits its limits (max_generations, max_bytes).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from dynamo_replay.update.files import (
    UpdateError,
    delta_path,
    read_usage,
    record_usage,
    remove_leftovers,
    store_lock,
    sync_directory,
    usage_path,
    write_atomically,
)
from dynamo_replay.update.merge import Limits, merge_update

__all__ = ["UPDATE_ENV", "Limits", "merge_update", "remove_leftovers", "store_lock", "updating_replay"]

UPDATE_ENV = "DYNAMO_REPLAY_UPDATE"  # "1": every replay of the process updates its store


class updating_replay:  # noqa: N801 - a context manager, like replay
    """replay(path, update=True): replay, with what compiles in the block captured and added to
    the store as its next generation when the block ends (a missing store: the first run
    captures it whole). Over replay and capture, which know nothing of it; the job is never
    failed by an update: one that cannot be written is named in the summary's `update:` line."""

    def __init__(
        self,
        path: str,
        *,
        strict: bool = False,
        key: str | bytes | None = None,
        verbose: bool = True,
        limits: Limits | None = None,
    ) -> None:
        from dynamo_replay.replay import replay

        self.path, self.key, self.verbose = str(path), key, verbose
        self.limits = limits or Limits()
        self.first = False  # the store was missing: this run captures it whole
        self._replay = replay(self.path, strict=strict, key=key, verbose=False)
        self._capture: Any = None
        self._pid = os.getpid()

    @property
    def summary(self) -> Any:
        return self._replay.summary

    def __enter__(self) -> updating_replay:
        from dynamo_replay import ranks

        job = ranks.job_rank()
        if job is not None and not job.writes_store:  # rank 0 updates the job's store
            self._replay.__enter__()
            return self
        self.first = not os.path.exists(self.path)
        if not self.first:
            self._replay.__enter__()
            if not self._replay.summary.loaded:  # refused: the store stays as it is, the job compiles
                return self
        self._start_capture()
        return self

    def _start_capture(self) -> None:
        from dynamo_replay.capture import capture

        try:
            self._capture = capture(
                delta_path(self.path), key=self.key if self.first else None, own_cache_dir=self.first
            )
            self._capture.__enter__()
        except Exception as error:  # the job runs on without the update
            self._capture = None
            self.summary.updated = f"not written: {type(error).__name__}: {error}"

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        mine = os.getpid() == self._pid  # a forked child leaves the store to its parent
        if self._capture is not None:
            self._capture.__exit__(exc_type, exc, tb)  # before replay puts back what it changed
        self._replay.__exit__(exc_type, exc, tb)
        summary = self.summary
        if self._capture is not None and mine:
            summary.updated = self._finish(
                bool(summary.compiled) and exc is None, summary.hits, summary.generation_hits
            )
        if self.verbose and mine and (summary.loaded or summary.updated):
            print(summary if summary.loaded else f"dynamo-replay: {self.path}: {summary.updated}", file=sys.stderr)

    def _finish(self, compiled: bool, hits: dict[str, int], generation_hits: dict[int, int]) -> str:
        """Writes what this run added, if anything, and its hits. Returns what was done."""
        delta = delta_path(self.path)
        try:
            with store_lock(self.path):
                remove_leftovers(self.path)
                if self.first:
                    return self._first_capture(delta)
                usage = record_usage(read_usage(self.path), hits, generation_hits, time.time())
                done = "hits recorded"
                if compiled and Path(delta).exists():
                    done = merge_update(self.path, delta, self.key, self.limits, usage)
                write_atomically(usage_path(self.path), json.dumps(usage, sort_keys=True).encode())
                return done
        except UpdateError as error:
            return f"not written: {error}"
        except Exception as error:  # a store another writer damaged, a full disk: the job goes on
            return f"not written: {type(error).__name__}: {error}"
        finally:
            Path(delta).unlink(missing_ok=True)

    def _first_capture(self, delta: str) -> str:
        if Path(self.path).exists():  # another process's first run finished first: its store stands
            return "not written: another process captured the store meanwhile"
        if not Path(delta).exists():
            return "not written: nothing was captured"
        with open(delta, "rb+") as written:
            os.fsync(written.fileno())
        os.replace(delta, self.path)
        sync_directory(Path(self.path).parent)
        return "captured (generation 0): the next start replays it"
