"""capture(): record everything a torch.compile job produces into a store.

Hooks go in only through PyTorch's own hook points and all come out when capture ends, also
on an exception: a handler on the structured-trace logger (torch.__trace), which carries
compile ids, guards, graphs, symbolic-shape events and metrics; and Dynamo's bytecode hook,
which sees each original and transformed code object. No PyTorch function is replaced.

Capture compiles with the job's own settings, so the compile costs what it costs without
capture. With precompile=True it also turns on Dynamo's caching precompile, so PyTorch packages
each frame's guards and transformed bytecode and replay skips Dynamo too (it applies to
functions passed to torch.compile inside the block; it stays on afterwards, see
PRECOMPILE_SETTINGS). It is off by default because PyTorch 2.13 fails some ordinary compiles
under it (see _PRECOMPILE_LIMITS), and capture must never break a job that runs without it.
Caching precompile also drops identity guards it cannot save (on modules and builtins such as
torch.nn.functional.linear), as PyTorch warns.
"""

from __future__ import annotations

import dis
import functools
import gc
import hashlib
import json
import linecache
import logging
import sys
import threading
import time
import traceback
from datetime import datetime, timezone
from types import CodeType, TracebackType
from typing import Any, Callable, TypeVar

from dynamo_replay._core import Artifact, CodeObject, Manifest, Store, TraceEvent, __version__
from dynamo_replay import graph_ir, guards, kernels, signing, tensor_samples
from dynamo_replay.fingerprint import environment_fingerprint

__all__ = ["capture"]

_TRACE_LOGGER = "torch.__trace"
_ID_KEYS = ("frame_id", "frame_compile_id", "attempt")
_NOT_NAMES = {*_ID_KEYS, "has_payload"}
_NO_COMPILE = (-1, -1, -1)

F = TypeVar("F", bound=Callable[..., Any])

MEGA_CACHE_NAME = "torch/mega_cache.bin"
MEGA_CACHE_MEDIA_TYPE = "application/x-torch-mega-cache"
# The config values capture sets for a precompile capture (see the module docstring); replay
# sets what the store records. (module, name, value). They stay set for the rest of the
# process: a function compiled with caching precompile keeps a package, and in PyTorch 2.13
# its next recompile with the setting off fails an assertion when a guard cannot be saved.
# The bundled AOTAutograd cache is what caching precompile uses anyway; it is set as well
# because Inductor checks only it before compiling a graph that calls nothing (such as
# optimizer.zero_grad()), and without it PyTorch 2.13 fails that compile under precompile.
PRECOMPILE_SETTINGS = (
    ("torch._dynamo.config", "caching_precompile", True),
    ("torch._functorch.config", "bundled_autograd_cache", True),
)
# How PyTorch 2.13's caching precompile fails a compile outright where it should leave the
# frame out of its package: a guard names a class that is not at module level; a frame it
# decides not to package (a compiled optimizer step: "named parameters due to static
# addresses") then trips an assertion.
_PRECOMPILE_LIMITS = ("cannot be saved into torch.compile() package", "check_fn.guards_state must not be None")


def apply_settings(settings: tuple[tuple[str, str, Any], ...]) -> Callable[[], None]:
    """Sets each module.attribute to its value; returns a function that puts the old values back."""
    import importlib

    old = []
    for module_name, attr, value in settings:
        module = importlib.import_module(module_name)
        old.append((module, attr, getattr(module, attr)))
        setattr(module, attr, value)

    def restore() -> None:
        for module, attr, value in reversed(old):
            setattr(module, attr, value)

    return restore


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
    fields["source_lines"], fields["source_sha256"] = source_hash(code.co_filename, code)
    return json.dumps(fields, default=repr)


