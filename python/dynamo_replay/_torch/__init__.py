"""The one door to PyTorch's private API: every private PyTorch touchpoint of dynamo-replay is
in this package (tests/python/test_private_touchpoints.py fails on one anywhere else), and so is
every difference between the releases it supports (2.13, 2.14, 2.15), so a new PyTorch release
is checked here. Its rooms:

- releases: the supported releases and the adapter of the running one, chosen once at import
  (what a later release adds: its guard kinds, ...); outside the matrix, capture and replay
  step aside with a warning;
- settings: the config values precompile needs, the compile running now, Dynamo's counters,
  hooks and generated globals, a real tensor's bytes;
- guards: value descriptions, the guard table (what replay keeps, re-checks or compiles),
  dropped guards and guard trees;
- precompile: one frame's precompile failure stays that frame's (PrecompileSafety);
- ddp_split: DDP's split graphs saved as a backend of our own (save_split_graphs before a
  save);
- optimizers: an optimizer's step saved like any frame (its tensors lifted as graph inputs,
  its state initialized before a replayed step as Dynamo does while tracing), and
  optimizer_description: an optimizer described so two processes can compare it, and
  fsdp_description: FSDP2's per-module state (its hooks' owner) the same way;
- call_checks: replay's checks added to a saved frame's guards, timed;
- install: replay's install of saved frames, and deferred_compiler: Inductor's compiler left
  unimported while every frame comes from the store;
- inductor: Inductor's cache, kernels, compiler and CPU vector-ISA probe;
- graphs: graph snapshots and the Core ATen retrace, the graph PyTorch is logging;
- ranks: a job of many ranks: its default process group, that group's c10d store, Dynamo's
  compile-start callbacks, and N ranks faked in one process for capture;
- shapes: what capture reads from PyTorch's frames and exceptions (symbols, guards, failures,
  values on the run, call sites).

Reading PyTorch's frames is the fragile part: each reader returns an empty value when a frame is
not laid out as the supported releases lay it out, so a new PyTorch degrades a store, never the job, and
test_private_touchpoints names the reader that stopped finding its facts.
"""

from dynamo_replay._torch import (
    call_checks,
    ddp_split,
    deferred_compiler,
    fsdp_description,
    graphs,
    guards,
    inductor,
    optimizer_description,
    ranks,
    releases,
    settings,
    shapes,
)
from dynamo_replay._torch.ddp_split import save_pending as save_split_graphs
from dynamo_replay._torch.graphs import decompose_to_core_aten, graph_snapshot
from dynamo_replay._torch.guards import DroppedGuard, quiet_dropped_guards, record_dropped_guards
from dynamo_replay._torch.inductor import _clear_isa_caches, probed_vec_isas, reuse_vec_isa_probe
from dynamo_replay._torch.optimizers import LiftedOptimizerState
from dynamo_replay._torch.precompile import (
    PrecompileSafety,
    StableAutogradCacheKeys,
    quiet_missing_backend,
    save_cache_artifacts,
)
from dynamo_replay._torch.settings import (
    PRECOMPILE_SETTINGS,
    apply_settings,
    current_compile_id,
    forget_earlier_cache_artifacts,
    fx_builtin_import,
    import_compiler,
    module_globals,
    skip_unique_ids,
    tensor_bytes,
    tracing_shape_env,
    unique_ids_used,
    unreadable_tensor,
)
from dynamo_replay.descriptions import describe_value

__all__ = [
    # The rooms, by name (_torch.releases.CURRENT, _torch.shapes...).
    "call_checks",
    "ddp_split",
    "deferred_compiler",
    "graphs",
    "guards",
    "inductor",
    "fsdp_description",
    "optimizer_description",
    "ranks",
    "releases",
    "settings",
    "shapes",
    "DroppedGuard",
    "LiftedOptimizerState",
    "PRECOMPILE_SETTINGS",
    "PrecompileSafety",
    "StableAutogradCacheKeys",
    "apply_settings",
    "current_compile_id",
    "decompose_to_core_aten",
    "describe_value",
    "forget_earlier_cache_artifacts",
    "fx_builtin_import",
    "graph_snapshot",
    "import_compiler",
    "module_globals",
    "probed_vec_isas",
    "quiet_dropped_guards",
    "quiet_missing_backend",
    "record_dropped_guards",
    "reuse_vec_isa_probe",
    "save_cache_artifacts",
    "save_split_graphs",
    "skip_unique_ids",
    "tensor_bytes",
    "unreadable_tensor",
    "tracing_shape_env",
    "unique_ids_used",
    "_clear_isa_caches",
]
