"""Stores that grow with the job: replay(..., update=True) (updating_replay) records what compiled during a replay
(a new shape, a new code path, a frame whose saved entry was refused) as a new generation of
the store (dynamo_replay.generations), so the next start replays that too.

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

import contextlib
import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from dynamo_replay import generations, schema, signing
from dynamo_replay._core import Artifact, CodeObject, Manifest, Store, TraceEvent

UPDATE_ENV = "DYNAMO_REPLAY_UPDATE"  # "1": every replay of the process updates its store
MAX_GENERATIONS_ENV = "DYNAMO_REPLAY_MAX_GENERATIONS"
MAX_BYTES_ENV = "DYNAMO_REPLAY_MAX_BYTES"
DEFAULT_MAX_GENERATIONS = 16
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


def record_usage(usage: dict[str, Any], hits: dict[str, int], generation_hits: dict[int, int],
                 now: float, keep_starts: int = 16) -> dict[str, Any]:
    """Adds one start's hits to the usage (the last keep_starts starts are kept per frame)."""
    usage = {"starts": int(usage.get("starts", 0)) + 1, "frames": dict(usage.get("frames", {})),
             "generations": dict(usage.get("generations", {}))}
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
    _sync_directory(path.parent)


def _sync_directory(directory: Path) -> None:
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
        suffix = leftover.name[len(base.name) + 1:]
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


class Limits:
    def __init__(self, max_generations: int | None = None, max_bytes: int | None = None) -> None:
        self.max_generations = max_generations or int(os.environ.get(MAX_GENERATIONS_ENV) or DEFAULT_MAX_GENERATIONS)
        self.max_bytes = max_bytes or (int(os.environ[MAX_BYTES_ENV]) if os.environ.get(MAX_BYTES_ENV) else None)


def merge_update(path: str, delta: str, key: str | bytes | None, limits: Limits,
                 usage: dict[str, Any]) -> str:
    """Writes the store at `path` with the delta capture's compiles as a new generation, evicting
    what the limits leave no room for. REQUIRES: the store lock is held. Returns what was done;
    UpdateError says why nothing was."""
    key = signing.resolve_key(key)
    temp = f"{path}.tmp-{os.getpid()}"
    try:
        with Store.open(path) as current, Store.open(delta) as new:
            artifacts = {a.name: a for a in current.records(Artifact)}
            if schema.SIGNATURE_NAME in artifacts and key is None:
                raise UpdateError("the store is signed and no key is set (DYNAMO_REPLAY_KEY) to sign the update")
            added = [a for a in new.records(Artifact) if a.name == schema.MEGA_CACHE_NAME]
            if not added:
                raise UpdateError("nothing PyTorch could save compiled during this run")
            generation = max(generations.generations(artifacts), default=0) + 1
            keep = _generations_kept(artifacts, generation, usage, limits, current)
            with Store.create(temp, level=3, overwrite=True) as out:
                signed = _copy_current(current, out, keep)
                signed.update(_copy_delta(new, out, generation, current, set(signed)))
                if key is not None:
                    signature = signing.sign(key, signed).encode()
                    out.put(Artifact(name=schema.SIGNATURE_NAME, media_type=schema.SIGNATURE_MEDIA_TYPE,
                                     blob_key=out.put_blob(signature), size=len(signature),
                                     attributes={"algorithm": signing.ALGORITHM, "covers": str(len(signed))}))
        with open(temp, "rb+") as written:
            os.fsync(written.fileno())
        os.replace(temp, path)
        _sync_directory(Path(path).parent)
    finally:
        Path(temp).unlink(missing_ok=True)
    dropped = sorted(set(generations.generations(artifacts)) - keep)
    return (f"generation {generation} added" + (f", generations {dropped} evicted (unused the longest)" if dropped
                                                else ""))


