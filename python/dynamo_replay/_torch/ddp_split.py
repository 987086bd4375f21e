"""DDP's split graphs saved as a backend of our own. Under DistributedDataParallel, Dynamo's
DDPOptimizer splits a frame's graph at DDP's bucket boundaries and compiles each piece on its
own, so the frame's compiled function is a graph module calling one compiled piece per bucket.
PyTorch's precompile saves none of it: AOTAutograd refuses to cache a piece (it is compiled
with `fakify_first_call`, whose first call returns fake tensors for the next piece's compile),
so the frame's backend is missing and the frame is traced again on every start.

While capture is active each piece is compiled as PyTorch's precompile compiles a whole graph:
it gets a backend id of its own, and AOTAutograd bundles its compiled forward and backward
under that id. Its cache key gets a suffix whose lookups always miss, so that no compile in
any process finds the entry (a cache hit would skip the fake first call the next piece needs). The frame's
backend is then saved as a SplitGraphArtifact: the split module's code, each piece's bundled
artifact, and the bucket cap and world size the split was made for (split_graph.py). Replay
rebuilds the split module from them, and checks before every call that DDP still splits the
same way (add_split_check)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import pickle
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from dynamo_replay._torch.call_checks import add_call_check

_PIECE = "_bucket_"  # a piece's backend id: the frame's, then this, then the bucket's index


def saving_split_graphs(compile_fn: Callable[..., Any]) -> Callable[..., Any]:
    """DDPOptimizer's compile_fn, saving each graph it splits (see the module's docstring).
    Anything else passes through unchanged."""
    ddp_optimizer = getattr(compile_fn, "__self__", None)
    if not hasattr(ddp_optimizer, "backend_compile_fn"):
        return compile_fn

    def compile_split(gm: Any, example_inputs: Any, **configs: Any) -> Any:
        outer = getattr(gm, "_backend_id", None)
        if outer is None:  # no package: nothing is saved
            return compile_fn(gm, example_inputs, **configs)
        inner = ddp_optimizer.backend_compile_fn
        compiled_pieces: dict[int, tuple[str, Any]] = {}

        def compile_piece(module: Any, args: Any, **kwargs: Any) -> Any:
            if module is gm:  # one bucket: the whole graph, saved by PyTorch as usual
                return inner(module, args, **kwargs)
            piece_id = f"{outer}{_PIECE}{len(compiled_pieces)}"
            module._backend_id = piece_id
            with _unique_piece_keys():
                compiled = inner(module, args, **kwargs)
            compiled_pieces[id(compiled)] = (piece_id, compiled)
            return compiled

        ddp_optimizer.backend_compile_fn = compile_piece
        try:
            split = compile_fn(gm, example_inputs, **configs)
        finally:
            ddp_optimizer.backend_compile_fn = inner
        if compiled_pieces:
            try:
                _PENDING.append(_pending(outer, split, compiled_pieces, ddp_optimizer.bucket_bytes_cap))
            except Exception as error:  # the frame compiles at replay, and the store says why
                _note_unsaved(f"{type(error).__name__}: {error}", None)
        return split

    return compile_split


@dataclasses.dataclass
class _PendingSplit:
    """A split graph compiled but not yet saved: AOTAutograd saves a piece once its backward
    has compiled too, which it does at the first backward call."""

    outer: str
    module: bytes
    pieces: dict[str, tuple[str, bool]]  # placeholder name -> (piece id, unwrap_singleton_tuple)
    bucket_bytes_cap: int
    world_size: int
    compile_id: Any


_PENDING: list[_PendingSplit] = []


def _pending(
    outer: str, split: Any, compiled_pieces: dict[int, tuple[str, Any]], bucket_bytes_cap: int
) -> _PendingSplit:
    import torch

    pieces: dict[str, tuple[str, bool]] = {}
    for name, child in split.named_children():
        found = compiled_pieces.get(id(getattr(child, "submod", None)))
        if found is None:
            raise ValueError(f"its piece {name} was not compiled by the split's backend")
        pieces[name] = (found[0], bool(getattr(child, "unwrap_singleton_tuple", False)))
    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(split.graph, {}))
    for node in graph.nodes:
        node.meta = {}
        if node.op == "get_attr":
            raise ValueError(f"its split module reads an attribute ({node.target}), which is not saved")
    module = pickle.dumps(torch.fx.GraphModule({name: torch.nn.Module() for name in pieces}, graph))
    compile_id = torch._guards.CompileContext.current_compile_id()
    return _PendingSplit(outer, module, pieces, int(bucket_bytes_cap), _world_size(), compile_id)


def save_pending() -> None:
    """Saves each split graph compiled since the last call whose pieces AOTAutograd has all
    saved (a frame whose backward never ran has none): called before PyTorch's precompile
    packages are serialized. A split left unsaved is noted, and its frame compiles at replay."""
    from torch._dynamo.precompile_context import PrecompileContext

    pending, _PENDING[:] = list(_PENDING), []
    for split in pending:
        pieces: dict[str, tuple[Any, bool]] = {}
        for name, (piece_id, unwrap) in split.pieces.items():
            artifact = PrecompileContext.serialize_artifact_by_key(piece_id)
            if artifact is None:
                _note_unsaved(f"AOTAutograd saved no compiled graph for its piece {name}", split.compile_id)
                break
            pieces[name] = (artifact, unwrap)
        else:
            from dynamo_replay._torch.split_graph import SplitGraph, SplitGraphArtifact

            content = SplitGraph(split.module, pieces, split.bucket_bytes_cap, split.world_size)
            PrecompileContext.record_artifact(SplitGraphArtifact(split.outer, content))


def forget_pending() -> None:
    """Drops the split graphs an earlier capture in this process left unsaved."""
    _PENDING.clear()


def _world_size() -> int:
    from torch.nn.parallel import DistributedDataParallel

    ddp = DistributedDataParallel._get_active_ddp_module()
    return int(ddp.process_group.size()) if ddp is not None else 1


def _note_unsaved(reason: str, compile_id: Any) -> None:
    """Logs, as PyTorch logs a frame its precompile leaves out, why a split graph is not saved;
    capture's trace intake records it against the frame's compile."""
    import torch

    text = f"its graph is split at DDP's bucket boundaries (DDPOptimizer) and could not be saved: {reason}"
    torch._logging.trace_structured(
        "artifact",
        metadata_fn=lambda: {"name": "precompile_cache_bypass", "encoding": "json"},
        payload_fn=lambda: json.dumps({"_reason": text}),
        compile_id=compile_id,
        expect_trace_id=compile_id is not None,
    )


_PIECE_KEY = "-ddp-bucket"  # the suffix of a piece's AOTAutograd cache key


@contextlib.contextmanager
def _unique_piece_keys() -> Iterator[None]:
    """While a piece compiles: AOTAutograd judges whether it can be cached as it would any
    graph, except for the fake first call DDPOptimizer asks of it, and its key gets a suffix
    that no other compile's key has, whose lookup always misses. So the entry it saves is
    bundled for precompile and never found (a cache hit would skip the fake first call), and
    the ranks of an SPMD job, compiling the same pieces, record the same keys."""
    from torch._functorch._aot_autograd import autograd_cache

    cache = autograd_cache.AOTAutogradCache
    check_cacheable, cache_key = autograd_cache.check_cacheable, autograd_cache.autograd_cache_key
    lookup = cache.__dict__["_lookup"]

    def check_cacheable_but_fakified(gm: Any) -> None:
        import torch

        context = torch._guards.TracingContext.try_get()
        fakify = context is not None and context.fakify_first_call
        if fakify:
            context.fakify_first_call = False
        try:
            check_cacheable(gm)
        finally:
            if fakify:
                context.fakify_first_call = True

    def piece_key(*args: Any, **kwargs: Any) -> Any:
        key, lines = cache_key(*args, **kwargs)
        return f"{key}{_PIECE_KEY}", lines

    def missing_lookup(key: str, *args: Any, **kwargs: Any) -> Any:
        if key.endswith(_PIECE_KEY):  # looked up as a key nothing is saved under: a plain miss
            key = f"{key}-{uuid.uuid4().hex}"
        return lookup.__func__(key, *args, **kwargs)

    autograd_cache.check_cacheable, autograd_cache.autograd_cache_key = check_cacheable_but_fakified, piece_key
    cache._lookup = staticmethod(missing_lookup)
    try:
        yield
    finally:
        autograd_cache.check_cacheable, autograd_cache.autograd_cache_key = check_cacheable, cache_key
        cache._lookup = lookup


def add_split_check(manager: Any, split: Any, refused: Callable[[str], None]) -> None:
    """Adds to a saved frame's guards that DDP splits its graph as at capture: DDPOptimizer
    on, the same bucket cap and world size. Otherwise the frame compiles, and `refused` is
    told why."""
    import torch
    from torch.nn.parallel import DistributedDataParallel

    def same_split(f_locals: Any) -> bool:
        ddp = DistributedDataParallel._get_active_ddp_module()
        if ddp is None or torch._dynamo.utils.get_optimize_ddp_mode() != "ddp_optimizer":
            now = "DDPOptimizer does not split it here"
        elif int(ddp.bucket_bytes_cap) != split.bucket_bytes_cap or int(ddp.process_group.size()) != split.world_size:
            now = f"here DDP's bucket cap is {int(ddp.bucket_bytes_cap)} bytes and its world size {int(ddp.process_group.size())}"
        else:
            return True
        refused(f"its saved graph is split for {split.describe()}; {now}")
        return False

    add_call_check(manager, same_split, f"dynamo-replay: {split.describe()}")
