"""replay(): run a captured torch.compile job again without compiling it.

Everything replay loads is PyTorch's own: the Mega-Cache bytes (Inductor FX graphs, AOTAutograd
entries and the caching-precompile packages that hold each frame's guards and transformed
bytecode), plus the kernel libraries Inductor built. Before any of it is loaded, the store is
checked: finished and sound, signed if a key is set, captured by the same torch build, Python,
CPU, compiler and compile configs, from source that has not changed since. If anything differs,
nothing is loaded, a warning names every difference and the job compiles as usual (strict mode
raises instead). Guards stay in force: a call they reject compiles normally, or raises in
strict mode.

A store must come from a trusted source: loading it unpickles PyTorch artifacts and dlopens
libraries. See dynamo_replay.signing for signed stores.
"""

from __future__ import annotations

import json
import linecache
import sys
import time
import warnings
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Callable

from dynamo_replay import kernels, signing
from dynamo_replay._core import Artifact, CodeObject, Manifest, Store, TraceEvent
from dynamo_replay.capture import MEGA_CACHE_NAME, PRECOMPILE_SETTINGS, apply_settings, source_hash
from dynamo_replay.errors import ReplayRefusedError, ReplayWarning, StoreError
from dynamo_replay.fingerprint import environment_fingerprint

__all__ = ["replay", "ReplaySummary", "CompiledFrame"]

# Fingerprint entries that describe the host but do not decide whether compiled code is valid.
_NOT_COMPARED = {"platform"}


@dataclass
class CompiledFrame:
    """A frame that compiled while replay was active, and why."""

    function: str
    filename: str
    line: int
    reason: str
    seconds: float

    def __str__(self) -> str:
        return f"{self.function} ({self.filename}:{self.line}): {self.reason} [{self.seconds:.2f} s]"


@dataclass
class ReplaySummary:
    store: str
    loaded: bool = False
    refused: str | None = None
    differences: list[str] = field(default_factory=list)
    functions_installed: int = 0
    kernel_libraries: int = 0
    captured_compiles: int = 0
    captured_compile_seconds: float = 0.0
    not_packaged: list[str] = field(default_factory=list)
    compiled: list[CompiledFrame] = field(default_factory=list)
    load_seconds: float = 0.0
    precompiled: bool = False  # captured with precompile: Dynamo's frames are in the store too

    @property
    def compile_seconds(self) -> float:
        return sum(frame.seconds for frame in self.compiled)

    @property
    def compile_seconds_saved(self) -> float:
        """The capture's compile time, less what compiling and loading took under replay."""
        if not self.loaded:
            return 0.0
        return self.captured_compile_seconds - self.compile_seconds - self.load_seconds

    def as_dict(self) -> dict[str, Any]:
        return {
            "store": self.store, "loaded": self.loaded, "refused": self.refused, "differences": self.differences,
            "functions_installed": self.functions_installed, "kernel_libraries": self.kernel_libraries,
            "captured_compiles": self.captured_compiles, "captured_compile_seconds": self.captured_compile_seconds,
            "not_packaged": self.not_packaged, "compiled": [vars(frame) for frame in self.compiled],
            "load_seconds": self.load_seconds, "compile_seconds_saved": self.compile_seconds_saved,
            "precompiled": self.precompiled,
        }

    def __str__(self) -> str:
        if not self.loaded:
            lines = [f"dynamo-replay: {self.store} not loaded: {self.refused}"]
            lines += [f"  {difference}" for difference in self.differences]
            return "\n".join(lines)
        lines = [
            f"dynamo-replay: {self.store}",
            f"  loaded in {self.load_seconds:.2f} s: {self.functions_installed} compiled functions, "
            f"{self.kernel_libraries} kernel libraries",
            f"  captured: {self.captured_compiles} compiles, {self.captured_compile_seconds:.2f} s",
            f"  compiled anyway: {len(self.compiled)} ({self.compile_seconds:.2f} s)"
            + ("" if self.precompiled else "; captured without --precompile, so Dynamo traces each frame"
               " again and takes its graphs from the store"),
        ]
        lines += [f"    {frame}" for frame in self.compiled]
        if self.not_packaged:
            lines.append("  frames PyTorch could not save, which compile normally:")
            lines += [f"    {entry}" for entry in self.not_packaged]
        lines.append(f"  compile time saved: {self.compile_seconds_saved:.2f} s")
        return "\n".join(lines)


class _Refused(Exception):
    def __init__(self, reason: str, differences: list[str] | None = None) -> None:
        super().__init__(reason)
        self.differences = differences or []


@dataclass
class _Loaded:
    """What replay read from the store, before any of it is trusted."""

    environment: dict[str, str]
    artifacts: dict[str, tuple[str, bytes]]
    source_checks: list[tuple[str, str, list[int], str]]  # name, file, [first, last], sha256
    metrics: list[dict[str, Any]]
    bypasses: list[str]
    unique_ids: int