def _generations_kept(artifacts: dict[str, Any], adding: int, usage: dict[str, Any], limits: Limits,
                      store: Store) -> set[int]:
    """The store's generations that stay: generation 0 (the capture, which holds the
    environment every later one was checked against) and the later ones used most recently,
    within the generation and byte limits."""
    present = generations.generations(artifacts)
    sizes = {g: 0 for g in present}
    for name, artifact in artifacts.items():
        g, _ = generations.split_name(name)
        g = int(artifact.attributes.get("generation", g))
        sizes[g] = sizes.get(g, 0) + artifact.size
    used = usage.get("generations", {})
    by_age = sorted((g for g in present if g), key=lambda g: (used.get(str(g), {}).get("last_used") or 0, g))
    keep = set(present)
    while by_age and (len(keep) + 1 > limits.max_generations
                      or (limits.max_bytes is not None and sum(sizes[g] for g in keep) > limits.max_bytes)):
        keep.discard(by_age.pop(0))
    return keep


def _copy_blob(source: Store, out: Store, key: str) -> None:
    if key and key not in out:
        out.put_blob(source.get_blob(key, stream=True))


def _copy_current(current: Store, out: Store, keep: set[int]) -> dict[str, tuple[str, bytes]]:
    """Every record of the store as it is, less the generations evicted and its signature.
    Returns the artifacts copied (name -> (media type, bytes)) for the new signature."""
    signed: dict[str, tuple[str, bytes]] = {}
    for record in current.records():
        if isinstance(record, Artifact):
            g = int(record.attributes.get("generation", generations.split_name(record.name)[0]))
            if record.name == schema.SIGNATURE_NAME or g not in keep:
                continue
            data = current.get_blob(record.blob_key)
            signed[record.name] = (record.media_type, data)
            out.put(Artifact(name=record.name, media_type=record.media_type, blob_key=out.put_blob(data),
                             size=record.size, attributes=dict(record.attributes)))
            continue
        for key in _blob_keys(record):
            _copy_blob(current, out, key)
        out.put(record)
    return signed


def _copy_delta(new: Store, out: Store, generation: int, current: Store, present: set[str]) -> dict[str, tuple[str, bytes]]:
    """The delta capture's records as generation G: its compile ids moved past the store's, its
    interned file names renumbered past the store's, its cache artifacts and replay data under
    the generation's names, its kernel libraries added where new."""
    first_frame = 1 + max((r.compile_id[0] for r in current.records() if isinstance(r, (TraceEvent, CodeObject))),
                          default=-1)
    first_name = 1 + max((json.loads(r.metadata_json)[1] for r in current.records(TraceEvent) if r.name == "str"),
                         default=-1)
    signed: dict[str, tuple[str, bytes]] = {}
    # Compiles, not the loading of saved frames (PyTorch logs a saved graph's load under a compile id too).
    compiled = {r.compile_id for r in new.records(TraceEvent) if r.name == "compilation_metrics"}
    for compile_id in sorted(compiled):
        moved = (compile_id[0] + first_frame, compile_id[1], compile_id[2])
        out.put(TraceEvent(name=schema.EVENT_GENERATION, compile_id=moved, metadata_json=json.dumps(
            {"generation": generation}), payload_key="", payload_size=0, time=time.time()))
    for record in new.records():
        if isinstance(record, Manifest) or isinstance(record, (TraceEvent, CodeObject)) and not (
                record.compile_id in compiled or record.compile_id[0] < 0):
            continue
        if isinstance(record, TraceEvent) and record.name in (schema.EVENT_JOB, schema.EVENT_SUMMARY):
            continue  # the store's own say how the job was started and what its capture did
        if isinstance(record, Artifact):
            name = record.name
            if name == schema.SIGNATURE_NAME or (name in present and not name.startswith(schema.KERNEL_PREFIX)
                                                  and name != schema.MEGA_CACHE_NAME
                                                  and name != schema.REPLAY_DATA_NAME):
                continue
            if name.startswith(schema.KERNEL_PREFIX) and name in present:
                continue  # the same library, by name (Inductor names it by its source's hash)
            data = new.get_blob(record.blob_key)
            if name == schema.REPLAY_DATA_NAME:  # its compile ids, as the store now numbers them
                raw = json.loads(data)
                raw["compiles"] = _renumbered(raw.get("compiles", []), first_frame, first_name)
                data = json.dumps(raw, sort_keys=True).encode()
            if name in (schema.MEGA_CACHE_NAME, schema.REPLAY_DATA_NAME):
                name = generations.artifact_name(generation, name)
            signed[name] = (record.media_type, data)
            out.put(Artifact(name=name, media_type=record.media_type, blob_key=out.put_blob(data), size=len(data),
                             attributes={**record.attributes, "generation": str(generation)}))
            continue
        for key in _blob_keys(record):
            _copy_blob(new, out, key)
        out.put(_moved(record, first_frame, first_name))
    return signed


