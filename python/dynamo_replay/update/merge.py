"""An update written: the store as it is now and a capture of what compiled, as one new store
with the capture as its next generation (renumbered past the store's), within the store's
limits (eviction drops whole generations, the one unused the longest first)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from dynamo_replay import generations, schema, signing
from dynamo_replay._core import Artifact, CodeObject, Manifest, Store, TraceEvent
from dynamo_replay.update.files import UpdateError, sync_directory

MAX_GENERATIONS_ENV = "DYNAMO_REPLAY_MAX_GENERATIONS"
MAX_BYTES_ENV = "DYNAMO_REPLAY_MAX_BYTES"
DEFAULT_MAX_GENERATIONS = 16


class Limits:
    def __init__(self, max_generations: int | None = None, max_bytes: int | None = None) -> None:
        self.max_generations = max_generations or int(os.environ.get(MAX_GENERATIONS_ENV) or DEFAULT_MAX_GENERATIONS)
        self.max_bytes = max_bytes or (int(os.environ[MAX_BYTES_ENV]) if os.environ.get(MAX_BYTES_ENV) else None)


def merge_update(path: str, delta: str, key: str | bytes | None, limits: Limits, usage: dict[str, Any]) -> str:
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
            keep = _generations_kept(artifacts, usage, limits)
            with Store.create(temp, level=3, overwrite=True) as out:
                shared = {a.name for a in new.records(Artifact) if a.name.startswith(schema.KERNEL_PREFIX)}
                signed, copied, numbering = _copy_current(current, out, keep, key is not None, shared, generation)
                signed.update(_copy_delta(new, out, generation, numbering, copied, key is not None))
                if key is not None:
                    signature = signing.sign(key, signed).encode()
                    out.put(
                        Artifact(
                            name=schema.SIGNATURE_NAME,
                            media_type=schema.SIGNATURE_MEDIA_TYPE,
                            blob_key=out.put_blob(signature),
                            size=len(signature),
                            attributes={"algorithm": signing.ALGORITHM, "covers": str(len(signed))},
                        )
                    )
        with open(temp, "rb+") as written:
            os.fsync(written.fileno())
        os.replace(temp, path)
        sync_directory(Path(path).parent)
    finally:
        Path(temp).unlink(missing_ok=True)
    dropped = sorted(set(generations.generations(artifacts)) - keep)
    return f"generation {generation} added" + (
        f", generations {dropped} evicted (unused the longest)" if dropped else ""
    )


def _generations_kept(artifacts: dict[str, Any], usage: dict[str, Any], limits: Limits) -> set[int]:
    """The store's generations that stay: generation 0 (the capture, which holds the
    environment every later one was checked against) and the later ones used most recently,
    within the generation and byte limits."""
    present = generations.generations(artifacts)
    sizes = dict.fromkeys(present, 0)
    for artifact in artifacts.values():
        g = min(_generations_of(artifact))  # a shared library counts once, to its first user
        sizes[g] = sizes.get(g, 0) + artifact.size
    used = usage.get("generations", {})
    by_age = sorted((g for g in present if g), key=lambda g: (used.get(str(g), {}).get("last_used") or 0, g))
    keep = set(present)
    while by_age and (
        len(keep) + 1 > limits.max_generations
        or (limits.max_bytes is not None and sum(sizes[g] for g in keep) > limits.max_bytes)
    ):
        keep.discard(by_age.pop(0))
    return keep


def _copy_blob(source: Store, out: Store, key: str) -> None:
    if key and key not in out:
        out.put_blob(source.get_blob(key, stream=True))


def _generations_of(artifact: Artifact) -> set[int]:
    """The generations an artifact belongs to: a kernel library to every generation that used
    it (attribute "generation", a comma list), anything else to the one its name says."""
    listed = artifact.attributes.get("generation")
    if listed:
        return {int(g) for g in listed.split(",") if g.isdigit()}
    return {generations.split_name(artifact.name)[0]}


def _copy_current(
    current: Store, out: Store, keep: set[int], signing: bool, shared: set[str], adding: int
) -> tuple[dict[str, tuple[str, bytes]], set[str], tuple[int, int]]:
    """Every record of the store as it is, less the generations evicted and its signature, in
    one pass. Returns the artifacts to sign (name -> (media type, bytes), only when signing),
    the names of the artifacts copied, and where an update's numbering starts: (first frame
    id, first interned file name index), past the store's own. A kernel library the update
    uses too (`shared`) is marked as the new generation's as well, so evicting the generation
    that first brought it leaves it to the new one."""
    signed: dict[str, tuple[str, bytes]] = {}
    copied: set[str] = set()
    last_frame = last_name = -1
    for record in current.records():
        if isinstance(record, Artifact):
            owners = _generations_of(record)
            if record.name == schema.SIGNATURE_NAME or not owners & keep:
                continue
            attributes = dict(record.attributes)
            if record.name in shared and "generation" in attributes:  # a capture's own library is kept anyway
                attributes["generation"] = ",".join(str(g) for g in sorted((owners & keep) | {adding}))
            data = current.get_blob(record.blob_key)
            if signing:
                signed[record.name] = (record.media_type, data)
            copied.add(record.name)
            out.put(
                Artifact(
                    name=record.name,
                    media_type=record.media_type,
                    blob_key=out.put_blob(data),
                    size=record.size,
                    attributes=attributes,
                )
            )
            continue
        if isinstance(record, (TraceEvent, CodeObject)):
            last_frame = max(last_frame, record.compile_id[0])
        if isinstance(record, TraceEvent) and record.name == "str":
            last_name = max(last_name, _interned_index(record))
        for key in _blob_keys(record):
            _copy_blob(current, out, key)
        out.put(record)
    return signed, copied, (last_frame + 1, last_name + 1)


def _interned_index(event: TraceEvent) -> int:
    """The index of a "str" event ([name, index]); -1 when it does not read as one."""
    try:
        index = json.loads(event.metadata_json)[1]
    except (ValueError, IndexError, KeyError, TypeError):
        return -1
    return index if isinstance(index, int) else -1


def _copy_delta(
    new: Store, out: Store, generation: int, numbering: tuple[int, int], present: set[str], signing: bool
) -> dict[str, tuple[str, bytes]]:
    """The delta capture's records as generation G: its compile ids moved past the store's, its
    interned file names renumbered past the store's, its cache artifacts and replay data under
    the generation's names, its kernel libraries added where new."""
    first_frame, first_name = numbering
    signed: dict[str, tuple[str, bytes]] = {}
    # Compiles, not the loading of saved frames (PyTorch logs a saved graph's load under a compile id too).
    compiled = {r.compile_id for r in new.records(TraceEvent) if r.name == "compilation_metrics"}
    for compile_id in sorted(compiled):
        moved = (compile_id[0] + first_frame, compile_id[1], compile_id[2])
        out.put(
            TraceEvent(
                name=schema.EVENT_GENERATION,
                compile_id=moved,
                metadata_json=json.dumps({"generation": generation}),
                payload_key="",
                payload_size=0,
                time=time.time(),
            )
        )
    for record in new.records():
        if (
            isinstance(record, Manifest)
            or isinstance(record, (TraceEvent, CodeObject))
            and not (record.compile_id in compiled or record.compile_id[0] < 0)
        ):
            continue
        if isinstance(record, TraceEvent) and record.name in (schema.EVENT_JOB, schema.EVENT_SUMMARY):
            continue  # the store's own say how the job was started and what its capture did
        if isinstance(record, Artifact):
            name = record.name
            # The same kernel library (Inductor names it by its source's hash) or compiler identity
            # is there already; the cache bytes and replay data go under the generation's names.
            if name == schema.SIGNATURE_NAME or (
                name in present and name not in (schema.MEGA_CACHE_NAME, schema.REPLAY_DATA_NAME)
            ):
                continue
            data = new.get_blob(record.blob_key)
            if name == schema.REPLAY_DATA_NAME:  # its compile ids, as the store now numbers them
                raw = json.loads(data)
                raw["compiles"] = _renumbered(raw.get("compiles", []), first_frame, first_name)
                data = json.dumps(raw, sort_keys=True).encode()
            if name in (schema.MEGA_CACHE_NAME, schema.REPLAY_DATA_NAME):
                name = generations.artifact_name(generation, name)
            if signing:
                signed[name] = (record.media_type, data)
            out.put(
                Artifact(
                    name=name,
                    media_type=record.media_type,
                    blob_key=out.put_blob(data),
                    size=len(data),
                    attributes={**record.attributes, "generation": str(generation)},
                )
            )
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
        return CodeObject(
            compile_id=moved_id(record.compile_id),
            role=record.role,
            name=record.name,
            filename=record.filename,
            first_line=record.first_line,
            fields_json=record.fields_json,
            bytecode_key=record.bytecode_key,
            disassembly_key=record.disassembly_key,
        )
    if isinstance(record, TraceEvent):
        metadata = json.loads(record.metadata_json)
        if record.name == "str" and isinstance(metadata, list) and len(metadata) == 2:
            metadata = [metadata[0], metadata[1] + first_name]
        else:
            metadata = _renumbered(metadata, first_frame, first_name)
        return TraceEvent(
            name=record.name,
            compile_id=moved_id(record.compile_id),
            metadata_json=json.dumps(metadata),
            payload_key=record.payload_key,
            payload_size=record.payload_size,
            time=record.time,
        )
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
