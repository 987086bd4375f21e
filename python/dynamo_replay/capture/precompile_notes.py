"""What PyTorch's caching precompile left out while capture ran: frames it could not save (its
own note, its bypass artifact, a DDP split graph) and guards it dropped. Each goes in the store
as an event and in the replay data; one line each is printed when capture ends."""

from __future__ import annotations

import dataclasses
import sys
from typing import TYPE_CHECKING, Any

from dynamo_replay import _torch, schema

if TYPE_CHECKING:
    from dynamo_replay.capture.recording import Recording

CompileId = tuple[int, int, int]


class PrecompileNotes:
    def __init__(self, session: Recording) -> None:
        self._session = session
        self.not_packaged: list[tuple[str, str]] = []  # frame, why PyTorch's precompile left it out
        self.dropped: set[tuple[CompileId, str, str]] = set()  # compile id, kind, source
        self.risky_dropped = 0
        self.bypasses: list[tuple[CompileId, str]] = []  # compile id, why PyTorch left it out
        self.left_out: list[tuple[str, int]] = []  # functions whose frame's graph PyTorch never recorded

    # The three below are _torch.PrecompileSafety's callbacks.
    def guard_tree(self, key: str, lines: list[str]) -> None:
        self._session.replay_data.guard_trees[key] = lines
        self._session.replay_data.entry_compiles[key] = compile_id_text(_torch.current_compile_id())

    def not_saved(self, frame: str, reason: str) -> None:
        self.not_packaged.append((frame, reason))
        self._session.put_event(
            schema.EVENT_NOT_PACKAGED, _torch.current_compile_id(), {"frame": frame, "reason": reason}, None
        )

    def dropped_guard(self, guard: _torch.DroppedGuard) -> None:
        compile_id = _torch.current_compile_id()
        if (compile_id, guard.kind, guard.source) in self.dropped:
            return
        self.dropped.add((compile_id, guard.kind, guard.source))
        self.risky_dropped += guard.risky
        guard = dataclasses.replace(guard, compile_id=compile_id_text(compile_id))
        self._session.replay_data.dropped_guards.append(guard)
        # In the event, a value without a faithful description is "" (the field is a string).
        self._session.put_event(
            schema.EVENT_DROPPED_GUARD, compile_id, {**dataclasses.asdict(guard), "value": guard.value or ""}, None
        )

    def world_size_read(self, world_size: int) -> None:
        """The compile running now put the world size in its graph (_torch.ranks.watch_distributed_reads)."""
        compile_id = compile_id_text(_torch.current_compile_id())
        if compile_id:
            self._session.replay_data.world_size_reads[compile_id] = world_size

    def bypassed(self, compile_id: CompileId, reason: str) -> None:
        """A compile PyTorch left out of its package (its bypass artifact, a DDP split graph)."""
        self.bypasses.append((compile_id, reason))

    def graphs_left_out(self, functions: list[tuple[str, int]]) -> None:
        """The compiled functions (qualname, first line) whose saved frame PyTorch left out
        while saving the cache artifacts, its compiled graph never recorded."""
        self.left_out += functions

    def reasons_by_frame(self, compiles: list[dict[str, Any]]) -> dict[str, str]:
        """frame -> why it is not saved, for the replay data (`compiles`: each compile's metrics)."""
        left_out = [(frame, GRAPH_LEFT_OUT) for frame in _name_functions(self.left_out, compiles)]
        return _reasons_by_frame(self.not_packaged + _name_bypasses(self.bypasses, compiles) + left_out)

    def report(self, not_saved: dict[str, str]) -> None:
        """One line per frame PyTorch's precompile could not save (`not_saved`: frame -> why,
        from reasons_by_frame), and one for the guards it dropped; the details are in the store
        (replay-inspect show --guards)."""
        for frame, reason in not_saved.items():
            print(
                f"dynamo-replay: not saved for replay without Dynamo, compiles at replay: {frame}: {reason}",
                file=sys.stderr,
            )
        if self.risky_dropped:
            print(
                f"dynamo-replay: {len(self.dropped)} guards are not in PyTorch's saved frames (its precompile drops "
                f"identity guards); replay re-checks the {self.risky_dropped} on user code before using a frame "
                f"(replay-inspect show --guards)",
                file=sys.stderr,
            )


def compile_id_text(compile_id: CompileId) -> str:
    """How the replay data names a compile: "frame/compile/attempt" ("" outside one)."""
    return "" if compile_id[0] < 0 else "/".join(map(str, compile_id))


def _reasons_by_frame(entries: list[tuple[str, str]]) -> dict[str, str]:
    """frame -> its distinct reasons joined by '; ' (capture's own note and PyTorch's bypass
    artifact often give the same one)."""
    reasons: dict[str, list[str]] = {}
    for frame, reason in entries:
        if reason not in reasons.setdefault(frame, []):
            reasons[frame].append(reason)
    return {frame: "; ".join(found) for frame, found in reasons.items()}


# PyTorch records a compiled graph that needs gradients only once its backward has compiled.
GRAPH_LEFT_OUT = (
    "PyTorch's precompile saved no compiled graph for it: it saves a graph that needs gradients only once its "
    "backward has run (and only Inductor's graphs); run inference under torch.no_grad() (or "
    "torch.inference_mode()), or run a backward in the captured job"
)


def _name_functions(functions: list[tuple[str, int]], compiles: list[dict[str, Any]]) -> list[str]:
    """The frames of the compiled functions (qualname, first line) among the compiles."""
    wanted = {(qualname.rsplit(".", 1)[-1], line) for qualname, line in functions}
    frames = [
        schema.frame_name(m.get("co_name"), m.get("co_filename"), m.get("co_firstlineno"))
        for m in compiles
        if (m.get("co_name"), m.get("co_firstlineno")) in wanted
    ]
    return list(dict.fromkeys(frames))


def _name_bypasses(bypasses: list[tuple[CompileId, str]], compiles: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(frame, reason) for each compile PyTorch left out of its package."""
    where = {}
    for m in compiles:
        if isinstance(m.get("compile_id"), str):
            where[m["compile_id"]] = schema.frame_name(m.get("co_name"), m.get("co_filename"), m.get("co_firstlineno"))
    named = []
    for (frame, compile_, attempt), reason in bypasses:
        key = f"{frame}/{compile_}" + (f"_{attempt}" if attempt else "")
        named.append((where.get(key, "compile " + key), reason))
    return named
