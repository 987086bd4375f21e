"""The capture session: `capture` (the context manager and decorator) opens a store, puts
capture's hooks in through PyTorch's hook points, and takes them out and finishes the store when
the block ends; `Session` is that store while it is open and the rooms that fill it."""

from __future__ import annotations

import functools
import glob
import json
import os
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import CodeType, TracebackType
from typing import Any, TypeVar

from dynamo_replay import _torch, kernels, ranks, schema, signing
from dynamo_replay._core import Manifest, Store, TraceEvent, __version__
from dynamo_replay.capture import shape_events, tensor_samples, trace_intake
from dynamo_replay.capture.artifacts import Artifacts
from dynamo_replay.capture.code_objects import CodeObjects
from dynamo_replay.capture.graph_calls import GraphCalls
from dynamo_replay.capture.precompile_notes import PrecompileNotes
from dynamo_replay.capture.structured import StructuredEvents
from dynamo_replay.capture.summary import job_facts, summary
from dynamo_replay.capture.trace_intake import NO_COMPILE, TraceIntake
from dynamo_replay.errors import CaptureWarning, StoreLockedError
from dynamo_replay.fingerprint import environment_fingerprint
from dynamo_replay.replay_data import ReplayData

F = TypeVar("F", bound=Callable[..., Any])


