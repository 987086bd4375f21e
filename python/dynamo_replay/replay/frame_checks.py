"""What replay checks for each saved frame before it is put in force (the guard table in
dynamo_replay._torch.guards says which guard kind is checked where, docs/guards.md why).

- Before PyTorch loads a saved entry's guards: every guard PyTorch's precompile dropped from that
  entry is compared with the live value (an entry whose dropped guard had no faithful
  description is not used; a frame with no entry left compiles as usual).
- After: the guard tree PyTorch rebuilt must be the one it built at capture (PyTorch re-reads
  values reached through functions, classes and modules from the live objects), and each
  dropped guard on user code is added back as a check on every call; a saved optimizer step
  first initializes the optimizer's state, as Dynamo does while it traces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dynamo_replay._torch import guards as _torch_guards
from dynamo_replay._torch import optimizers as _torch_optimizers
from dynamo_replay._torch import ranks as _torch_ranks
from dynamo_replay._torch.guards import DroppedGuard
from dynamo_replay._torch.optimizer_description import OPTIMIZER_PREFIX
from dynamo_replay.replay.conditions import hooks_owner, user_source
from dynamo_replay.replay.misses import explain
from dynamo_replay.replay_data import ReplayData


class FrameChecks:
    """Implements _torch.install.FrameVetting from a store's replay data. `enabled=False` turns every
    check off; only the tests that prove each check matters use it."""

    def __init__(self, data: ReplayData, enabled: bool = True) -> None:
        self._dropped: dict[str, list[DroppedGuard]] = {}
        for guard in data.dropped_guards:
            self._dropped.setdefault(guard.frame, []).append(guard)
        self._trees = data.guard_trees
        self._entry_compiles = data.entry_compiles
        self._world_size_reads = data.world_size_reads
        self._enabled = enabled
        self._matched: dict[DroppedGuard, Any] = {}  # live values that matched at install, per guard

    def before_load(
        self, frame: str, guards_state: bytes, local_scope: dict[str, Any], global_scope: dict[str, Any]
    ) -> str | None:
        if not self._enabled:
            return None
        # This entry's own: an update's entry for a new value must not be refused by the old one's.
        for guard in self._entry_guards(frame, _torch_guards.guards_state_key(guards_state)):
            refusal = _torch_guards.recheck_at_install(guard, local_scope, global_scope, self._matched)
            if refusal:
                return _in_user_terms(guard, refusal, local_scope, global_scope) + (
                    f" (guarded at {guard.line})" if guard.line else ""
                )
        return None

    def after_load(
        self,
        frame: str,
        guards_state: bytes,
        manager: Any,
        global_scope: dict[str, Any],
        refused: Callable[[str], None],
    ) -> str | None:
        if not self._enabled:
            return None
        key = _torch_guards.guards_state_key(guards_state)
        captured = self._trees.get(key)
        if captured is None:
            return "the store has no record of its guards as PyTorch built them at capture"
        difference = _torch_guards.guard_tree_difference(captured, _torch_guards.guard_tree_lines(manager))
        if difference:
            return difference
        for aliasing in _torch_guards.aliasing_guards(captured):
            refusal = _torch_guards.add_live_aliasing_check(manager, aliasing, global_scope)
            if refusal:
                return refusal
        guards = self._entry_guards(frame, key)
        # Once per optimizer source the entry guards; not at Dynamo's weak global to it, which
        # is not risky and names an object of the captured process.
        for source in dict.fromkeys(
            g.source for g in guards if g.risky and g.value is not None and g.value.startswith(OPTIMIZER_PREFIX)
        ):
            _torch_optimizers.add_state_initialization(manager, source, global_scope)
        for guard in guards:
            if _torch_guards.checked_on_every_call(guard):
                _torch_guards.add_call_time_recheck(manager, guard, global_scope, self._matched)
        world_size = self._world_size_reads.get(self._entry_compiles.get(key, ""))
        if world_size is not None:  # its graph holds the world size: a call in another world compiles
            _torch_ranks.add_world_size_check(manager, world_size, refused)
        return None

    def captured_tree(self, guards_state: bytes) -> list[str]:
        return self._trees.get(_torch_guards.guards_state_key(guards_state)) or []

    def _entry_guards(self, frame: str, key: str) -> list[DroppedGuard]:
        """The dropped guards of one saved entry of a frame (the compile that saved it): a frame
        of library code (an optimizer's `step`) has one entry per object it was compiled for,
        each described by its own. A store that does not say whose they are gives them all."""
        compile_id = self._entry_compiles.get(key)
        return [
            guard
            for guard in self._dropped.get(frame, [])
            if not compile_id or not guard.compile_id or guard.compile_id == compile_id
        ]


def _in_user_terms(guard: DroppedGuard, refusal: str, local_scope: dict[str, Any], global_scope: dict[str, Any]) -> str:
    """A dropped guard's refusal with its source in the user's terms; a module's hooks said as the
    replay summary says a miss on them (misses.py)."""
    if guard.kind == "MODULE_HOOKS" and refusal.startswith(guard.source + " ") and guard.value != "tuple []":
        # hooks described by what they depend on (FSDP2's sharding): the part that differs, as is
        return f"{hooks_owner(guard.source)}'s hooks{refusal[len(guard.source) :]}"
    if guard.kind == "MODULE_HOOKS":  # none at capture: how many now
        try:
            live = _torch_guards.read_dropped_source(guard, local_scope, global_scope)
        except Exception:
            live = None
        text = f"dynamo-replay: {guard.source} is {guard.value} ({guard.kind} dropped by PyTorch's precompile)"
        return str(explain(text, live, live is not None))
    if refusal.startswith(guard.source + " "):
        return user_source(guard.source) + refusal[len(guard.source) :]
    return refusal
