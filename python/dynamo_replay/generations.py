"""A store's generations: what its capture saved (generation 0) and what each update added
since (generation 1, 2, ...; dynamo_replay.update writes them).

Generation G >= 1 keeps its own PyTorch cache artifacts and replay data under the artifact names
"generation/G/<name>", so a generation can be dropped whole (eviction) without touching the
others; the kernel libraries it added carry the attribute generation=G. Replay reads every
generation as one (merged_replay_data) and loads each one's cache artifacts in order. No torch
at import: replay-inspect's Python side and `check` read generations too.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from dynamo_replay import schema
from dynamo_replay.replay_data import ReplayData

PREFIX = "generation/"
_NAME = re.compile(r"^generation/(\d+)/(.+)$")


def artifact_name(generation: int, name: str) -> str:
    """Where generation G keeps the artifact `name` (generation 0: the name itself)."""
    return name if generation == 0 else f"{PREFIX}{generation}/{name}"


def split_name(name: str) -> tuple[int, str]:
    """(generation, plain name) of an artifact name."""
    found = _NAME.match(name)
    return (int(found.group(1)), found.group(2)) if found else (0, name)


def generations(artifacts: dict[str, Any]) -> list[int]:
    """The generations a store holds, oldest first: those with PyTorch cache artifacts."""
    found = {split_name(name)[0] for name in artifacts if split_name(name)[1] == schema.MEGA_CACHE_NAME}
    return sorted(found)


def read_generation(artifacts: dict[str, tuple[str, bytes]], generation: int) -> ReplayData:
    """REQUIRES: the generation's replay data exists (KeyError otherwise). ValueError when it
    does not parse."""
    return ReplayData.from_json(artifacts[artifact_name(generation, schema.REPLAY_DATA_NAME)][1])


def merged_replay_data(base: ReplayData, later: list[tuple[int, ReplayData]]) -> ReplayData:
    """One ReplayData for a store of several generations: the base's environment (an update is
    made only where the base replayed), every frame, source and guard of every generation, and
    each compile tagged with the generation that made it."""
    merged = ReplayData(**{name: getattr(base, name) for name in base.__dataclass_fields__})
    merged.frames = list(base.frames)
    merged.sources = list(base.sources)
    merged.not_saved = dict(base.not_saved)
    merged.dropped_guards = list(base.dropped_guards)
    merged.guard_trees = dict(base.guard_trees)
    merged.entry_compiles = dict(base.entry_compiles)
    merged.world_size_reads = dict(base.world_size_reads)
    merged.compiles = [{**c, "generation": c.get("generation", 0)} for c in base.compiles]
    merged.module_globals = dict(base.module_globals)
    merged.cache_keys = list(base.cache_keys or [])
    for generation, data in later:
        merged.frames += [frame for frame in data.frames if frame not in merged.frames]
        merged.sources += [source for source in data.sources if source not in merged.sources]
        for frame, why in data.not_saved.items():
            merged.not_saved.setdefault(frame, why)
        # Each generation numbers its compiles from 0: its own ids are told apart by generation.
        merged.dropped_guards += [
            dataclasses.replace(g, compile_id=g.compile_id and f"{generation}:{g.compile_id}")
            for g in data.dropped_guards
        ]
        merged.guard_trees.update(data.guard_trees)
        merged.entry_compiles.update({key: f"{generation}:{c}" for key, c in data.entry_compiles.items()})
        merged.world_size_reads.update({f"{generation}:{c}": n for c, n in data.world_size_reads.items()})
        merged.compiles += [{**c, "generation": generation} for c in data.compiles]
        merged.unique_ids = max(merged.unique_ids, data.unique_ids)
        merged.module_globals.update(data.module_globals)
        merged.cache_keys += [key for key in data.cache_keys or [] if key not in merged.cache_keys]
    # A frame saved by a later generation is saved, whatever an earlier one could not do.
    saved_later = {frame for _, data in later for frame in data.frames if frame not in data.not_saved}
    merged.not_saved = {frame: why for frame, why in merged.not_saved.items() if frame not in saved_later}
    return merged