def _read_store(path: str) -> _Loaded:
    try:
        with Store.open(path) as store:
            state = store.info().state
            if state != "finished":
                raise _Refused(f"the store was not finished by its writer ({state}); capture the job again")
            manifests = store.records(Manifest)
            if not manifests:
                raise _Refused("the store holds no manifest, so it is not a capture")
            artifacts = {a.name: (a.media_type, store.get_blob(a.blob_key)) for a in store.records(Artifact)}
            checks = []
            for code in store.records(CodeObject):
                fields = json.loads(code.fields_json)
                if code.role == "original" and fields.get("source_sha256"):
                    checks.append((code.name, code.filename, fields["source_lines"], fields["source_sha256"]))
            metrics, bypasses, unique_ids = [], [], 0
            for event in store.records(TraceEvent):
                if event.name == "dynamo_replay.summary":
                    unique_ids = int((json.loads(event.metadata_json) or {}).get("dynamo_unique_ids", 0))
                elif event.name == "compilation_metrics":
                    metrics.append(json.loads(event.metadata_json) or {})
                elif event.name == "artifact" and "precompile_cache_bypass" in event.metadata_json and event.payload_key:
                    bypasses.append((event.compile_id, _bypass_line(store.get_blob(event.payload_key))))
    except StoreError as error:
        raise _Refused(str(error)) from None
    return _Loaded(manifests[0].environment, artifacts, checks, metrics, _name_bypasses(bypasses, metrics), unique_ids)


def _name_bypasses(bypasses: list[tuple[tuple[int, int, int], str]], metrics: list[dict[str, Any]]) -> list[str]:
    """'fn (file:line): reason' for each compile PyTorch left out of its package."""
    where = {}
    for m in metrics:
        if isinstance(m.get("compile_id"), str):
            where[m["compile_id"]] = f"{m.get('co_name')} ({m.get('co_filename')}:{m.get('co_firstlineno')})"
    lines = []
    for (frame, compile_, attempt), reason in bypasses:
        key = f"{frame}/{compile_}" + (f"_{attempt}" if attempt else "")
        lines.append(f"{where.get(key, 'compile ' + key)}: {reason}")
    return lines


def _bypass_line(payload: bytes) -> str:
    try:
        return str(json.loads(payload).get("_reason", "no reason given"))
    except (ValueError, AttributeError):
        return payload.decode(errors="replace")[:200]


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def fingerprint_differences(captured: dict[str, str], current: dict[str, str]) -> list[str]:
    differences = []
    for key in sorted((captured.keys() | current.keys()) - _NOT_COMPARED):
        was, now = captured.get(key, "(absent)"), current.get(key, "(absent)")
        if was != now:
            differences.append(f"{key}: captured {_clip(was)}, now {_clip(now)}")
    return differences


def source_differences(checks: list[tuple[str, str, list[int], str]]) -> list[str]:
    differences, seen = [], set()
    for name, filename, lines, digest in checks:
        if (filename, tuple(lines)) in seen:
            continue
        seen.add((filename, tuple(lines)))
        linecache.checkcache(filename)
        if source_hash(filename, lines=lines)[1] != digest:
            differences.append(f"source of {name} ({filename}:{lines[0]}-{lines[1]}) changed since capture")
    return differences


def _captured_settings(environment: dict[str, str]) -> tuple[tuple[str, str, Any], ...]:
    """The settings a precompile capture changes, with the values this store was captured with."""
    settings = []
    for module, name, value in PRECOMPILE_SETTINGS:
        recorded = environment.get(f"config.{module.split('.')[1].lstrip('_')}.{name}")
        settings.append((module, name, recorded == "True" if recorded in ("True", "False") else value))
    return tuple(settings)


def _skip_unique_ids(captured: int) -> None:
    """Moves Dynamo's counter for generated global names past the capture's last one.

    Saved frames install globals under the names the capture process gave them (such as
    `__builtins_dict___0`); a frame that compiles under replay would draw the same names from a
    fresh counter and Dynamo fails on the clash (PyTorch 2.13).
    """
    import itertools

    from torch._dynamo import bytecode_transformation

    current = next(bytecode_transformation._unique_id_counter)
    bytecode_transformation._unique_id_counter = itertools.count(max(current, captured + 1))


