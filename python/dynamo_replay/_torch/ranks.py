"""What replay reads of a job of many ranks: its default process group and that group's c10d
store (where the ranks agree, dynamo_replay.ranks.Agreement), and Dynamo's compile-start
callbacks (where a rank that refused its store says so)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def process_group_rank() -> tuple[int, int] | None:
    """(rank, world size) of the default process group, or None before init_process_group."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return None
    return dist.get_rank(), dist.get_world_size()


def default_store() -> Any:
    """The default process group's c10d store (set, get, check, compare_set), or None before
    init_process_group."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return None
    from torch.distributed.distributed_c10d import _get_default_store

    return _get_default_store()


def on_compile_start(callback: Callable[[], None]) -> Callable[[], None]:
    """Calls `callback` as each Dynamo compile starts, before it traces; returns the undo."""
    from torch._dynamo.callback import callback_handler

    def start(_args: Any = None) -> None:
        callback()

    callback_handler.register_start_callback(start)
    return lambda: callback_handler.remove_start_callback(start)
