"""What replay reads of a job of many ranks: its default process group and that group's c10d
store (where the ranks agree, dynamo_replay.ranks.Agreement), and Dynamo's compile-start
callbacks (where a rank that refused its store says so); and for capture, a job of N ranks
run in one process on PyTorch's fake process group (fake_world)."""

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


def fake_world(world_size: int) -> Callable[[], None]:
    """Makes this process rank 0 of a job of `world_size` ranks whose collectives do nothing:
    the job's own init_process_group (any backend, any store) makes PyTorch's fake process
    group instead, so one process compiles what each rank of the real job compiles. RANK,
    LOCAL_RANK and WORLD_SIZE are set for what reads them, and, as torchrun does for a job of
    several ranks per host, one thread unless OMP_NUM_THREADS says otherwise (Dynamo guards
    every frame on the thread count). Returns the undo."""
    import os

    import torch
    import torch.distributed as dist
    from torch.distributed import distributed_c10d
    from torch.testing._internal.distributed import fake_pg  # registers the "fake" backend

    original = distributed_c10d.init_process_group
    saved_environment = {name: os.environ.get(name) for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE")}
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE=str(world_size))
    threads = torch.get_num_threads()
    if "OMP_NUM_THREADS" not in os.environ and world_size > 1:
        torch.set_num_threads(1)

    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        timeout = kwargs.get("timeout")
        extra = {"timeout": timeout} if timeout is not None else {}
        return original(backend="fake", store=fake_pg.FakeStore(), rank=0, world_size=world_size, **extra)

    dist.init_process_group = distributed_c10d.init_process_group = init_process_group
    undo_ddp = _local_ddp_reduction()

    def undo() -> None:
        dist.init_process_group = distributed_c10d.init_process_group = original
        undo_ddp()
        torch.set_num_threads(threads)
        for name, value in saved_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    return undo


def _local_ddp_reduction() -> Callable[[], None]:
    """Under a fake process group DDP's gradient reduction fails (its all-reduce has no
    result): each DDP module made while it is in force gets a communication hook that keeps
    the local gradient, which is the all-reduced mean when every rank computes the same. The
    compiled graphs do not include the reduction. Returns the undo."""
    import torch
    from torch.nn.parallel import DistributedDataParallel

    original = DistributedDataParallel.__init__

    def keep_local(state: Any, bucket: Any) -> Any:
        future: Any = torch.futures.Future()
        future.set_result(bucket.buffer())
        return future

    # DDP checks a hook's annotations as objects (this module's are strings).
    keep_local.__annotations__ = {
        "state": object,
        "bucket": torch.distributed.GradBucket,
        "return": torch.futures.Future[torch.Tensor],
    }

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.register_comm_hook(None, keep_local)

    DistributedDataParallel.__init__ = __init__  # type: ignore[method-assign]
    return lambda: setattr(DistributedDataParallel, "__init__", original)
