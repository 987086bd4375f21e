"""What replay reads of a job of many ranks: its default process group and that group's c10d
store (where the ranks agree, dynamo_replay.ranks.Agreement), and Dynamo's compile-start
callbacks (where a rank that refused its store says so); and for capture, a job of N ranks
run in one process on PyTorch's fake process group (fake_world)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dynamo_replay._torch.call_checks import add_call_check


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


def watch_distributed_reads(world_size_read: Callable[[int], None]) -> Callable[[], None]:
    """While a capture runs, what Dynamo reads of the job's ranks as it traces: it calls
    torch.distributed.get_rank and get_world_size, a group's rank() and size(), and a device
    mesh's rank, coordinate and size, and puts the number in the graph with no guard.
    - A compile that reads this process's rank is not saved, and the store says why: another
      rank replaying it would compute with this rank's number.
    - A compile that reads the world size is saved, and `world_size_read(size)` is told while
      it compiles (replay refuses its entry in a job of another world size).
    Reads by eager code (a rank passed into the compiled function is guarded like any int) and
    by logging are not counted. Returns the undo."""
    import torch.distributed as dist

    if not dist.is_available():
        return lambda: None
    from torch._C._distributed_c10d import ProcessGroup
    from torch.distributed.device_mesh import DeviceMesh

    def rank_read(output: Any, read: str, value: Any) -> None:
        output.bypass_package(
            f"its graph holds this process's rank, read as Dynamo traced it ({read} returned {value}; no "
            f"guard checks it): another rank would replay it with this rank's number, so each rank "
            f"compiles this frame"
        )

    def size_read(output: Any, read: str, value: Any) -> None:
        world_size_read(int(dist.get_world_size()))

    reads = {
        (ProcessGroup, "rank"): rank_read,
        (DeviceMesh, "get_coordinate"): rank_read,
        (ProcessGroup, "size"): size_read,
        (DeviceMesh, "size"): size_read,
    }
    # What each class holds (a pybind11 method's descriptor, which getattr would unwrap), and
    # the function to call.
    held = {(cls, name): vars(cls)[name] for cls, name in reads if name in vars(cls)}
    watchers = {}
    being_traced = _tracing_output_graph()

    def watched(cls: type, name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def read(self: Any, *args: Any, **kwargs: Any) -> Any:
            value = original(self, *args, **kwargs)
            output = being_traced()
            if output is not None:
                reads[cls, name](output, f"{cls.__name__}.{name}()", value)
            return value

        read.__name__ = read.__qualname__ = name
        return read

    for cls, name in held:
        watchers[cls, name] = watched(cls, name, getattr(cls, name))
        setattr(cls, name, watchers[cls, name])

    def undo() -> None:
        for (cls, name), original in held.items():
            if vars(cls).get(name) is watchers[cls, name]:  # not already put back by an outer capture
                setattr(cls, name, original)

    return undo


def add_world_size_check(manager: Any, world_size: int, refused: Callable[[str], None]) -> None:
    """Adds to a saved entry's guards, checked on every call, that the job's world size is the
    one its graph holds (read as Dynamo traced it, which PyTorch does not guard). Otherwise the
    frame compiles, and `refused` is told why."""

    def same_world(f_locals: Any) -> bool:
        here = process_group_rank()
        if here is not None and here[1] == world_size:
            return True
        now = f"this job's world size is {here[1]}" if here else "this process has no default process group"
        refused(f"its graph holds the world size {world_size}, read as Dynamo traced it (no guard checks it); {now}")
        return False

    add_call_check(manager, same_world, f"dynamo-replay: world size {world_size}")


def _tracing_output_graph() -> Callable[[], Any]:
    """A function giving the output graph Dynamo is tracing when its caller's caller (below
    torch.distributed's own frames) is Dynamo itself calling a function as it traces, None
    otherwise. What it needs is looked up once: it runs on every call it watches."""
    import os
    import sys

    import torch.distributed
    from torch._dynamo import symbolic_convert

    tls = symbolic_convert.tls
    distributed = os.path.dirname(torch.distributed.__file__) + os.sep
    dynamo = os.path.dirname(symbolic_convert.__file__) + os.sep

    def output_graph() -> Any:
        tx = getattr(tls, "current_tx", None)
        if tx is None:
            return None
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.startswith(distributed):
            frame = frame.f_back
        if frame is None or not frame.f_code.co_filename.startswith(dynamo):
            return None
        return getattr(tx, "output", None)

    return output_graph
