"""replay(URL) and capture(URL) for a fleet store in Redis: find this host's entry and replay
it, or capture it under the job's lease while the other processes wait, or, with Redis
unreachable or failing, run the job exactly as without the tool after one warning.

An entry is a store like any other: it is downloaded into the local cache (checked chunk by
chunk against its manifest) and replayed by dynamo_replay.replay, with every check and
guarantee of a local file. An entry that fails a check is set aside, never loaded."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any

import redis

from dynamo_replay import ranks
from dynamo_replay._torch import releases
from dynamo_replay.capture import capture
from dynamo_replay.errors import ReplayRefusedError, ReplayWarning
from dynamo_replay.fleet.entries import EntryError, FleetEntries, holder_text
from dynamo_replay.fleet.url import FleetURL, parse_fleet_url
from dynamo_replay.replay import ReplaySummary, replay
from dynamo_replay.replay.checks import source_differences
from dynamo_replay.update import updating_replay

CACHE_ENV = "DYNAMO_REPLAY_CACHE"
_FAILURES = (redis.RedisError, OSError)
_POLL_SECONDS = 0.5


def cache_root() -> Path:
    """Where downloaded entries are kept: $DYNAMO_REPLAY_CACHE, or ~/.cache/dynamo-replay."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "dynamo-replay")


def comparable_environment(environment: dict[str, str] | None = None) -> dict[str, str]:
    """A fingerprint (this process's by default) as replay compares it (fingerprint.py): what
    decides whether a compile from elsewhere is valid here, and nothing per host or process."""
    from dynamo_replay import _torch
    from dynamo_replay.fingerprint import environment_fingerprint, ignored_by_pytorch
    from dynamo_replay.replay.checks import NOT_COMPARED, setting_key

    applied = {setting_key(module, name) for module, name, _ in _torch.PRECOMPILE_SETTINGS}
    found = environment_fingerprint() if environment is None else environment
    return {
        key: value
        for key, value in found.items()
        if key not in NOT_COMPARED and key not in applied and not ignored_by_pytorch(key)
    }


def environment_digest(environment: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(environment, sort_keys=True).encode()).hexdigest()[:16]


