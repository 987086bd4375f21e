"""Everything replay checks before it changes anything: the store is read once, and each check
either passes or raises Refused naming what differs. Nothing here imports torch's compiler."""

from __future__ import annotations

import json
import linecache
from dataclasses import dataclass, field
from typing import Any

from dynamo_replay import kernels, schema, signing
from dynamo_replay._torch import releases
from dynamo_replay.errors import StoreError
from dynamo_replay.fingerprint import environment_fingerprint, ignored_by_pytorch, source_hash
from dynamo_replay.replay_data import ReplayData
from dynamo_replay.store_view import StoreView, UnreadableReplayData, merged_replay_data

# Fingerprint entries that describe the host but do not decide whether compiled code is valid.
NOT_COMPARED = {"platform"}
# Entries added after stores were first written: compared only when the store has them.
_ADDED_LATER = {schema.FINGERPRINT_CPU_FLAGS}


class Refused(Exception):
    def __init__(self, reason: str, differences: list[str] | None = None) -> None:
        super().__init__(reason)
        self.differences = differences or []


@dataclass
class Contents:
    """What replay reads from a store, before any of it is trusted: the artifacts, and among
    them the replay data, which is everything replay decides by (replay_data.py)."""

    artifacts: dict[str, tuple[str, bytes]]
    data: ReplayData = field(default_factory=ReplayData)  # read by check_all, after the signature

    @property
    def precompiled(self) -> bool:
        return self.data.precompiled


def read_store(path: str) -> Contents:
    """The store's artifacts; replay reads no other record, so a signature over the artifacts
    covers all it reads."""
    try:
        view = StoreView.open(path)
    except StoreError as error:
        raise Refused(str(error)) from None
    if not view.finished:
        raise Refused(f"the store was not finished by its writer ({view.state}); capture the job again")
    return Contents(view.artifacts)


def read_replay_data(artifacts: dict[str, tuple[str, bytes]]) -> ReplayData:
    """The replay data of every generation, as one (store_view's one decoder). REQUIRES: the
    signature, if a key is set, has verified."""
    try:
        return merged_replay_data(artifacts)
    except UnreadableReplayData as error:
        raise Refused(str(error)) from None


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def fingerprint_differences(captured: dict[str, str], current: dict[str, str], applied: set[str]) -> list[str]:
    """What differs between the capture's fingerprint and this process's, leaving out the
    settings replay itself will set (`applied`)."""
    differences = []
    for key in sorted((captured.keys() | current.keys()) - NOT_COMPARED - applied):
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


def check_all(
    contents: Contents, key: str | bytes | None, settings: tuple[tuple[str, str, Any], ...]
) -> dict[str, bytes]:
    """Every check, in order; returns the kernel libraries to put back."""
    if releases.CURRENT is None:
        raise Refused(releases.unsupported_message(releases.VERSION))
    if schema.MEGA_CACHE_NAME not in contents.artifacts:
        raise Refused("the store holds no PyTorch cache artifacts (nothing was compiled inside capture)")
    check_signature(contents.artifacts, key)
    contents.data = read_replay_data(contents.artifacts)
    libraries = {name: data for name, (_, data) in contents.artifacts.items() if name.startswith(schema.KERNEL_PREFIX)}
    try:
        kernels.check_kernel_names(list(libraries))
    except ValueError as error:
        raise Refused(str(error)) from None
    applied = {setting_key(module, name) for module, name, _ in settings}
    if compiler_stand_in_needed(contents.artifacts):
        applied.add("cxx.compiler")  # the stand-in answers as the captured compiler did, and compiles nothing
    differences = fingerprint_differences(contents.data.environment, environment_fingerprint(), applied)
    differences += source_differences(contents.data.sources)
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


def captured_settings(
    environment: dict[str, str], defaults: tuple[tuple[str, str, Any], ...]
) -> tuple[tuple[str, str, Any], ...]:
    """The precompile settings, with the values this store was captured with."""
    settings = []
    for module, name, value in defaults:
        recorded = environment.get(setting_key(module, name))
        settings.append((module, name, recorded == "True" if recorded in ("True", "False") else value))
    return tuple(settings)
