"""FSDP2's per-module state described so that two processes can compare it. fully_shard
registers bound methods of an FSDPState as a module's forward hooks, so every frame whose
guards check that module's hooks reads the state, and an object has no identity another
process can compare. What the description holds is what changes the code Dynamo compiles
around the hooks and no guard of PyTorch's checks: the state's class (the hook functions come
with it, pinned by the torch build), the mixed-precision policy, whether parameters are
resharded after forward, and for each parameter group its mesh (shape, sharding and
replication sizes, device type), its mesh after forward, its offload policy and each
parameter's name, dtype, unsharded shape and placement.

What it leaves out: what FSDP's lazy initialization sets at the first forward (whether the
state is the root, the dtypes it casts to, its streams and events), which a replay installs
before; and what differs between the ranks of one job (the rank, each rank's shard), so that
one store serves every rank. Anything it cannot read (another release's layout, a policy with
a function in it) makes the description None: the frame compiles. It reads FSDP's private
attributes: it lives behind the door, and registers itself with descriptions.describe_value."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

from dynamo_replay.descriptions import register_describer

Describe = Callable[[Any], "str | None"]

FSDP_PREFIX = "fsdp state "


def describe_fsdp_state(state: Any, describe: Describe) -> str | None:
    state_class = describe(type(state))
    if state_class is None:
        return None
    try:
        parts = [
            f"{FSDP_PREFIX}{state_class}",
            f"mixed precision {_policy(state._mp_policy, describe)}",
            f"reshard after forward {state._auto_reshard_after_forward!r}",
        ]
        for index, group in enumerate(state._fsdp_param_groups):
            params = ", ".join(_parameter(p) for p in group.fsdp_params)
            parts.append(
                f"group {index}: mesh {_mesh(group.mesh_info)}; after forward {_mesh(group.post_forward_mesh_info)}; "
                f"offload {_policy(group.offload_policy, describe)}; params [{params}]"
            )
    except (AttributeError, _Undescribed):  # another release's layout, or a value with no description
        return None
    return "; ".join(parts)


class _Undescribed(Exception):
    """A part of the state has no faithful description: the whole state has none."""


def _policy(policy: Any, describe: Describe) -> str:
    """A policy dataclass field by field: dtypes and flags by value, anything else by its
    description (a function in a policy changes what the hooks do)."""
    if policy is None:
        return "none"
    if not dataclasses.is_dataclass(policy):
        raise _Undescribed(type(policy).__name__)
    fields = []
    for field in dataclasses.fields(policy):
        value = getattr(policy, field.name)
        if value is None or isinstance(value, (bool, int, float, str)) or _is_dtype(value):
            fields.append(f"{field.name}={value!r}")
        else:
            described = describe(value)
            if described is None:
                raise _Undescribed(field.name)
            fields.append(f"{field.name}={described}")
    return f"{type(policy).__name__}({', '.join(fields)})"


def _mesh(info: Any) -> str:
    if info is None:
        return "none"
    mesh = info.mesh
    sizes = [
        f"{name}={getattr(info, name)}" for name in ("shard_mesh_size", "replicate_mesh_size") if hasattr(info, name)
    ]
    return f"{type(info).__name__}({mesh.device_type} {tuple(mesh.shape)} {' '.join(sizes)})"


def _parameter(param: Any) -> str:
    grad = " requires_grad" if param.sharded_param.requires_grad else ""
    return (
        f"{param._module_info.param_name} {param.sharded_param.dtype}{list(param._orig_size)} "
        f"{param.fsdp_placement}{grad}"
    )


def _is_dtype(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.dtype)


def is_fsdp_state(value: Any) -> bool:
    state = sys.modules.get("torch.distributed.fsdp._fully_shard._fsdp_state")
    return state is not None and isinstance(value, state.FSDPState)


register_describer(is_fsdp_state, describe_fsdp_state)
