"""The optimizer's step as a frame that can be saved and replayed: PyTorch's private touchpoints
for it. Dynamo compiles an optimizer's step with every parameter and state tensor marked a
"guarded static address": each becomes an attribute of the graph, guarded by identity, which
PyTorch's precompile refuses to save (`Graph contains named parameters due to static
addresses`). While capture or replay is active they are marked unguarded instead, so Dynamo
lifts them as graph inputs read from the optimizer on every call (`opt.state[p]['exp_avg']`),
with their tensor guards kept: the graph no longer holds any process's tensors and PyTorch
saves it like any other. And Dynamo runs the optimizer's state initialization (`_init_group`)
eagerly while it traces, so a replayed step that was never traced runs it the same way first
(add_state_initialization)."""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Callable
from typing import Any

from dynamo_replay._torch.call_checks import add_call_check

_OPTIMIZER_VARIABLES = "torch._dynamo.variables.optimizer"


class LiftedOptimizerState:
    """While active, the static addresses Dynamo marks for an optimizer's tensors are unguarded:
    lifted as graph inputs rather than baked into the graph. Marks made anywhere else (a user's
    own `mark_static_address(t, guard=True)`) are left as they are. remove() puts PyTorch's
    function back."""

    def __init__(self) -> None:
        from torch._dynamo import decorators

        self._original = original = decorators.mark_static_address

        def mark_static_address(t: Any, guard: bool = False) -> None:
            if guard and sys._getframe(1).f_globals.get("__name__") == _OPTIMIZER_VARIABLES:
                guard = False
            original(t, guard=guard)

        decorators.mark_static_address = mark_static_address
        self._patched = [(decorators, original)]
        # A release that imports the function into the optimizer's module at import reads it there.
        variables = sys.modules.get(_OPTIMIZER_VARIABLES)
        if variables is not None and getattr(variables, "mark_static_address", None) is original:
            variables.mark_static_address = mark_static_address
            self._patched.append((variables, original))

    def remove(self) -> None:
        for module, original in self._patched:
            module.mark_static_address = original


def state_initializer(optimizer: Any) -> Callable[[], None] | None:
    """What Dynamo does when it traces an optimizer's step, before the step's graph reads the
    optimizer's state: `_init_group` run eagerly on each parameter group, which creates the
    state of each parameter that has a gradient and none yet (Adam's `exp_avg`, `step`). A
    saved step guards that state, so replay runs the same initialization before the saved
    step's guards are checked. Returns None for an optimizer without `_init_group` (Dynamo
    traces its initialization into the graph itself). Cheap once every parameter has state; an
    optimizer holding parameters that never get a gradient pays `_init_group` on each step."""
    init_group = getattr(optimizer, "_init_group", None)
    if init_group is None:
        return None
    try:
        lists = len(inspect.signature(init_group).parameters) - 1  # after `group`: the lists it fills
    except (TypeError, ValueError):
        return None

    def initialize() -> None:
        if len(optimizer.state) >= sum(len(group["params"]) for group in optimizer.param_groups):
            return
        import torch

        with torch.no_grad():
            _move_step_to_parameter_device(optimizer)
            for group in optimizer.param_groups:
                with _capturable_for_gpu_init(optimizer, group):
                    init_group(group, *([] for _ in range(lists)))

    return initialize


def _move_step_to_parameter_device(optimizer: Any) -> None:
    """As Dynamo does before `_init_group`: a state's `step` loaded on the CPU moves to its
    parameter's device."""
    for parameter, state in optimizer.state.items():
        step = state.get("step")
        if step is not None and getattr(step, "is_cpu", False) and not parameter.is_cpu:
            state["step"] = step.to(parameter.device)


@contextlib.contextmanager
def _capturable_for_gpu_init(optimizer: Any, group: dict[str, Any]) -> Any:
    """As Dynamo does around `_init_group`: a group whose parameters are all on a GPU and have
    no state yet is initialized as capturable (its `step` on the device), then put back."""
    params = group.get("params", [])
    flip = (
        "capturable" in group
        and all(p not in optimizer.state for p in params)
        and all(p.is_cuda or getattr(p, "is_xpu", False) for p in params)
    )
    original = group.get("capturable")
    if flip:
        group["capturable"] = True
    try:
        yield
    finally:
        if flip:
            group["capturable"] = original


def add_state_initialization(manager: Any, source: str, global_scope: dict[str, Any]) -> None:
    """Adds to a loaded step's guards, ahead of the guards that read the optimizer's state, the
    initialization Dynamo runs while it traces (state_initializer), for the optimizer at
    `source`. It checks nothing (it always passes): a state it could not initialize fails the
    state's own guards, and the step compiles as usual."""
    from dynamo_replay._torch.guards import _LiveExpression, readable_source

    live = _LiveExpression(readable_source(source), global_scope)
    known: list[Any] = []  # [optimizer, its initializer]: one optimizer per source

    def initialize(f_locals: Any) -> bool:
        with contextlib.suppress(Exception):  # never fail a call: the state's own guards decide
            optimizer = live.value(f_locals)
            if not known or known[0] is not optimizer:
                known[:] = [optimizer, state_initializer(optimizer)]
            if known[1] is not None:
                known[1]()
        return True

    add_call_check(manager, initialize, f"dynamo-replay: {source}'s state initialized as Dynamo does")