class replay:  # noqa: N801 - a context manager, like capture
    """Run the torch.compile work in this block from the store at `path` instead of compiling.

    Functions must be passed to torch.compile inside the block (PyTorch attaches its saved
    frames to the compiled wrapper when it is made). `strict=True` raises ReplayRefusedError
    when the store cannot be used and, for a store captured with precompile, turns any compile
    into an error naming the reason.
    `key` (or DYNAMO_REPLAY_KEY) makes replay refuse a store whose signature does not verify.
    The summary is printed to stderr at the end unless `verbose=False`; it is `.summary`.
    """

    def __init__(self, path: str, *, strict: bool = False, key: str | bytes | None = None, verbose: bool = True) -> None:
        self.path = str(path)
        self.strict = strict
        self.key = key
        self.verbose = verbose
        self._summary = ReplaySummary(store=self.path)
        self._active = False
        self._undo: list[Callable[[], None]] = []
        self._undo_if_refused: Callable[[], None] = lambda: None
        self._metrics_before = 0
        self._captured_frames: set[tuple[str, int]] = set()

    @property
    def summary(self) -> ReplaySummary:
        """What replay loaded and what compiled anyway so far."""
        if self._active:
            self._collect_compiles()
        return self._summary

    def __enter__(self) -> replay:
        start = time.perf_counter()
        try:
            self._activate()
        except _Refused as refusal:
            self._undo_if_refused()
            self._undo_all()
            self.summary.refused, self.summary.differences = str(refusal), refusal.differences
            message = str(self.summary)
            if self.strict:
                raise ReplayRefusedError(message) from None
            warnings.warn(message + "\n  the job compiles as usual", ReplayWarning, stacklevel=2)
            return self
        self.summary.loaded = self._active = True
        self.summary.load_seconds = time.perf_counter() - start
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._active:
            self._collect_compiles()
        self._active = False
        self._undo_all()
        if self.verbose and self.summary.loaded:
            print(self.summary, file=sys.stderr)

    def _undo_all(self) -> None:
        while self._undo:
            self._undo.pop()()

    def _activate(self) -> None:
        loaded = _read_store(self.path)
        artifacts = loaded.artifacts
        if MEGA_CACHE_NAME not in artifacts:
            raise _Refused("the store holds no PyTorch cache artifacts (nothing was compiled inside capture)")
        self._check_signature(artifacts)
        libraries = {name: data for name, (_, data) in artifacts.items() if name.startswith(kernels.KERNEL_PREFIX)}
        try:
            kernels.check_kernel_names(list(libraries))
        except ValueError as error:
            raise _Refused(str(error)) from None

        import torch.compiler

        # The settings are put back if the store is refused; after a successful load they stay
        # (see PRECOMPILE_SETTINGS in capture.py).
        settings = _captured_settings(loaded.environment)
        self._undo_if_refused = apply_settings(settings)
        if kernels.TOOLCHAIN_NAME in artifacts:
            identity = json.loads(artifacts[kernels.TOOLCHAIN_NAME][1])
            if kernels.compiler_missing(identity):
                self._undo.append(kernels.CompilerStandIn(identity).remove)
        differences = fingerprint_differences(loaded.environment, environment_fingerprint())
        differences += source_differences(loaded.source_checks)
        if differences:
            raise _Refused("this process differs from the one captured", differences)

        self.summary.kernel_libraries = len(libraries)
        kernels.restore_kernel_libraries(libraries)
        try:
            info = torch.compiler.load_cache_artifacts(artifacts[MEGA_CACHE_NAME][1])
        except Exception as error:  # PyTorch's own loader: any failure means nothing usable
            raise _Refused(f"PyTorch could not load the store's cache artifacts: {error!r}") from None
        self.summary.functions_installed = len(info.artifacts.get("precompile", [])) if info else 0
        self.summary.precompiled = {name: value for _, name, value in settings}["caching_precompile"]
        done = [m for m in loaded.metrics if not m.get("fail_type")]
        self.summary.captured_compiles = len(done)
        self.summary.captured_compile_seconds = sum(m.get("entire_frame_compile_time_s") or 0.0 for m in done)
        self.summary.not_packaged = loaded.bypasses
        self._captured_frames = {(filename, lines[0]) for _, filename, lines, _ in loaded.source_checks}
        _skip_unique_ids(loaded.unique_ids)
        self._observe(torch)

    def _check_signature(self, artifacts: dict[str, tuple[str, bytes]]) -> None:
        key = signing.resolve_key(self.key)
        if key is None:
            return
        signature = artifacts.pop(signing.SIGNATURE_NAME, None)
        if signature is None:
            raise _Refused("a signing key is set but the store is not signed")
        if not signing.verify(key, artifacts, signature[1].decode(errors="replace")):
            raise _Refused("the store's signature does not verify with the key given (altered, or signed with another key)")

    def _observe(self, torch: Any) -> None:
        from torch._dynamo import eval_frame
        from torch._dynamo.utils import get_compilation_metrics

        self._metrics_before = len(get_compilation_metrics())
        if self.strict and self._summary.precompiled:  # otherwise Dynamo has to trace every frame
            prior = eval_frame._stance
            torch.compiler.set_stance("fail_on_recompile")
            self._undo.append(lambda: eval_frame._set_stance(prior))

    def _why_compiled(self, filename: str | None, line: int | None) -> str:
        if (filename, line) in self._captured_frames:
            if not self._summary.precompiled:
                return "traced again (captured without --precompile)"
            return "the call failed the guards of every saved entry (strict=True names the failing guard)"
        return "this frame was not compiled during capture"

    def _collect_compiles(self) -> None:
        from torch._dynamo.utils import get_compilation_metrics

        self._summary.compiled = [
            CompiledFrame(
                function=metrics.co_name or "?", filename=metrics.co_filename or "?", line=metrics.co_firstlineno or 0,
                reason=metrics.recompile_reason or self._why_compiled(metrics.co_filename, metrics.co_firstlineno),
                seconds=metrics.entire_frame_compile_time_s or 0.0,
            )
            for metrics in get_compilation_metrics()[self._metrics_before:]
        ]
