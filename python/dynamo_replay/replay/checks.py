"""Everything replay checks before it changes anything: the store is read once, and each check
either passes or raises Refused naming what differs. Nothing here imports torch's compiler."""

from __future__ import annotations

import json
import linecache
from dataclasses import dataclass, field
from typing import Any

from dynamo_replay import kernels, schema, signing
from dynamo_replay._torch import DroppedGuard
from dynamo_replay._core import Artifact, CodeObject, Manifest, Store, TraceEvent
from dynamo_replay.errors import StoreError
from dynamo_replay.fingerprint import environment_fingerprint, ignored_by_pytorch, source_hash

# Fingerprint entries that describe the host but do not decide whether compiled code is valid.
_NOT_COMPARED = {"platform"}
# Entries added after stores were first written: compared only when the store has them.
_ADDED_LATER = {schema.FINGERPRINT_CPU_FLAGS}


class Refused(Exception):
    def __init__(self, reason: str, differences: list[str] | None = None) -> None:
        super().__init__(reason)
        self.differences = differences or []


@dataclass
class Contents:
    """What replay reads from a store, before any of it is trusted."""

    environment: dict[str, str]
    artifacts: dict[str, tuple[str, bytes]]
    source_checks: list[tuple[str, str, list[int], str]]  # name, file, [first, last], sha256
    frames: set[str]  # "name file:line" of every frame the capture compiled
    metrics: list[dict[str, Any]]
    not_packaged: dict[str, str]  # frame -> why PyTorch's precompile left it out
    dropped: dict[str, list[DroppedGuard]] = field(default_factory=dict)  # frame -> its risky dropped guards
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def precompiled(self) -> bool:
        return self.environment.get("config.dynamo.caching_precompile") == "True"


def read_store(path: str) -> Contents:
    try:
        with Store.open(path) as store:
            state = store.info().state
            if state != "finished":
                raise Refused(f"the store was not finished by its writer ({state}); capture the job again")
            manifests = store.records(Manifest)
            if not manifests:
                raise Refused("the store holds no manifest, so it is not a capture")
            artifacts = {a.name: (a.media_type, store.get_blob(a.blob_key)) for a in store.records(Artifact)}
            contents = Contents(manifests[0].environment, artifacts, [], set(), [], {})
            for code in store.records(CodeObject):
                if code.role != "original":
                    continue
                contents.frames.add(schema.frame_name(code.name.rsplit(".", 1)[-1], code.filename, code.first_line))
                fields = json.loads(code.fields_json)
                if fields.get("source_sha256"):
                    contents.source_checks.append((code.name, code.filename, fields["source_lines"], fields["source_sha256"]))
            not_packaged: list[tuple[str, str]] = []
            bypasses: list[tuple[tuple[int, int, int], str]] = []
            for event in store.records(TraceEvent):
                _read_event(store, event, contents, not_packaged, bypasses)
            contents.not_packaged = _reasons_by_frame(not_packaged + _name_bypasses(bypasses, contents.metrics))
    except StoreError as error:
        raise Refused(str(error)) from None
    return contents


def _read_event(store: Store, event: TraceEvent, contents: Contents, not_packaged: list[tuple[str, str]],
                bypasses: list[tuple[tuple[int, int, int], str]]) -> None:
    if event.name == schema.EVENT_SUMMARY:
        contents.summary = json.loads(event.metadata_json) or {}
    elif event.name == "compilation_metrics":
        contents.metrics.append(json.loads(event.metadata_json) or {})
    elif event.name == schema.EVENT_NOT_PACKAGED:
        meta = json.loads(event.metadata_json) or {}
        not_packaged.append((str(meta.get("frame", "?")), str(meta.get("reason", "?"))))
    elif event.name == schema.EVENT_DROPPED_GUARD:
        meta = json.loads(event.metadata_json) or {}
        if meta.get("risky") and meta.get("value"):
            guard = DroppedGuard(kind=meta["kind"], source=meta["source"], frame=meta.get("frame", "?"),
                                 value=meta["value"], risky=True, line=meta.get("line", ""))
            contents.dropped.setdefault(guard.frame, []).append(guard)
    elif event.name == "artifact" and "precompile_cache_bypass" in event.metadata_json and event.payload_key:
        bypasses.append((event.compile_id, _bypass_reason(store.get_blob(event.payload_key))))


def _reasons_by_frame(entries: list[tuple[str, str]]) -> dict[str, str]:
    """frame -> its distinct reasons joined by '; ' (capture's own event and PyTorch's bypass
    artifact often give the same one)."""
    reasons: dict[str, list[str]] = {}
    for frame, reason in entries:
        if reason not in reasons.setdefault(frame, []):
            reasons[frame].append(reason)
    return {frame: "; ".join(found) for frame, found in reasons.items()}