def _blob_keys(record: Any) -> list[str]:
    if isinstance(record, TraceEvent):
        return [record.payload_key]
    if isinstance(record, CodeObject):
        return [record.bytecode_key, record.disassembly_key]
    return []


def _moved(record: Any, first_frame: int, first_name: int) -> Any:
    def moved_id(compile_id: Any) -> tuple[int, int, int]:
        frame, compile_, attempt = compile_id
        return (frame + first_frame if frame >= 0 else frame, compile_, attempt)

    if isinstance(record, CodeObject):
        return CodeObject(compile_id=moved_id(record.compile_id), role=record.role, name=record.name,
                          filename=record.filename, first_line=record.first_line, fields_json=record.fields_json,
                          bytecode_key=record.bytecode_key, disassembly_key=record.disassembly_key)
    if isinstance(record, TraceEvent):
        metadata = json.loads(record.metadata_json)
        if record.name == "str" and isinstance(metadata, list) and len(metadata) == 2:
            metadata = [metadata[0], metadata[1] + first_name]
        else:
            metadata = _renumbered(metadata, first_frame, first_name)
        return TraceEvent(name=record.name, compile_id=moved_id(record.compile_id),
                          metadata_json=json.dumps(metadata), payload_key=record.payload_key,
                          payload_size=record.payload_size, time=record.time)
    return record


def _renumbered(value: Any, first_frame: int, first_name: int) -> Any:
    """Compile ids ("3/0", {"frame_id": 3}) and stack frames' interned file names, moved."""
    if isinstance(value, list):
        return [_renumbered(item, first_frame, first_name) for item in value]
    if not isinstance(value, dict):
        return value
    moved = {key: _renumbered(item, first_frame, first_name) for key, item in value.items()}
    if isinstance(moved.get("filename"), int) and "line" in moved:
        moved["filename"] += first_name
    if isinstance(moved.get("frame_id"), int) and moved["frame_id"] >= 0:
        moved["frame_id"] += first_frame
    compile_id = moved.get("compile_id")
    if isinstance(compile_id, str) and "/" in compile_id and compile_id.split("/", 1)[0].isdigit():
        frame, rest = compile_id.split("/", 1)
        moved["compile_id"] = f"{int(frame) + first_frame}/{rest}"
    return moved


class updating_replay:  # noqa: N801 - a context manager, like replay
    """replay(path, update=True): replay, with what compiles in the block captured and added to
    the store as its next generation when the block ends (a missing store: the first run
    captures it whole). Over replay and capture, which know nothing of it; the job is never
    failed by an update: one that cannot be written is named in the summary's `update:` line."""

    def __init__(self, path: str, *, strict: bool = False, key: str | bytes | None = None, verbose: bool = True,
                 limits: Limits | None = None) -> None:
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
            self._capture = capture(delta_path(self.path), key=self.key if self.first else None,
                                    own_cache_dir=self.first)
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
            summary.updated = self._finish(bool(summary.compiled) and exc is None, summary.hits,
                                           summary.generation_hits)
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
        except OSError as error:
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
        _sync_directory(Path(self.path).parent)
        return "captured (generation 0): the next start replays it"