class _Lease:
    """Holds the job's lease, renewed on a thread of its own until released."""

    def __init__(self, entries: FleetEntries, digest: str, holder: str) -> None:
        self._entries = FleetEntries(entries.url)  # a client for the renewal thread
        self._digest, self._holder = digest, holder
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._renew, name="dynamo-replay lease", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        while not self._stop.wait(self._entries.url.lease / 3):
            try:
                self._entries.renew_lease(self._digest, self._holder)
            except _FAILURES:
                pass  # the lease lapses; another process captures

    def release(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            self._entries.release_lease(self._digest, self._holder)
        except _FAILURES:
            pass


class fleet_replay:  # noqa: N801 - a context manager, like replay
    """replay() for a redis:// URL (see the module docstring)."""

    def __init__(
        self,
        text: str,
        *,
        strict: bool = False,
        key: str | bytes | None = None,
        verbose: bool = True,
        update: bool = False,
    ) -> None:
        self.url: FleetURL = parse_fleet_url(text)  # ValueError: bad usage, before anything runs
        self.strict, self.key, self.verbose = strict, key, verbose
        self.update = update  # a replayed entry learns what compiles, and is published again
        self.mode = "compile"  # replay, capture or compile (as without the tool)
        self.entry_id: str | None = None
        self._inner: Any = None
        self._lease: _Lease | None = None
        self._entries: FleetEntries | None = None
        self._digest = ""
        self._captured = Path()
        self._local = Path()  # the entry replayed, as a local file
        self._pid = os.getpid()
        self._job = ranks.job_rank()
        self._undo_vote = lambda: None

    @property
    def summary(self) -> ReplaySummary | None:
        return self._inner.summary if isinstance(self._inner, (replay, updating_replay)) else None

    def __enter__(self) -> fleet_replay:
        if releases.CURRENT is None:  # nothing to replay or capture: no lease taken, no entry read
            self._unavailable(releases.unsupported_message(releases.VERSION))
            return self
        try:
            self._digest = environment_digest(comparable_environment())
            self._entries = FleetEntries(self.url)
            path = self._find_or_lead()
        except _FAILURES as error:
            self._unavailable(f"{type(error).__name__}: {error}")
            return self
        if path is not None:
            self.mode = "replay"
            self._local = path
            self._inner = (updating_replay if self.update else replay)(
                str(path), strict=self.strict, key=self.key, verbose=self.verbose
            )
        elif self._lease is not None:
            self.mode = "capture"
            self._captured = Path(tempfile.mkdtemp(prefix="dynrep-fleet-")) / "capture.dynrep"
            self._inner = capture(str(self._captured), key=self.key)
        if self._inner is not None:
            try:
                self._inner.__enter__()
            except BaseException:  # no capture follows: free the job for another process
                if self._lease is not None:
                    self._lease.release()
                    self._lease = None
                raise
        if self.mode == "replay" and not self._inner.summary.loaded:
            self._set_aside_refused()
        if self.mode != "replay" and self._job is not None:  # a rank that found an entry meanwhile compiles too
            reason = "it captures the job's entry" if self.mode == "capture" else "it found no entry"
            self._undo_vote = ranks.Agreement(self._job).refuse_at_compile_start(reason)
        return self

    def _set_aside_refused(self) -> None:
        """An entry replay refused (a signature that does not verify, a store it cannot use) is
        set aside, so it is never tried again, and this process captures in its place if no one
        else is: the job itself already runs as without the tool."""
        assert self._entries is not None and self.entry_id is not None
        why = self._inner.summary.refused or "refused by replay"
        try:
            self._entries.set_aside(self._digest, self.entry_id, why)
            holder = holder_text()
            if not self._entries.take_lease(self._digest, holder):
                return
        except _FAILURES:
            return
        self._inner.__exit__(None, None, None)
        self._lease = _Lease(self._entries, self._digest, holder)
        self.mode = "capture"
        self._captured = Path(tempfile.mkdtemp(prefix="dynrep-fleet-")) / "capture.dynrep"
        self._inner = capture(str(self._captured), key=self.key)
        self._inner.__enter__()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        mine = os.getpid() == self._pid  # a forked child leaves the upload and the lease to its parent
        self._undo_vote()
        try:
            if self._inner is not None:
                self._inner.__exit__(exc_type, exc, tb)
            if mine and self.mode == "capture" and exc is None:
                self._upload()
            if mine and self.mode == "replay" and self._inner.summary.loaded:
                self._after_replay()
        finally:
            if mine and self._lease is not None:
                self._lease.release()

    # --- finding this host's entry, or leading its capture -----------------------------------

    def _find_or_lead(self) -> Path | None:
        """The local path of a verified entry to replay; or None with the lease taken (capture)
        or not (the wait ran out: compile as usual)."""
        assert self._entries is not None
        deadline = time.monotonic() + self.url.wait
        said = False
        job = self._job
        while True:
            path = self._matching_entry()
            if path is not None:
                return path
            holder = holder_text(job.job if job else None)
            if (job is None or job.writes_store) and self._entries.take_lease(self._digest, holder):
                self._lease = _Lease(self._entries, self._digest, holder)
                return None
            if job is not None:  # waiting here would hold the job's own rendezvous: compile instead
                return None
            if time.monotonic() >= deadline:
                if self.url.wait:
                    self._warn(f"waited {self.url.wait:g} s and no entry came; the job compiles as usual")
                return None
            if not said:
                said = True
                who = self._entries.lease_holder(self._digest) or {}
                print(
                    f"dynamo-replay: {self.url.shown}: {who.get('host', '?')} (pid {who.get('pid', '?')}) is "
                    f"capturing this job; waiting up to {self.url.wait:g} s for its entry",
                    file=sys.stderr,
                )
            time.sleep(_POLL_SECONDS)

    def _matching_entry(self) -> Path | None:
        """The newest entry whose sources match this host's files, downloaded and verified (a
        failing one is set aside, named in a warning)."""
        assert self._entries is not None
        for manifest in self._entries.manifests(self._digest):
            sources = [(str(n), str(f), [int(a), int(b)], str(h)) for n, f, (a, b), h in manifest.get("sources", [])]
            if source_differences(sources):
                continue
            try:
                return self._local_copy(manifest)
            except EntryError as error:
                self._warn(f"{error}; set aside, never loaded")
                self._entries.set_aside(self._digest, manifest["id"], str(error))
        return None

    def _local_copy(self, manifest: dict[str, Any]) -> Path:
        """The entry as a local file: the copy an earlier start on this host verified, or a
        download checked chunk by chunk (the store then checks every blob it reads)."""
        assert self._entries is not None
        path = cache_root() / "fleet" / self.url.job / self._digest / f"{manifest['id']}.dynrep"
        done = path.with_suffix(".verified")  # written after a download whose every chunk checked
        if not (
            path.exists()
            and done.exists()
            and done.read_text() == manifest["sha256"]
            and path.stat().st_size == manifest["size"]
        ):
            data = self._entries.download(self._digest, manifest)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".download-")
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temp, path)
            done.write_text(manifest["sha256"])
        self.entry_id = manifest["id"]  # only an entry that passed its checks
        return path

    # --- after a capture ----------------------------------------------------------------------

    def _upload(self) -> None:
        assert self._entries is not None
        try:
            self.entry_id = upload_store(self._entries, self._digest, self._captured)
            self._collect()
        except _FAILURES as error:
            self._warn(f"the capture could not be uploaded ({type(error).__name__}: {error})")

    def _after_replay(self) -> None:
        """Records the start's hits on the entry; with update, publishes the entry's new
        generation (single-flight: one process at a time, under the job's lease)."""
        assert self._entries is not None and self.entry_id is not None
        summary = self._inner.summary
        try:
            self._entries.record_use(self._digest, self.entry_id, sum(summary.hits.values()))
            if not (summary.updated or "").startswith("generation"):
                return
            holder = holder_text()
            if not self._entries.take_lease(self._digest, holder):
                summary.updated += "; not published: another process is publishing or capturing this job"
                return
            try:
                replaced, self.entry_id = self.entry_id, upload_store(self._entries, self._digest, self._local)
                if replaced != self.entry_id:
                    self._entries.remove(self._digest, replaced)
                summary.updated += f"; published as entry {self.entry_id}, replacing {replaced}"
            finally:
                self._entries.release_lease(self._digest, holder)
            self._collect()
        except _FAILURES as error:
            self._warn(f"the entry's use or update could not be recorded ({type(error).__name__}: {error})")

    def _collect(self) -> None:
        """With &max_bytes=, the job's least recently used entries go until the rest fit."""
        if self.url.max_bytes is not None and self._entries is not None:
            for digest, entry_id, size in self._entries.collect(self.url.max_bytes):
                print(
                    f"dynamo-replay: fleet {self.url.shown}: entry {entry_id} ({digest}, {size} bytes) evicted: "
                    f"the job's entries exceeded max_bytes={self.url.max_bytes}",
                    file=sys.stderr,
                )

    def _unavailable(self, reason: str) -> None:
        message = f"dynamo-replay: fleet {self.url.shown} not used: {reason}"
        if self.strict:
            raise ReplayRefusedError(message) from None
        warnings.warn(message + "; the job compiles as usual", ReplayWarning, stacklevel=3)

    def _warn(self, text: str) -> None:
        warnings.warn(f"dynamo-replay: fleet {self.url.shown}: {text}", ReplayWarning, stacklevel=4)


