"""An optimizer described so that two processes can compare it (Dynamo guards the optimizer a
compiled step reads by identity, which cannot travel). What the description holds is what
changes the code Dynamo compiles for its step and no guard of PyTorch's checks: its class,
its step hooks, the number of parameter groups and each group's keys, flags and the kind of
each hyperparameter, and each parameter's dtype, shape, device and requires_grad.

What it leaves out, each checked elsewhere on every call: the values of numeric
hyperparameters (a float `lr` or `betas` that the step reads is guarded by value by PyTorch's
own kept guards; a tensor `lr` is a graph input, so a scheduler changing it needs no
recompile), and the state (created lazily by the first step; PyTorch guards its keys and
tensors). Leaving a scheduled float out keeps a frame whose entries were compiled for several
values of it usable. It reads the optimizer's step hooks, private attributes of PyTorch's
Optimizer: it lives behind the door, and registers itself with descriptions.describe_value."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from dynamo_replay.descriptions import register_describer

Describe = Callable[[Any], "str | None"]

# Every optimizer's description starts with this.
OPTIMIZER_PREFIX = "optimizer "

_HOOKS = ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks")


def describe_optimizer(optimizer: Any, describe: Describe) -> str | None:
    """The description, or None when a part of it (a hook, a hyperparameter of another kind)
    has no faithful description: then the optimizer never matches."""
    parts = [f"{OPTIMIZER_PREFIX}{describe(type(optimizer))}"]
    for name in _HOOKS:
        hooks = getattr(optimizer, name, None) or {}
        described = describe(tuple(hooks.values()))
        if described is None:
            return None
        parts.append(f"{name.strip('_')} {described}")
    for index, group in enumerate(optimizer.param_groups):
        settings = []
        for key, value in sorted((k, v) for k, v in group.items() if k != "params"):
            kind = _hyperparameter(value, describe)
            if kind is None:
                return None
            settings.append(f"{key}={kind}")
        params = ", ".join(_tensor(p) for p in group["params"])
        parts.append(f"group {index}: {'; '.join(settings)}; params [{params}]")
    return "; ".join(parts)


def _hyperparameter(value: Any, describe: Describe) -> str | None:
    """Flags (bool, None, str) by value; numbers by kind (PyTorch guards the value where the
    step reads it); tensors by dtype, shape and device (a graph input); tuples item by item."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return repr(value)
    if isinstance(value, (int, float)):
        return type(value).__name__
    if isinstance(value, (tuple, list)):
        items = [_hyperparameter(item, describe) for item in value]
        return None if None in items else f"{type(value).__name__}({', '.join(items)})"  # type: ignore[arg-type]
    if _is_tensor(value):
        return f"tensor {_tensor(value)}"
    return describe(value)


def _is_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _tensor(value: Any) -> str:
    grad = " requires_grad" if value.requires_grad else ""
    return f"{value.dtype}{list(value.shape)}@{value.device}{grad}"


def is_optimizer(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.optim.Optimizer)


register_describer(is_optimizer, describe_optimizer)