def _name_bypasses(bypasses: list[tuple[tuple[int, int, int], str]],
                   metrics: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(frame, reason) for each compile PyTorch left out of its package."""
    where = {}
    for m in metrics:
        if isinstance(m.get("compile_id"), str):
            where[m["compile_id"]] = schema.frame_name(m.get("co_name"), m.get("co_filename"), m.get("co_firstlineno"))
    named = []
    for (frame, compile_, attempt), reason in bypasses:
        key = f"{frame}/{compile_}" + (f"_{attempt}" if attempt else "")
        named.append((where.get(key, "compile " + key), reason))
    return named


def _bypass_reason(payload: bytes) -> str:
    try:
        return str(json.loads(payload).get("_reason", "no reason given"))
    except (ValueError, AttributeError):
        return payload.decode(errors="replace")[:200]


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def fingerprint_differences(captured: dict[str, str], current: dict[str, str], applied: set[str]) -> list[str]:
    """What differs between the capture's fingerprint and this process's, leaving out the
    settings replay itself will set (`applied`)."""
    differences = []
    for key in sorted((captured.keys() | current.keys()) - _NOT_COMPARED - applied):
        if key in _ADDED_LATER and key not in captured or ignored_by_pytorch(key):
            continue
        was, now = captured.get(key, "(absent)"), current.get(key, "(absent)")
        if was != now:
            differences.append(f"{key}: captured {_clip(was)}, now {_clip(now)}")
    return differences


def source_differences(checks: list[tuple[str, str, list[int], str]]) -> list[str]:
    differences, seen = [], set()
    for name, filename, lines, digest in checks:
        if (filename, tuple(lines)) in seen:
            continue
        seen.add((filename, tuple(lines)))
        linecache.checkcache(filename)
        if source_hash(filename, lines=lines)[1] != digest:
            differences.append(f"source of {name} ({filename}:{lines[0]}-{lines[1]}) changed since capture")
    return differences


def check_signature(artifacts: dict[str, tuple[str, bytes]], key: str | bytes | None) -> None:
    """Refuses a store whose signature does not verify when a key is set; removes the
    signature from `artifacts`."""
    signature = artifacts.pop(schema.SIGNATURE_NAME, None)
    key = signing.resolve_key(key)
    if key is None:
        return
    if signature is None:
        raise Refused("a signing key is set but the store is not signed")
    if not signing.verify(key, artifacts, signature[1].decode(errors="replace")):
        raise Refused("the store's signature does not verify with the key given (altered, or signed with another key)")


def check_all(contents: Contents, key: str | bytes | None, settings: tuple[tuple[str, str, Any], ...]) -> dict[str, bytes]:
    """Every check, in order; returns the kernel libraries to put back."""
    if schema.MEGA_CACHE_NAME not in contents.artifacts:
        raise Refused("the store holds no PyTorch cache artifacts (nothing was compiled inside capture)")
    check_signature(contents.artifacts, key)
    libraries = {name: data for name, (_, data) in contents.artifacts.items() if name.startswith(schema.KERNEL_PREFIX)}
    try:
        kernels.check_kernel_names(list(libraries))
    except ValueError as error:
        raise Refused(str(error)) from None
    applied = {setting_key(module, name) for module, name, _ in settings}
    if compiler_stand_in_needed(contents.artifacts):
        applied.add("cxx.compiler")  # the stand-in answers as the captured compiler did, and compiles nothing
    differences = fingerprint_differences(contents.environment, environment_fingerprint(), applied)
    differences += source_differences(contents.source_checks)
    if differences:
        raise Refused("this process differs from the one captured", differences)
    return libraries


def compiler_stand_in_needed(artifacts: dict[str, tuple[str, bytes]]) -> dict[str, str] | None:
    """The captured compiler's identity when this host lacks that compiler (replay then puts
    a stand-in on PATH that only answers version queries), else None."""
    if schema.TOOLCHAIN_NAME not in artifacts:
        return None
    identity = json.loads(artifacts[schema.TOOLCHAIN_NAME][1])
    return identity if kernels.compiler_missing(identity) else None


def setting_key(module: str, name: str) -> str:
    """The fingerprint entry of a config setting: torch._dynamo.config.x -> config.dynamo.x."""
    return f"config.{module.split('.')[1].lstrip('_')}.{name}"


def captured_settings(environment: dict[str, str], defaults: tuple[tuple[str, str, Any], ...]) -> tuple[tuple[str, str, Any], ...]:
    """The precompile settings, with the values this store was captured with."""
    settings = []
    for module, name, value in defaults:
        recorded = environment.get(setting_key(module, name))
        settings.append((module, name, recorded == "True" if recorded in ("True", "False") else value))
    return tuple(settings)