class Session:
    """One capture's open store: every room writes its events through put_event and notes what
    went wrong through note_failure (a failure of capture never reaches the job)."""

    def __init__(
        self,
        path: str,
        *,
        level: int,
        sample_limit: int,
        signing_key: bytes | None,
        precompile: bool,
        decompose: bool = True,
        parameters: bool = False,
        own_cache_dir: bool = True,
    ) -> None:
        self.store = Store.create(path, level=level, overwrite=True)
        self.pid = os.getpid()  # a forked child inherits the session but must not write the store
        self.cache = kernels.PrivateCacheDir(with_isa_probes=True) if own_cache_dir else kernels.CurrentCacheDir()
        self.lock = threading.Lock()
        self.failures: list[str] = []
        self.sample_limit = sample_limit  # bytes per graph call; 0: no samples
        self.precompile = precompile
        self.parameters = parameters  # samples hold parameters whole, outside the cap
        self.replay_data = ReplayData()  # what replay will decide by (replay_data.py)
        self.shapes = shape_events.ShapeEvents(self.put_event, self.store.flush)
        self.artifacts = Artifacts(self.store, signing_key, self.note_failure)
        self.precompile_notes = PrecompileNotes(self)
        self.structured = StructuredEvents(self, decompose)
        self.code = CodeObjects(self)
        self.calls = GraphCalls(self)
        self.trace = TraceIntake(self)

    def put_event(
        self, name: str, compile_id: tuple[int, int, int], metadata: Any, payload: str | bytes | None
    ) -> None:
        if os.getpid() != self.pid:  # a forked child compiling: its events have no store to go to
            return
        key, size = "", 0
        if payload:
            data = payload.encode() if isinstance(payload, str) else payload
            key, size = self.store.put_blob(data), len(data)
        self.store.put(
            TraceEvent(
                name=name,
                compile_id=compile_id,
                metadata_json=json.dumps(metadata, default=str),
                payload_key=key,
                payload_size=size,
                time=time.time(),
            )
        )

    def bytecode_hook(self, code: CodeType, new_code: CodeType) -> None:
        try:
            compile_id = _torch.current_compile_id()
            self.code.compiled(compile_id, code, new_code)
            self.calls.record(compile_id)
        except Exception:
            self.note_failure("bytecode hook")
        return None  # keep Dynamo's code

    def note_failure(self, where: str) -> None:
        with self.lock:
            self.failures.append(f"{where}: {traceback.format_exc(limit=3)}")

    def finish(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        """Writes what capture keeps until the job is done, the job's exception if any, the
        artifacts and the summary; the signature, with a key, covers every artifact before it."""
        if exc is not None and not (isinstance(exc, SystemExit) and not exc.code):
            self.put_event(
                schema.EVENT_ERROR,
                NO_COMPILE,
                {"type": exc_type.__qualname__, "message": str(exc)},
                "".join(traceback.format_exception(exc_type, exc, tb)),
            )
        self.calls.save()
        self.structured.save()
        self.precompile_notes.graphs_left_out(self.artifacts.save_mega_cache(self.replay_data))
        self.artifacts.save_kernels(self.cache)
        data = self.replay_data
        data.not_saved = self.precompile_notes.reasons_by_frame(data.compiles)
        self.precompile_notes.report(data.not_saved)
        data.unique_ids = _torch.unique_ids_used()
        data.module_globals = self.code.module_globals
        data.vec_isa = _torch.probed_vec_isas()
        data.output_code = _torch.deferred_compiler.output_code_facts()
        self.artifacts.save_replay_data(data)
        if self.artifacts.signing_key:
            self.artifacts.sign()
        self.put_event(schema.EVENT_SUMMARY, NO_COMPILE, summary(self), None)


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
    precompile, and replay then traces each frame with Dynamo (see dynamo_replay.capture).
    `core_aten` (default on) also stores each aten graph decomposed to the Core ATen opset,
    when the block ends, for the offline MLIR lowering (capture/core_aten.py). A sample value
    over the cap is described (dtype, shape, strides, an integer's range) and graph runners fill
    it with seeded random values; `parameters=True` stores parameters whole, outside the cap,
    once per store (blobs are deduplicated by content): see docs/mlir.md for what that costs.
    """

    def __init__(
        self,
        path: str,
        *,
        level: int = 3,
        key: str | bytes | None = None,
        samples: bool = True,
        sample_limit_bytes: int = tensor_samples.DEFAULT_LIMIT_BYTES,
        precompile: bool = True,
        core_aten: bool = True,
        parameters: bool = False,
        own_cache_dir: bool = True,
    ) -> None:
        # `why --verify` re-runs a job that captures itself: its store then goes where verify reads it.
        self.path = os.environ.get(schema.VERIFY_STORE_ENV) or str(path)
        self.precompile = precompile
        self.core_aten = core_aten
        self.parameters = parameters
        self.own_cache_dir = own_cache_dir  # False: a replay's update, whose loaded artifacts are in the current one
        self.level = level
        self.key = key
        self.sample_limit = sample_limit_bytes if samples else 0
        self._session: Session | None = None
        self._undo: list[Callable[[], None]] = []
        self._job: ranks.JobRank | None = None

    def __enter__(self) -> capture:
        if _torch.releases.CURRENT is None:  # nothing of this torch's private layout is known
            warnings.warn(
                f"dynamo-replay: {_torch.releases.unsupported_message(_torch.releases.VERSION)}: "
                f"nothing is captured to {self.path}, the job runs as usual",
                CaptureWarning,
                stacklevel=2,
            )
            return self
        self._job = ranks.job_rank()
        try:
            session = Session(
                self._own_path(),
                level=self.level,
                sample_limit=self.sample_limit,
                signing_key=signing.resolve_key(self.key),
                precompile=self.precompile,
                decompose=self.core_aten,
                parameters=self.parameters,
                own_cache_dir=self.own_cache_dir,
            )
        except StoreLockedError:  # a peer this process could not tell apart from itself writes it
            warnings.warn(
                f"dynamo-replay: {self.path} is being written by another process: nothing is captured "
                f"here, the job runs as usual (for a job of many ranks, set RANK and WORLD_SIZE as "
                f"torchrun does, or call init_process_group before capture)",
                CaptureWarning,
                stacklevel=2,
            )
            return self
        self._session = session
        try:
            _torch.forget_earlier_cache_artifacts()
            # Replay lifts them too, so a step compiled there finds the captured graph.
            self._undo.append(_torch.LiftedOptimizerState().remove)
            if self.precompile:
                _torch.apply_settings(_torch.PRECOMPILE_SETTINGS)  # not put back, see PRECOMPILE_SETTINGS
                notes = session.precompile_notes
                safety = _torch.PrecompileSafety(notes.not_saved, notes.dropped_guard, notes.guard_tree)
                self._undo.append(safety.remove)
                self._undo.append(_torch.record_dropped_guards(notes.dropped_guard))
                self._undo.append(_torch.StableAutogradCacheKeys().remove)
                self._undo.append(_torch.ranks.watch_distributed_reads(notes.world_size_read))
            session.replay_data.environment = environment_fingerprint()
            session.store.put(
                Manifest(
                    tool=f"dynamo-replay {__version__}",
                    created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    command_line=list(sys.argv),
                    environment=session.replay_data.environment,
                )
            )
            session.put_event(schema.EVENT_JOB, NO_COMPILE, job_facts(), None)
            self._undo.append(trace_intake.listen(session))
            # Stacks name files by index into PyTorch's per-process intern table, which emits a
            # "str" event only the first time a name is seen: record what earlier compiles
            # in this process interned, so this store can resolve every index.
            for name, index in _torch.settings.interned_names():
                session.put_event("str", NO_COMPILE, [name, index], None)
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

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
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
        session.calls.restore()
        if os.getpid() != session.pid:  # a forked child leaving the block: the store is its parent's
            session.cache.restore()
            return
        try:
            session.finish(exc_type, exc, tb)
        finally:
            session.cache.restore()
            session.store.close()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with capture(
                self.path,
                level=self.level,
                key=self.key,
                samples=bool(self.sample_limit),
                sample_limit_bytes=self.sample_limit,
                precompile=self.precompile,
                core_aten=self.core_aten,
                parameters=self.parameters,
            ):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
