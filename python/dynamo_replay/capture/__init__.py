"""capture(): record everything a torch.compile job produces into a store.

Hooks go in only through PyTorch's own hook points and all come out when capture ends, also
on an exception: a handler on the structured-trace logger (torch.__trace), which carries
compile ids, guards, graphs, symbolic-shape events and metrics; and Dynamo's bytecode hook,
which sees each original and transformed code object. No PyTorch function is replaced; with
precompile (the default), two of its classes are swapped for subclasses while capture runs
(dynamo_replay._torch.PrecompileSafety).

By default capture also turns on Dynamo's caching precompile, so PyTorch packages each frame's
guards and transformed bytecode and replay skips Dynamo as well as everything after it. What
PyTorch 2.13's precompile cannot do stays one frame's problem (dynamo_replay._torch): a frame
it cannot save is recorded with the reason and compiles as usual at replay; each guard it drops
is recorded with the value it checked, so replay can check it again. precompile=False
(--no-precompile) captures only PyTorch's caches: replay then traces each frame with Dynamo.
"""

from __future__ import annotations

import dataclasses
import dis
import functools
import gc
import glob
import json
import logging
import os
import sys
import threading
import time
import traceback
import warnings
from datetime import datetime, timezone
from pathlib import Path
from types import CodeType, TracebackType
from typing import Any, Callable, TypeVar

from dynamo_replay._core import Artifact, CodeObject, Manifest, Store, TraceEvent, __version__
from dynamo_replay import _torch, kernels, ranks, schema, signing
from dynamo_replay.errors import CaptureWarning, StoreLockedError
from dynamo_replay.replay_data import ReplayData
from dynamo_replay.capture import core_aten, graph_feeds, graph_ir, graph_text, guards, shape_events, symbols, tensor_samples
from dynamo_replay.fingerprint import environment_fingerprint, source_hash

__all__ = ["capture"]

_TRACE_LOGGER = "torch.__trace"
_ID_KEYS = ("frame_id", "frame_compile_id", "attempt")
_NOT_NAMES = {*_ID_KEYS, "has_payload"}
_NO_COMPILE = (-1, -1, -1)

F = TypeVar("F", bound=Callable[..., Any])

def _compile_id(metadata: dict[str, Any]) -> tuple[int, int, int]:
    frame, compile_ = metadata.get("frame_id"), metadata.get("frame_compile_id")
    if frame is None or compile_ is None:
        return _NO_COMPILE
    return (int(frame), int(compile_), int(metadata.get("attempt") or 0))


def _code_fields(code: CodeType) -> dict[str, Any]:
    fields = {
        name: getattr(code, name)
        for name in (
            "co_name", "co_qualname", "co_filename", "co_firstlineno", "co_argcount", "co_posonlyargcount",
            "co_kwonlyargcount", "co_nlocals", "co_stacksize", "co_flags", "co_names", "co_varnames",
            "co_freevars", "co_cellvars",
        )
    }
    fields["co_consts"] = [repr(c) for c in code.co_consts]
    fields["co_linetable"] = code.co_linetable.hex()
    fields["co_exceptiontable"] = code.co_exceptiontable.hex()
    fields["co_lines"] = [list(t) for t in code.co_lines()]
    fields["source_lines"], fields["source_sha256"] = source_hash(code.co_filename, code)
    return fields


class _TraceHandler(logging.Handler):
    """Turns each structured-trace log record into a TraceEvent record (payload as a blob)."""

    def __init__(self, session: _Session) -> None:
        super().__init__(level=logging.DEBUG)
        self._session = session

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._session.trace_event(getattr(record, "metadata", {}) or {}, getattr(record, "payload", None))
        except Exception:  # capture must never break the job it observes
            self._session.note_failure("trace handler")