def source_hash(filename: str, code: CodeType | None = None, lines: list[int] | None = None) -> tuple[list[int], str]:
    """([first, last], sha256 of those source lines) of a function, as the file reads now;
    ([], "") when the file cannot be read (code made by exec, a deleted file)."""
    if lines is None and code is not None:
        numbers = [line for *_, line in code.co_lines() if line is not None] + [code.co_firstlineno]
        lines = [min(numbers), max(numbers)]
    text = linecache.getlines(filename)
    if not lines or not text or lines[1] > len(text):
        return [], ""
    return lines, hashlib.sha256("".join(text[lines[0] - 1:lines[1]]).encode()).hexdigest()


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
    def __init__(self, path: str, level: int, sample_limit: int, signing_key: bytes | None) -> None:
        self.store = Store.create(path, level=level, overwrite=True)
        self.cache = kernels.PrivateCacheDir()
        self.lock = threading.Lock()
        self.failures: list[str] = []
        self.signing_key = signing_key
        self.signed: dict[str, tuple[str, bytes]] = {}
        self.ir_graphs: list[tuple[tuple[int, int, int], str, str]] = []  # compile id, event, text
        self.guard_trees: list[tuple[tuple[int, int, int], str]] = []  # compile id, text
        self.sample_limit = sample_limit  # bytes per graph call; 0: no samples
        self.recorders: list[tensor_samples.FirstCallRecorder] = []

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
        if name in graph_ir.IR_GRAPHS and isinstance(payload, str):
            self.ir_graphs.append((_compile_id(metadata), name, payload))
        elif name == "dynamo_cpp_guards_str" and isinstance(payload, str):
            self.guard_trees.append((_compile_id(metadata), payload))

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
                self.put_event("dynamo_replay.guards", compile_id, {"count": len(parsed)}, json.dumps(parsed))
            except Exception:
                self.note_failure("guard list")

    def save_graph_irs(self) -> None:
        for compile_id, name, text in self.ir_graphs:
            try:
                ir = graph_ir.graph_ir(text)
                self.put_event("dynamo_replay.graph_ir", compile_id, {"graph": name, "nodes": len(ir["nodes"])},
                               json.dumps(ir))
            except Exception:
                self.note_failure(f"graph IR of {name}")

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
            if self.sample_limit:
                self.record_samples(compile_id)
        except Exception:
            self.note_failure("bytecode hook")
        return None  # keep Dynamo's code

    def record_samples(self, compile_id: tuple[int, int, int]) -> None:
        found = tensor_samples.compiled_graph_globals(depth=3)
        if found is None:
            self.note_failure("samples: could not find the compiled graphs")
            return
        scope, names = found
        taken = {id(r.stand_in) for r in self.recorders}
        for name in names:
            if id(scope.get(name)) in taken:
                continue

            def record(inputs: list, outputs: list, name: str = name) -> None:
                self.put_event("dynamo_replay.sample", compile_id, {"graph": name, "inputs": inputs, "outputs": outputs}, None)

            recorder = tensor_samples.FirstCallRecorder(scope, name, self.sample_limit, self.store.put_blob, record)
            recorder.install()
            self.recorders.append(recorder)

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
            self.put_artifact(MEGA_CACHE_NAME, MEGA_CACHE_MEDIA_TYPE, data, counts)
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
                self.put_artifact(name, kernels.KERNEL_MEDIA_TYPE, path.read_bytes())
            if libraries:
                identity = kernels.compiler_identity()
                self.put_artifact(kernels.TOOLCHAIN_NAME, kernels.TOOLCHAIN_MEDIA_TYPE, json.dumps(identity).encode(),
                                  {"name": identity["name"]})
        except Exception:
            self.note_failure("kernel libraries")

    def sign(self) -> None:
        """Adds the signature over every artifact put so far (none may follow it)."""
        signature = signing.sign(self.signing_key, self.signed).encode()
        self.put_artifact(signing.SIGNATURE_NAME, signing.SIGNATURE_MEDIA_TYPE, signature,
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
    Replay of the store skips AOTAutograd, Inductor and the C++ compiler; Dynamo traces again.
    `precompile=True` turns on PyTorch's caching precompile so replay skips Dynamo as well, for
    jobs PyTorch 2.13 can package (see the module docstring).
    """

    def __init__(self, path: str, *, level: int = 3, key: str | bytes | None = None, samples: bool = True,
                 sample_limit_bytes: int = tensor_samples.DEFAULT_LIMIT_BYTES, precompile: bool = False) -> None:
        self.path = str(path)
        self.precompile = precompile
        self.level = level
        self.key = key
        self.sample_limit = sample_limit_bytes if samples else 0
        self._session: _Session | None = None
        self._undo: list[Callable[[], None]] = []

    def __enter__(self) -> capture:
        import torch._dynamo.convert_frame

        session = _Session(self.path, self.level, self.sample_limit, signing.resolve_key(self.key))
        self._session = session
        try:
            if self.precompile:
                apply_settings(PRECOMPILE_SETTINGS)  # not put back, see PRECOMPILE_SETTINGS
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
        for recorder in session.recorders:  # graphs never called inside the block
            recorder.restore()
        try:
            if self.precompile and exc is not None and any(limit in str(exc) for limit in _PRECOMPILE_LIMITS):
                print("dynamo-replay: this error comes from PyTorch 2.13's caching precompile, which capture turned on\n"
                      "  for precompile=True (--precompile); capture without it", file=sys.stderr)
            if exc is not None and not (isinstance(exc, SystemExit) and not exc.code):
                session.put_event("dynamo_replay.error", _NO_COMPILE,
                                  {"type": exc_type.__qualname__, "message": str(exc)},
                                  "".join(traceback.format_exception(exc_type, exc, tb)))
            session.save_structured()
            session.save_mega_cache()
            session.save_kernels()
            if session.signing_key:
                session.sign()
            session.put_event("dynamo_replay.summary", _NO_COMPILE, _summary(session), None)
        finally:
            session.cache.restore()
            session.store.close()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with capture(self.path, level=self.level, key=self.key, samples=bool(self.sample_limit),
                         sample_limit_bytes=self.sample_limit, precompile=self.precompile):
                return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def _summary(session: _Session) -> dict[str, Any]:
    from torch._dynamo import bytecode_transformation
    from torch._dynamo.utils import counters

    return {
        "counters": {group: dict(values) for group, values in counters.items()},
        # Replay needs it to keep new globals clear of those the saved frames install.
        "dynamo_unique_ids": next(bytecode_transformation._unique_id_counter),
        "capture_failures": session.failures,
    }
