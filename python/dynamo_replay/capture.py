"""capture(): record everything a torch.compile job produces into a store.

Hooks go in only through PyTorch's own hook points and all come out when capture ends, also
on an exception: a handler on the structured-trace logger (torch.__trace), which carries
compile ids, guards, graphs, symbolic-shape events and metrics; and Dynamo's bytecode hook,
which sees each original and transformed code object. No PyTorch function is replaced.
"""

from __future__ import annotations

import dis
import functools
import json
import logging
import sys
import threading
import time
import traceback
from datetime import datetime, timezone
from types import CodeType, TracebackType
from typing import Any, Callable, TypeVar

from dynamo_replay._core import Artifact, CodeObject, Manifest, Store, TraceEvent, __version__
from dynamo_replay.fingerprint import environment_fingerprint

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


def _current_compile_id() -> tuple[int, int, int]:
    from torch._guards import CompileContext

    trace = CompileContext.current_trace_id()
    if trace is None or trace.compile_id.frame_id is None:
        return _NO_COMPILE
    return (trace.compile_id.frame_id, trace.compile_id.frame_compile_id, trace.attempt)


def _code_fields(code: CodeType) -> str:
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
    return json.dumps(fields, default=repr)


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
    def __init__(self, path: str, level: int) -> None:
        self.store = Store.create(path, level=level, overwrite=True)
        self.lock = threading.Lock()
        self.failures: list[str] = []

    def put_event(self, name: str, compile_id: tuple[int, int, int], metadata: Any, payload: str | bytes | None) -> None:
        key, size = "", 0
        if payload:
            data = payload.encode() if isinstance(payload, str) else payload
            key, size = self.store.put_blob(data), len(data)
        self.store.put(TraceEvent(name=name, compile_id=compile_id, metadata_json=json.dumps(metadata, default=str),
                                  payload_key=key, payload_size=size, time=time.time()))

    def trace_event(self, metadata: dict[str, Any], payload: str | None) -> None:
        name = next((k for k in metadata if k not in _NOT_NAMES), "unknown")
        self.put_event(name, _compile_id(metadata), metadata.get(name), payload)

    def bytecode_hook(self, code: CodeType, new_code: CodeType) -> None:
        try:
            compile_id = _current_compile_id()
            for role, c in (("original", code), ("transformed", new_code)):
                self.store.put(CodeObject(
                    compile_id=compile_id, role=role, name=c.co_qualname, filename=c.co_filename,
                    first_line=c.co_firstlineno, fields_json=_code_fields(c),
                    bytecode_key=self.store.put_blob(c.co_code),
                    disassembly_key=self.store.put_blob(dis.Bytecode(c).dis().encode()),
                ))
        except Exception:
            self.note_failure("bytecode hook")
        return None  # keep Dynamo's code

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
            self.store.put(Artifact(name="torch/mega_cache.bin", media_type="application/x-torch-mega-cache",
                                    blob_key=self.store.put_blob(data), size=len(data), attributes=counts))
        except Exception:
            self.note_failure("save_cache_artifacts")

    def note_failure(self, where: str) -> None:
        with self.lock:
            self.failures.append(f"{where}: {traceback.format_exc(limit=3)}")


class capture:  # noqa: N801 - used as a context manager and decorator, like contextlib's
    """Record every torch.compile compilation in this block (or call) into the store at `path`.

    `with dynamo_replay.capture("job.dynrep"): ...` or `@dynamo_replay.capture("job.dynrep")`.
    An exception in the job still leaves a finished store holding everything up to it, and
    the exception itself.
    """

    def __init__(self, path: str, *, level: int = 3) -> None:
        self.path = str(path)
        self.level = level
        self._session: _Session | None = None
        self._undo: list[Callable[[], None]] = []

    def __enter__(self) -> capture:
        import torch._dynamo.convert_frame

        session = _Session(self.path, self.level)
        self._session = session
        try:
            session.store.put(Manifest(
                tool=f"dynamo-replay {__version__}",
                created_at=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                command_line=list(sys.argv),
                environment=environment_fingerprint(),
            ))
            logger = logging.getLogger(_TRACE_LOGGER)
            handler = _TraceHandler(session)
            old_level, old_propagate = logger.level, logger.propagate
            logger.addHandler(handler)
            logger.setLevel(logging.DEBUG)
            logger.propagate = False  # the job's own log handlers must not see the trace
            self._undo.append(lambda: (logger.removeHandler(handler), logger.setLevel(old_level),
                                       setattr(logger, "propagate", old_propagate)))
            # Stacks name files by index into PyTorch's per-process intern table, which emits a
            # "str" event only the first time a name is seen: record what earlier compiles
            # in this process interned, so this store can resolve every index.
            from torch._logging.structured import INTERN_TABLE

            for name, index in list(INTERN_TABLE.items()):
                session.put_event("str", _NO_COMPILE, [name, index], None)
            handle = torch._dynamo.convert_frame.register_bytecode_hook(session.bytecode_hook)
            self._undo.append(handle.remove)
        except BaseException:
            self._finish(*sys.exc_info())
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._finish(exc_type, exc, tb)

    def _finish(self, exc_type, exc, tb) -> None:
        while self._undo:
            self._undo.pop()()
        session, self._session = self._session, None
        if session is None:
            return
        try:
            if exc is not None and not (isinstance(exc, SystemExit) and not exc.code):
                session.put_event("dynamo_replay.error", _NO_COMPILE,
                                  {"type": exc_type.__qualname__, "message": str(exc)},
                                  "".join(traceback.format_exception(exc_type, exc, tb)))
            session.save_mega_cache()
            session.put_event("dynamo_replay.summary", _NO_COMPILE, _summary(session), None)
        finally:
            session.store.close()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with capture(self.path, level=self.level):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def _summary(session: _Session) -> dict[str, Any]:
    from torch._dynamo.utils import counters

    return {
        "counters": {group: dict(values) for group, values in counters.items()},
        "capture_failures": session.failures,
    }
