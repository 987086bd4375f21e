"""Everything replay decides by, as one artifact of the store (schema.REPLAY_DATA_NAME).

Capture writes it at the end; replay reads it and the artifacts it loads, and no other record.
So a signed store covers, with its one signature over the artifacts, every byte replay reads to
decide anything: the environment fingerprint it compares, the sources it hashes, the frames
not saved, the dropped guards it re-checks, the guard trees it compares and the CPU probe it
reuses (docs/capture-schema.md, "Replay data"). The records replay-inspect reads stay as they
are, and are not part of any decision.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from dynamo_replay._torch.guards import DroppedGuard

VERSION = 1


@dataclass
class ReplayData:
    environment: dict[str, str] = field(default_factory=dict)  # the fingerprint at capture
    sources: list[tuple[str, str, list[int], str]] = field(default_factory=list)  # name, file, [first, last], sha256
    frames: list[str] = field(default_factory=list)  # "fn (file:line)" of every frame the capture compiled
    not_saved: dict[str, str] = field(default_factory=dict)  # frame -> why PyTorch's precompile left it out
    dropped_guards: list[DroppedGuard] = field(default_factory=list)
    guard_trees: dict[str, list[str]] = field(default_factory=dict)  # guards_state_key -> tree lines
    entry_compiles: dict[str, str] = field(default_factory=dict)  # guards_state_key -> its compile id
    world_size_reads: dict[str, int] = field(default_factory=dict)  # compile id -> the world size its graph holds
    compiles: list[dict[str, Any]] = field(default_factory=list)  # per compile: seconds, and whether it failed
    unique_ids: int = 0  # Dynamo's generated global names used by the capture
    module_globals: dict[str, str] = field(default_factory=dict)  # see _torch.module_globals
    vec_isa: list[dict[str, Any]] | None = None  # see _torch.probed_vec_isas
    cache_keys: list[str] | None = None  # "kind:key" of PyTorch's cache artifacts (ranks.covered)
    output_code: dict[str, Any] | None = None  # see _torch.deferred_compiler.output_code_facts

    def to_json(self) -> bytes:
        data = asdict(self)
        data["version"] = VERSION
        return json.dumps(data, sort_keys=True).encode()

    @staticmethod
    def from_json(data: bytes) -> ReplayData:
        """REQUIRES: data was written by to_json (ValueError or KeyError otherwise)."""
        raw = json.loads(data)
        if raw.get("version") != VERSION:
            raise ValueError(f"replay data version {raw.get('version')!r}, this dynamo-replay reads {VERSION}")
        return ReplayData(
            environment={str(k): str(v) for k, v in raw["environment"].items()},
            sources=[(str(n), str(f), [int(a), int(b)], str(h)) for n, f, (a, b), h in raw["sources"]],
            frames=[str(f) for f in raw["frames"]],
            not_saved={str(k): str(v) for k, v in raw["not_saved"].items()},
            dropped_guards=[DroppedGuard.from_json(g) for g in raw["dropped_guards"]],
            guard_trees={str(k): [str(line) for line in v] for k, v in raw["guard_trees"].items()},
            entry_compiles={str(k): str(v) for k, v in raw.get("entry_compiles", {}).items()},  # from 2026-11-28
            world_size_reads={str(k): int(v) for k, v in raw.get("world_size_reads", {}).items()},  # from 2026-11-29
            compiles=list(raw["compiles"]),
            unique_ids=int(raw["unique_ids"]),
            module_globals={str(k): str(v) for k, v in raw["module_globals"].items()},
            vec_isa=raw.get("vec_isa"),
            cache_keys=raw.get("cache_keys"),
            output_code=raw.get("output_code"),  # from 2026-11-29: without it replay defers nothing
        )

    @property
    def precompiled(self) -> bool:
        return self.environment.get("config.dynamo.caching_precompile") == "True"