def upload_store(entries: FleetEntries, digest: str, path: Path) -> str:
    """Uploads a finished store with a manifest that says what it was captured for."""
    from dynamo_replay import schema
    from dynamo_replay.replay_data import ReplayData
    from dynamo_replay.store_view import StoreView

    view = StoreView.open(path, only=(schema.REPLAY_DATA_NAME,))
    data = view.replay_data() if schema.REPLAY_DATA_NAME in view.artifacts else ReplayData()
    manifest = {
        "job": entries.url.job,
        "environment": data.environment,
        "sources": data.sources,
        "frames": len(data.frames),
        "not_saved": len(data.not_saved),
        "holder": json.loads(holder_text()),
        "generations": len(view.generations()),
        **ranks.manifest_fields(ranks.job_rank()),
    }
    return entries.upload(digest, path.read_bytes(), manifest)


class fleet_capture:  # noqa: N801 - a context manager, like capture
    """capture() for a redis:// URL: captures into a local file, then uploads it as a new
    entry of the job (no lease: an explicit capture always runs). Redis failing: one warning,
    and the capture is kept at `.path`."""

    def __init__(self, text: str, **options: Any) -> None:
        self.url = parse_fleet_url(text)
        self.path = Path(tempfile.mkdtemp(prefix="dynrep-fleet-")) / "capture.dynrep"
        self.entry_id: str | None = None
        job = ranks.job_rank()
        # In a job of many ranks, rank 0's capture is the job's entry; the others only run.
        self._inner = capture(str(self.path), **options) if job is None or job.writes_store else None

    def __enter__(self) -> fleet_capture:
        if self._inner is not None:
            self._inner.__enter__()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._inner is None:
            return
        self._inner.__exit__(exc_type, exc, tb)
        if not self.path.exists():  # capture recorded nothing (a PyTorch release outside the matrix)
            return
        try:
            entries = FleetEntries(self.url)
            self.entry_id = upload_store(entries, environment_digest(comparable_environment()), self.path)
        except _FAILURES as error:
            warnings.warn(
                f"dynamo-replay: fleet {self.url.shown} not used: {type(error).__name__}: {error}; the "
                f"capture is kept at {self.path}",
                ReplayWarning,
                stacklevel=2,
            )