class _Session:
    def __init__(self, path: str, level: int, sample_limit: int, signing_key: bytes | None, precompile: bool,
                 decompose: bool = True, parameters: bool = False, own_cache_dir: bool = True) -> None:
        self.store = Store.create(path, level=level, overwrite=True)
        self.pid = os.getpid()  # a forked child inherits the session but must not write the store
        self.cache = kernels.PrivateCacheDir() if own_cache_dir else kernels.CurrentCacheDir()
        self.lock = threading.Lock()
        self.failures: list[str] = []
        self.signing_key = signing_key
        self.signed: dict[str, tuple[str, bytes]] = {}
        self.ir_texts: list[tuple[tuple[int, int, int], str, str]] = []  # compile id, event, text
        self.irs: dict[tuple[tuple[int, int, int], str], dict[str, Any]] = {}  # (compile id, event) -> IR
        self.guard_trees: list[tuple[tuple[int, int, int], str]] = []  # compile id, text
        self.sample_limit = sample_limit  # bytes per graph call; 0: no samples
        self.precompile = precompile
        self.module_globals: dict[str, str] = {}  # see _torch.module_globals
        self.recorders: list[tuple[tuple[int, int, int], tensor_samples.CallRecorder]] = []  # compile id, recorder
        self.shapes = shape_events.ShapeEvents(self.put_event, self.store.flush)
        self.not_packaged: list[tuple[str, str]] = []  # frame, why PyTorch's precompile left it out
        self.dropped: set[tuple[tuple[int, int, int], str, str]] = set()  # compile id, kind, source
        self.risky_dropped = 0
        self.replay_data = ReplayData()  # what replay will decide by (replay_data.py)
        self.bypasses: list[tuple[tuple[int, int, int], str]] = []  # compile id, why PyTorch left it out
        self.decompose = decompose  # store each aten graph decomposed to Core ATen as well
        self.parameters = parameters  # samples hold parameters whole, outside the cap
        self.snapshots: list[tuple[tuple[int, int, int], str, Any]] = []  # compile id, event, graph_snapshot

    def note_guard_tree(self, key: str, lines: list[str]) -> None:
        self.replay_data.guard_trees[key] = lines

    def note_not_packaged(self, frame: str, reason: str) -> None:
        self.not_packaged.append((frame, reason))
        self.put_event(schema.EVENT_NOT_PACKAGED, _torch.current_compile_id(), {"frame": frame, "reason": reason}, None)

    def note_dropped_guard(self, guard: _torch.DroppedGuard) -> None:
        compile_id = _torch.current_compile_id()
        if (compile_id, guard.kind, guard.source) in self.dropped:
            return
        self.dropped.add((compile_id, guard.kind, guard.source))
        self.risky_dropped += guard.risky
        self.replay_data.dropped_guards.append(guard)
        # In the event, a value without a faithful description is "" (the field is a string).
        self.put_event(schema.EVENT_DROPPED_GUARD, compile_id, {**dataclasses.asdict(guard), "value": guard.value or ""},
                       None)

    def put_event(self, name: str, compile_id: tuple[int, int, int], metadata: Any, payload: str | bytes | None) -> None:
        if os.getpid() != self.pid:  # a forked child compiling: its events have no store to go to
            return
        key, size = "", 0
        if payload:
            data = payload.encode() if isinstance(payload, str) else payload
            key, size = self.store.put_blob(data), len(data)
        self.store.put(TraceEvent(name=name, compile_id=compile_id, metadata_json=json.dumps(metadata, default=str),
                                  payload_key=key, payload_size=size, time=time.time()))

    def trace_event(self, metadata: dict[str, Any], payload: str | None) -> None:
        name = next((k for k in metadata if k not in _NOT_NAMES), "unknown")
        compile_id = _compile_id(metadata)
        self.put_event(name, compile_id, metadata.get(name), payload)
        self.keep_for_replay(name, compile_id, metadata.get(name), payload)
        if name in graph_ir.IR_GRAPHS and isinstance(payload, str):
            self.graph_logged(compile_id, name, payload)
        elif name == "dynamo_cpp_guards_str" and isinstance(payload, str):
            self.guard_trees.append((compile_id, payload))
        try:
            self.shapes.logged(name, compile_id, metadata.get(name), payload)
        except Exception:  # the event itself is stored; only capture's reading of it is lost
            self.note_failure(f"shape event {name}")

    def keep_for_replay(self, name: str, compile_id: tuple[int, int, int], metadata: Any, payload: Any) -> None:
        """Keeps from PyTorch's events what replay decides by: each compile's metrics and each
        frame PyTorch's precompile left out of its package."""
        if name == "compilation_metrics" and isinstance(metadata, dict):
            self.replay_data.compiles.append({key: metadata.get(key) for key in _COMPILE_FIELDS})
        elif name == "artifact" and isinstance(metadata, dict) and metadata.get("name") == "precompile_cache_bypass":
            self.bypasses.append((compile_id, _bypass_reason(payload)))
        elif name == "optimize_ddp_split_graph":
            self.bypasses.append((compile_id, _DDP_SPLIT))

    def graph_logged(self, compile_id: tuple[int, int, int], event: str, text: str) -> None:
        """Reads the graph PyTorch is logging while its module is at hand (see graph_ir)."""
        found = graph_ir.graph_being_logged(event)
        if found is None:
            self.ir_texts.append((compile_id, event, text))
            return
        try:
            self.read_graph(compile_id, event, *found)
        except Exception:  # the text still says what the graph was
            self.note_failure(f"graph IR of {event}")
            self.ir_texts.append((compile_id, event, text))

    def read_graph(self, compile_id: tuple[int, int, int], event: str, module: Any, scope: dict[str, Any]) -> None:
        forward = self.irs.get((compile_id, "aot_forward_graph"))
        ir = graph_ir.graph_ir(event, module, self.store.put_blob, self.sample_limit,
                               graph_ir.scope_by_seq_nr(forward) if forward else None)
        if event == "dynamo_output_graph":
            graph_feeds.link_dynamo(ir)
            self.shapes.keep_shape_env(compile_id, _torch.tracing_shape_env())
            self.shapes.graph_inputs(compile_id, module)
            self.shapes.run_facts.graph_outputs(compile_id, module)
        elif event == "aot_backward_graph":
            graph_feeds.link_backward(ir, forward, scope.get("fw_metadata"))
        else:
            graph_feeds.link_forward(ir, self.irs.get((compile_id, "dynamo_output_graph")), scope.get("fw_metadata"))
        self.irs[(compile_id, event)] = ir
        if self.decompose and event != "dynamo_output_graph":
            try:
                self.snapshots.append((compile_id, event, _torch.graph_snapshot(module)))
            except Exception:  # the graph itself is kept; only its decomposition is lost
                self.note_failure(f"snapshot of {event}")

    def save_structured(self) -> None:
        """Adds the structured forms of what the trace gave as text: each graph's IR and
        each compile's guard list. Parsed after the job, so as not to slow its compiles.
        The parse makes many small objects in a process that holds millions (torch, sympy,
        Dynamo's caches): with the collector on, full collections cost ten times the parse."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._save_structured()
        finally:
            if enabled:
                gc.enable()

    def _save_structured(self) -> None:
        self.save_graph_irs()
        for compile_id, text in self.guard_trees:
            try:
                parsed = guards.parse_guard_tree(text)
                self.put_event(schema.EVENT_GUARDS, compile_id, {"count": len(parsed)}, json.dumps(parsed))
            except Exception:
                self.note_failure("guard list")

    def save_graph_irs(self) -> None:
        irs = list(self.irs.items())
        for compile_id, name, text in self.ir_texts:
            try:
                irs.append(((compile_id, name), graph_text.graph_ir(text)))
            except Exception:
                self.note_failure(f"graph IR of {name}")
        for (compile_id, name), ir in irs:
            self.put_event(schema.EVENT_GRAPH_IR, compile_id,
                           {"graph": name, "nodes": len(ir["nodes"]), "format": ir["format"]}, json.dumps(ir))
        self.save_core_aten_irs()
        for compile_id, shape_env in self.shapes.shape_envs.items():
            try:
                table = symbols.symbol_table(shape_env)
                self.put_event(schema.EVENT_SYMBOLS, compile_id, {"count": len(table)}, json.dumps(table))
            except Exception:
                self.note_failure("symbol table")

    def save_core_aten_irs(self) -> None:
        """Each aten graph decomposed to Core ATen (capture/core_aten.py); where PyTorch cannot
        retrace one, the event says why and the original graph is all there is."""
        snapshots, self.snapshots = self.snapshots, []
        for compile_id, event, snapshot in snapshots:
            original = self.irs[(compile_id, event)]
            forward = self.irs.get((compile_id, "aot_forward_graph"))
            try:
                ir = core_aten.core_aten_ir(snapshot, original, self.store.put_blob, self.sample_limit,
                                            graph_ir.scope_by_seq_nr(forward) if forward else None)
            except Exception as e:  # noqa: BLE001 - any failure of the retrace only loses this graph's decomposition
                self.put_event(schema.EVENT_CORE_ATEN_GRAPH_IR, compile_id,
                               {"graph": event, "error": f"{type(e).__name__}: {e}"[:400]}, None)
                continue
            self.put_event(schema.EVENT_CORE_ATEN_GRAPH_IR, compile_id,
                           {"graph": event, "nodes": len(ir["nodes"]), "format": ir["format"]}, json.dumps(ir))

    def bytecode_hook(self, code: CodeType, new_code: CodeType) -> None:
        try:
            compile_id = _torch.current_compile_id()
            for role, c in (("original", code), ("transformed", new_code)):
                fields = _code_fields(c)
                if role == "original":
                    self.keep_source(c, fields)
                self.store.put(CodeObject(
                    compile_id=compile_id, role=role, name=c.co_qualname, filename=c.co_filename,
                    first_line=c.co_firstlineno, fields_json=json.dumps(fields, default=repr),
                    bytecode_key=self.store.put_blob(c.co_code),
                    disassembly_key=self.store.put_blob(dis.Bytecode(c).dis().encode()),
                ))
            if self.precompile:
                self.module_globals.update(_torch.module_globals(new_code))
            self.record_calls(compile_id)
        except Exception:
            self.note_failure("bytecode hook")
        return None  # keep Dynamo's code

    def keep_source(self, code: CodeType, fields: dict[str, Any]) -> None:
        data = self.replay_data
        name = schema.frame_name(code.co_name, code.co_filename, code.co_firstlineno)
        if name not in data.frames:
            data.frames.append(name)
        if fields["source_sha256"]:
            data.sources.append((code.co_qualname, code.co_filename, fields["source_lines"], fields["source_sha256"]))

    def save_replay_data(self) -> None:
        """The replay data artifact: put before the signature, so the signature covers it."""
        data = self.replay_data
        data.not_saved = _reasons_by_frame(self.not_packaged + _name_bypasses(self.bypasses, data.compiles))
        data.unique_ids = _torch.unique_ids_used()
        data.module_globals = self.module_globals
        data.vec_isa = _torch.probed_vec_isas()
        self.put_artifact(schema.REPLAY_DATA_NAME, schema.REPLAY_DATA_MEDIA_TYPE, data.to_json())

    def record_calls(self, compile_id: tuple[int, int, int]) -> None:
        """Counts the calls of each graph this compile installed, and samples the first."""
        found = tensor_samples.compiled_graph_globals(depth=3)
        if found is None:
            self.note_failure("call counts and samples: could not find the compiled graphs")
            return
        scope, names = found
        taken = {id(r.stand_in) for _, r in self.recorders}
        for name in names:
            if id(scope.get(name)) in taken:
                continue

            def record(inputs: list, outputs: list, backward: bool = False, rng_state: Any = None,
                       name: str = name) -> None:
                sample = {"graph": name, "inputs": inputs, "outputs": outputs, "pass": "backward" if backward else "forward"}
                if rng_state is not None:
                    sample["rng_state"] = rng_state
                self.put_event(schema.EVENT_SAMPLE, compile_id, sample, None)

            def failed(error: BaseException, call: int, name: str = name) -> None:
                try:
                    self.shapes.run_facts.call_failed(compile_id, name, call, error)
                except Exception:  # the job's own exception goes on as it is
                    self.note_failure("run-time failure")

            def outputs(values: list, name: str = name) -> None:
                try:
                    self.shapes.run_facts.outputs_seen(compile_id, name, values)
                except Exception:
                    self.note_failure("symbol values")

            recorder = tensor_samples.CallRecorder(scope, name, self.sample_limit, self.store.put_blob, record,
                                                   self.parameters, failed, outputs)
            recorder.install()
            self.recorders.append((compile_id, recorder))

    def save_calls(self) -> None:
        """One hits event per compile: how many times its code ran (its graphs' most-called)."""
        calls: dict[tuple[int, int, int], int] = {}
        for compile_id, recorder in self.recorders:
            calls[compile_id] = max(calls.get(compile_id, 0), recorder.calls)
        for compile_id, count in sorted(calls.items()):
            self.put_event(schema.EVENT_HITS, compile_id, {"calls": count}, None)

    def put_artifact(self, name: str, media_type: str, data: bytes, attributes: dict[str, str] | None = None) -> None:
        self.store.put(Artifact(name=name, media_type=media_type, blob_key=self.store.put_blob(data),
                                size=len(data), attributes=attributes or {}))
        if self.signing_key:  # the bytes are kept only when they will be signed
            self.signed[name] = (media_type, data)

    def save_mega_cache(self) -> None:
        """Stores PyTorch's own cache artifacts (Mega-Cache: Inductor FX graphs, AOTAutograd
        entries, autotuning, PGO and precompile packages) for replay to load later."""
        try:
            import torch.compiler

            saved = torch.compiler.save_cache_artifacts()
            if saved is None:
                return
            data, info = saved
            counts = {kind: str(len(keys)) for kind, keys in sorted(info.artifacts.items())}
            self.replay_data.cache_keys = sorted(f"{kind}:{key}" for kind, keys in info.artifacts.items() for key in keys)
            self.put_artifact(schema.MEGA_CACHE_NAME, schema.MEGA_CACHE_MEDIA_TYPE, data, counts)
        except Exception:
            self.note_failure("save_cache_artifacts")

    def save_kernels(self) -> None:
        """Stores the kernel libraries Inductor built or loaded and, when there are any, the
        compiler's identity (asking it costs an import and two processes)."""
        if not kernels.inductor_used():
            return
        try:
            libraries = self.cache.kernel_libraries()
            for name, path in libraries.items():
                self.put_artifact(name, schema.KERNEL_MEDIA_TYPE, path.read_bytes())
            if libraries:
                identity = kernels.compiler_identity()
                self.put_artifact(schema.TOOLCHAIN_NAME, schema.TOOLCHAIN_MEDIA_TYPE, json.dumps(identity).encode(),
                                  {"name": identity["name"]})
        except Exception:
            self.note_failure("kernel libraries")

    def sign(self) -> None:
        """Adds the signature over every artifact put so far (none may follow it)."""
        signature = signing.sign(self.signing_key, self.signed).encode()
        self.put_artifact(schema.SIGNATURE_NAME, schema.SIGNATURE_MEDIA_TYPE, signature,
                          {"algorithm": signing.ALGORITHM, "covers": str(len(self.signed))})

    def note_failure(self, where: str) -> None:
        with self.lock:
            self.failures.append(f"{where}: {traceback.format_exc(limit=3)}")


class capture:  # noqa: N801 - used as a context manager and decorator, like contextlib's
    """Record every torch.compile compilation in this block (or call) into the store at `path`.

    `with dynamo_replay.capture("job.dynrep"): ...` or `@dynamo_replay.capture("job.dynrep")`.
    An exception in the job still leaves a finished store holding everything up to it, and
    the exception itself.

    `samples` (default on) stores each compiled graph's inputs and outputs from its first
    call, up to `sample_limit_bytes` per call; `level` is the zstd level; with `key` (or
    DYNAMO_REPLAY_KEY) the store is signed for replay. Functions must be passed to
    torch.compile inside the block for replay to skip their compilation later.
    Replay of the store skips Dynamo, AOTAutograd, Inductor and the C++ compiler for every
    frame PyTorch could package; `precompile=False` captures without PyTorch's caching
    precompile, and replay then traces each frame with Dynamo (see the module docstring).
    `core_aten` (default on) also stores each aten graph decomposed to the Core ATen opset,
    when the block ends, for the offline MLIR lowering (capture/core_aten.py). A sample value
    over the cap is described (dtype, shape, strides, an integer's range) and graph runners fill
    it with seeded random values; `parameters=True` stores parameters whole, outside the cap,
    once per store (blobs are deduplicated by content): see docs/mlir.md for what that costs.
    """

    def __init__(self, path: str, *, level: int = 3, key: str | bytes | None = None, samples: bool = True,
                 sample_limit_bytes: int = tensor_samples.DEFAULT_LIMIT_BYTES, precompile: bool = True,
                 core_aten: bool = True, parameters: bool = False, own_cache_dir: bool = True) -> None:
        # `why --verify` re-runs a job that captures itself: its store then goes where verify reads it.
        self.path = os.environ.get(schema.VERIFY_STORE_ENV) or str(path)
        self.precompile = precompile
        self.core_aten = core_aten
        self.parameters = parameters
        self.own_cache_dir = own_cache_dir  # False: a replay's update, whose loaded artifacts are in the current one
        self.level = level
        self.key = key
        self.sample_limit = sample_limit_bytes if samples else 0
        self._session: _Session | None = None
        self._undo: list[Callable[[], None]] = []
        self._job: ranks.JobRank | None = None

    def __enter__(self) -> capture:
        if _torch.releases.CURRENT is None:  # nothing of this torch's private layout is known
            warnings.warn(f"dynamo-replay: {_torch.releases.unsupported_message(_torch.releases.VERSION)}: "
                          f"nothing is captured to {self.path}, the job runs as usual", CaptureWarning, stacklevel=2)
            return self
        self._job = ranks.job_rank()
        try:
            session = _Session(self._own_path(), self.level, self.sample_limit, signing.resolve_key(self.key),
                               self.precompile, self.core_aten, self.parameters, self.own_cache_dir)
        except StoreLockedError:  # a peer this process could not tell apart from itself writes it
            warnings.warn(f"dynamo-replay: {self.path} is being written by another process: nothing is captured "
                          f"here, the job runs as usual (for a job of many ranks, set RANK and WORLD_SIZE as "
                          f"torchrun does, or call init_process_group before capture)", CaptureWarning, stacklevel=2)
            return self
        self._session = session
        try:
            _torch.forget_earlier_cache_artifacts()
            if self.precompile:
                _torch.apply_settings(_torch.PRECOMPILE_SETTINGS)  # not put back, see PRECOMPILE_SETTINGS
                safety = _torch.PrecompileSafety(session.note_not_packaged, session.note_dropped_guard,
                                                 session.note_guard_tree)
                self._undo.append(safety.remove)
                self._undo.append(_torch.record_dropped_guards(session.note_dropped_guard))
                self._undo.append(_torch.StableAutogradCacheKeys().remove)
            session.replay_data.environment = environment_fingerprint()
            session.store.put(Manifest(
                tool=f"dynamo-replay {__version__}",
                created_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                command_line=list(sys.argv),
                environment=session.replay_data.environment,
            ))
            session.put_event(schema.EVENT_JOB, _NO_COMPILE, _job_facts(), None)
            logger = logging.getLogger(_TRACE_LOGGER)
            handler = _TraceHandler(session)
            old_level, old_propagate = logger.level, logger.propagate
            # First in the list: PyTorch's idle LazyTraceHandler removes itself from the list
            # while logging loops over it, which skips the handler after it for that record.
            logger.handlers.insert(0, handler)
            logger.setLevel(logging.DEBUG)
            logger.propagate = False  # the job's own log handlers must not see the trace
            self._undo.append(lambda: (logger.removeHandler(handler), logger.setLevel(old_level),
                                       setattr(logger, "propagate", old_propagate)))
            # Stacks name files by index into PyTorch's per-process intern table, which emits a
            # "str" event only the first time a name is seen: record what earlier compiles
            # in this process interned, so this store can resolve every index.
            for name, index in _torch.settings.interned_names():
                session.put_event("str", _NO_COMPILE, [name, index], None)
            self._undo.append(_torch.settings.register_bytecode_hook(session.bytecode_hook))
        except BaseException:
            self._finish(*sys.exc_info())
            raise
        return self

    def _own_path(self) -> str:
        """Rank 0 (or a job by itself) writes the store; rank K its side store (ranks.py)."""
        job = self._job
        if job is None:
            return self.path
        if job.writes_store:  # side stores of ranks this job does not have are an older job's
            for stale in Path(self.path).parent.glob(f"{glob.escape(Path(self.path).name)}.rank-*"):
                rank = stale.name.rsplit("-", 1)[1]
                if not rank.isdigit() or int(rank) >= job.world_size:
                    stale.unlink(missing_ok=True)
            return self.path
        return ranks.side_store(self.path, job.rank)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        session = self._session
        self._finish(exc_type, exc, tb)
        job = self._job
        if session is None or session.pid != os.getpid() or job is None or job.writes_store:
            return
        side = ranks.side_store(self.path, job.rank)
        if ranks.covered(side, self.path):  # rank 0's store, finished already, holds the same compile
            Path(side).unlink(missing_ok=True)

    def _finish(self, exc_type, exc, tb) -> None:
        while self._undo:
            self._undo.pop()()
        session, self._session = self._session, None
        if session is None:
            return
        for _, recorder in session.recorders:
            recorder.restore()
        if os.getpid() != session.pid:  # a forked child leaving the block: the store is its parent's
            session.cache.restore()
            return
        try:
            _report_precompile(session)
            if exc is not None and not (isinstance(exc, SystemExit) and not exc.code):
                session.put_event(schema.EVENT_ERROR, _NO_COMPILE,
                                  {"type": exc_type.__qualname__, "message": str(exc)},
                                  "".join(traceback.format_exception(exc_type, exc, tb)))
            session.save_calls()
            session.save_structured()
            session.save_mega_cache()
            session.save_kernels()
            session.save_replay_data()
            if session.signing_key:
                session.sign()
            session.put_event(schema.EVENT_SUMMARY, _NO_COMPILE, _summary(session), None)
        finally:
            session.cache.restore()
            session.store.close()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with capture(self.path, level=self.level, key=self.key, samples=bool(self.sample_limit),
                         sample_limit_bytes=self.sample_limit, precompile=self.precompile, core_aten=self.core_aten,
                         parameters=self.parameters):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


# Why a frame of a DDP model compiles at replay (PyTorch saves no backend for a split graph).
_DDP_SPLIT = ("its graph is split at DDP's bucket boundaries (DDPOptimizer), and PyTorch's precompile saves no "
              "split graph: Dynamo traces it, its compiled graphs come from the store")

# What replay's summary reads of each compile's metrics.
_COMPILE_FIELDS = ("compile_id", "co_name", "co_filename", "co_firstlineno", "entire_frame_compile_time_s",
                   "backend_compile_time_s", "fail_type")


def _job_facts() -> dict[str, Any]:
    """How the job was started, for `why --verify` to start it again: the working directory,
    argv, the interpreter, and the script with its hash (to refuse a script changed since)."""
    import hashlib
    import os

    main = sys.modules.get("__main__")
    main_file = os.path.abspath(main.__file__) if getattr(main, "__file__", None) else ""
    spec = getattr(main, "__spec__", None)
    script = main_file
    if getattr(spec, "name", "") == "dynamo_replay.__main__":  # `python -m dynamo_replay capture ... script`
        script = os.path.abspath(sys.argv[0]) if sys.argv and os.path.isfile(sys.argv[0]) else ""
    try:
        digest = hashlib.sha256(open(script, "rb").read()).hexdigest() if script else ""
    except OSError:
        digest = ""
    return {"cwd": os.getcwd(), "argv": list(sys.argv), "python": sys.executable, "main_file": main_file,
            "main_module": getattr(spec, "name", "") or "", "script": script, "script_sha256": digest}


def _reasons_by_frame(entries: list[tuple[str, str]]) -> dict[str, str]:
    """frame -> its distinct reasons joined by '; ' (capture's own note and PyTorch's bypass
    artifact often give the same one)."""
    reasons: dict[str, list[str]] = {}
    for frame, reason in entries:
        if reason not in reasons.setdefault(frame, []):
            reasons[frame].append(reason)
    return {frame: "; ".join(found) for frame, found in reasons.items()}


def _name_bypasses(bypasses: list[tuple[tuple[int, int, int], str]],
                   compiles: list[dict[str, Any]]) -> list[tuple[str, str]]:
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


def _bypass_reason(payload: Any) -> str:
    try:
        return str(json.loads(payload).get("_reason", "no reason given"))
    except (ValueError, TypeError, AttributeError):
        return str(payload)[:200]


def _report_precompile(session: _Session) -> None:
    """One line per frame PyTorch's precompile could not save, and one for the guards it
    dropped; the details are in the store (replay-inspect show --guards)."""
    for frame, reason in session.not_packaged:
        print(f"dynamo-replay: not saved for replay without Dynamo, compiles at replay: {frame}: {reason}",
              file=sys.stderr)
    if session.risky_dropped:
        print(f"dynamo-replay: {len(session.dropped)} guards are not in PyTorch's saved frames (its precompile drops "
              f"identity guards); replay re-checks the {session.risky_dropped} on user code before using a frame "
              f"(replay-inspect show --guards)", file=sys.stderr)


def _summary(session: _Session) -> dict[str, Any]:
    return {
        "counters": _torch.settings.dynamo_counters(),
        # As in the replay data (replay_data.py), which replay reads; kept here for replay-inspect.
        "dynamo_unique_ids": session.replay_data.unique_ids,
        "capture_failures": session.failures,
        "precompile": session.precompile,
        "not_packaged": len(session.not_packaged),
        "dropped_guards": len(session.dropped),
        "vec_isa": session.replay_data.vec_isa,
        "module_globals": session.module_globals,
    }
