"""Replay's install of saved frames: PyTorch 2.13's DynamoCache stood in for, each saved
frame's guarded entries loaded one at a time and vetted (replay/frame_checks.py), what
PyTorch's own loader gets wrong on real models repaired. A private PyTorch touchpoint, like
the rest of _torch/ (guards.py, shapes.py)."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import importlib
import io
import os
import pickle
import re
import sys
import time
import types
from collections.abc import Callable
from typing import Any, Protocol

from dynamo_replay._torch.ddp_split import add_split_check
from dynamo_replay._torch.guards import code_key, restore_dimension_marks
from dynamo_replay._torch.shapes import calling_user_frame, tensor_names
from dynamo_replay.descriptions import code_digest, digests_kept


@dataclasses.dataclass
class InstallReport:
    """What installing one compiled function's saved frames did."""

    installed: int = 0  # guarded entries (frame, guard set) now in force
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (frame, why): compiles as usual
    recreated: list[str] = dataclasses.field(default_factory=list)  # values rebuilt from the live function
    seconds: float = 0.0
    graph_seconds: float = 0.0  # of seconds: loading the compiled graphs' code and kernel libraries


class FrameVetting(Protocol):
    """What replay checks for each saved frame, around PyTorch's loading of its guards."""

    def before_load(
        self, frame: str, guards_state: bytes, local_scope: dict[str, Any], global_scope: dict[str, Any]
    ) -> str | None:
        """Why this guarded entry must not be used, from what is known before its guards load
        (the guards PyTorch's precompile dropped from it), or None."""

    def after_load(
        self,
        frame: str,
        guards_state: bytes,
        manager: Any,
        global_scope: dict[str, Any],
        refused: Callable[[str], None],
    ) -> str | None:
        """Why this guarded entry must not be used, given its loaded guard manager (to which
        checks may be added; one that rejects a call tells `refused` why), or None."""

    def captured_tree(self, guards_state: bytes) -> list[str]:
        """The guard tree PyTorch built for this entry at capture (guard_tree_lines), or []."""


class SafeDynamoCache:
    """Stands in for PyTorch's DynamoCache while replay is active.

    PyTorch asks it for a function's saved package when torch.compile wraps the function, and
    installs what it returns; an exception there ends the job (PyTorch 2.13 catches only
    RuntimeError). This one installs the package itself, one guarded entry at a time: an entry
    whose guards do not load, or whose dropped guards no longer hold, is left out and that
    frame compiles as usual. It then returns None, so PyTorch starts a fresh package for
    whatever compiles later.

    The install (reading the package, building each entry's guard manager) waits for the
    compiled function's first call, through the wrapper's enter hooks, which run before Dynamo
    looks the frame up: a function compiled and never called costs nothing. A function
    compiled twice is installed once (the entries belong to its code object).
    """

    def __init__(
        self,
        vetting: FrameVetting,
        report: Callable[[str, InstallReport], None],
        modules: dict[str, str],
        proceed: Callable[[], bool] = lambda: True,
        later: dict[str, list[tuple[int, bytes]]] | None = None,
    ) -> None:
        from torch._dynamo import package

        self._original = package.DynamoCache
        self._vetting = vetting
        self._modules = modules
        self._report = report
        self._proceed = proceed  # asked before each install: False leaves the function to compile
        self._later = later or {}  # package key -> (generation, package) saved by later generations
        # (generation, frame) -> calls of the saved graphs that generation installed for the frame
        self.hits: collections.Counter[tuple[int, str]] = collections.Counter()
        # frame -> why a call refused its saved entry, where a check of ours knows (a DDP split)
        self.refused: dict[str, str] = {}
        self._installed: list[Any] = []  # packages stay alive as long as replay
        self._codes: dict[int, types.CodeType] = {}  # id -> code of each function installed or pending
        # id(code) -> (code, its saved entries' guard managers): a call that fails them all is
        # explained against the nearest (nearest_failure)
        self.entries: dict[int, tuple[types.CodeType, list[Any]]] = {}
        # (by id: code objects compare equal across files when their bytecode is the same)
        outer = self

        class _Cache(type(self._original)):  # type: ignore[misc]
            def load(self, fn: Callable[..., Any]) -> None:  # type: ignore[override]
                outer._when_first_called(fn, lambda: outer._packages(fn, lambda: super(_Cache, self).load(fn)))
                return None

        package.DynamoCache = _Cache(self._original.path_prefix())

    def _when_first_called(self, fn: Callable[..., Any], load: Callable[[], Any]) -> None:
        """Installs fn's saved package at its compiled wrapper's first call (at once when the
        wrapper cannot be found)."""
        from torch._dynamo.eval_frame import innermost_fn

        code = getattr(innermost_fn(fn), "__code__", None)
        if id(code) in self._codes:
            return
        if code is not None:
            self._codes[id(code)] = code
        pending = [load]

        def install() -> Callable[[], None]:
            try:
                take = pending.pop()  # atomic: one caller installs
            except IndexError:
                return _no_cleanup
            if not self._proceed():
                return _no_cleanup
            try:
                results = take()
            except Exception as error:  # PyTorch's reader: the function compiles as usual
                report = InstallReport(
                    skipped=[
                        (
                            getattr(fn, "__qualname__", repr(fn)),
                            f"its saved package does not read ({type(error).__name__}: {error})",
                        )
                    ]
                )
                self._report(getattr(fn, "__qualname__", repr(fn)), report)
                return _no_cleanup
            if results:
                self._install(fn, *_merged_packages(results))
            return _no_cleanup

        hooks = getattr(_wrapper_being_made(), "enter_exit_hooks", None)
        if isinstance(hooks, list):
            hooks.append(install)
        else:
            install()

    def _packages(self, fn: Callable[..., Any], load: Callable[[], Any]) -> list[tuple[int, Any]]:
        """(generation, package) of fn's saved packages, the capture's first: each later
        generation saved one of its own for the frames it compiled, under the same key, and each
        is installed after the one before."""
        from torch._dynamo.package import CompilePackage

        key = CompilePackage.source_id_from_fn(fn)
        found = [(0, load())]
        for generation, content in self._later.get(key, []):
            self._original._write_to_local_cache(content, key)
            found.append((generation, load()))
        return [(generation, result) for generation, result in found if result is not None]

    def remove(self) -> None:
        from torch._dynamo import package

        package.DynamoCache = self._original

    def _install(self, fn: Callable[..., Any], result: Any, generations: dict[str, int]) -> None:
        from torch._C._dynamo.eval_frame import _reset_precompile_entries
        from torch._dynamo.package import CompilePackage

        name = getattr(fn, "__qualname__", repr(fn))
        frame = code_key(fn.__code__) if hasattr(fn, "__code__") else name
        report = InstallReport()
        start = time.perf_counter()
        installed: list[tuple[dict[str, Any], str]] = []
        loaded: list[types.CodeType] = []  # every code given a saved entry, to undo on failure
        mismatch = _package_mismatch(fn, result.dynamo)
        if mismatch:  # nothing installed: the whole function compiles as usual
            report.skipped.append((frame, mismatch))
        else:
            try:
                package = CompilePackage(fn, result.dynamo)  # checks versions and inlined sources
                with digests_kept():
                    _install_entries(
                        package,
                        fn,
                        result.backends,
                        self._vetting,
                        report,
                        installed,
                        loaded,
                        self._modules,
                        lambda frame, backend_id: _Hits(self.hits, (generations.get(backend_id, 0), frame)),
                        self.refused,
                        self.entries,
                    )
                self._installed.append(package)
            except Exception as error:  # the whole function compiles as usual
                for scope, global_name in installed:
                    scope.pop(global_name, None)
                # Every code given an entry, not only fn's: a resume function's entry left in
                # force would call the globals just removed.
                for code in {id(c): c for c in [getattr(fn, "__code__", None), *loaded] if c is not None}.values():
                    with contextlib.suppress(Exception):
                        _reset_precompile_entries(code)
                report.installed = 0
                report.skipped.append((frame, f"{type(error).__name__}: {error}"))
        report.seconds = time.perf_counter() - start
        self._report(name, report)


def _no_cleanup() -> None:
    return None


def _wrapper_being_made() -> Any:
    """The torch.compile context whose __call__ is wrapping a function now (it asks DynamoCache
    for the function's package), or None."""
    from torch._dynamo.eval_frame import _TorchDynamoContext

    frame = sys._getframe(1)
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if frame.f_code.co_name == "__call__" and isinstance(candidate, _TorchDynamoContext):
            return candidate
        frame = frame.f_back
    return None


def _package_mismatch(fn: Callable[..., Any], dynamo: Any) -> str | None:
    """Why the saved package PyTorch found for fn is another function's, or None. PyTorch 2.13
    keys saved frames by qualified name and first line only, so `forward` at line 30 of two
    files shares one key, and the package found may hold the other file's compiled code."""
    from torch._dynamo.eval_frame import innermost_fn
    from torch._dynamo.package import SerializedCode

    code = innermost_fn(fn).__code__
    if not dynamo.codes:
        return "its saved package holds no code"
    saved = SerializedCode.to_code_object(dynamo.codes[0].python_code)
    if code_digest(saved) != code_digest(code):  # the same code compiles the same; guards check the rest
        return (
            f"the package PyTorch saved under its name and first line is for other code, in "
            f"{saved.co_filename} (PyTorch 2.13 keys saved frames by name and first line only)"
        )
    return None


def _install_entries(
    package: Any,
    fn: Callable[..., Any],
    backends: dict[str, Any],
    vetting: FrameVetting,
    report: InstallReport,
    installed: list[tuple[dict[str, Any], str]],
    loaded: list[types.CodeType],
    modules: dict[str, str],
    hits: Callable[[str, str], _Hits],
    refused: dict[str, str],
    entries: dict[int, tuple[types.CodeType, list[Any]]],
) -> None:
    """CompilePackage.install, with each guarded entry loaded on its own (PyTorch 2.13 loads
    them all or fails): what PyTorch installs per code object, in the same order. One change:
    the compiled function's own frame runs with the globals of the module that defines its
    code, which for a decorated function (transformers' forward) is not the module PyTorch
    records (functools.wraps copies __module__); PyTorch 2.13 installs into the latter."""
    import torch
    from torch._C._dynamo.eval_frame import _load_precompile_entry
    from torch._dynamo.output_graph import get_builtins_dict
    from torch._dynamo.package import SerializedCode, _compile_frame_context, _lookup_code, load_guard_manager

    from dynamo_replay._torch.split_graph import SplitGraphArtifact

    def install_global(scope: dict[str, Any], name: str, value: Any) -> None:
        scope[name] = value
        installed.append((scope, name))

    main_code = package._innermost_fn.__code__
    for code, entry in package._codes.items():
        context = _compile_frame_context(code) if entry.has_compile_id else contextlib.nullcontext()
        with context:
            module = sys.modules[entry.python_module]
            scope = (
                getattr(package._innermost_fn, "__globals__", module.__dict__) if code is main_code else module.__dict__
            )
            for alias, module_name in entry.import_sources.items():
                install_global(scope, alias, importlib.import_module(module_name))
            if entry.install_to_global:
                for function_name in entry.function_names:
                    install_global(scope, function_name, _resume_function(code, scope, function_name))
            target_code = _lookup_code(entry) if entry.code_source else code
            if entry.bypassed:
                if entry.guarded_codes:  # left out at load: PyTorch found a backend missing
                    report.skipped.append((code_key(target_code), _NO_BACKEND))
                continue
            frame = code_key(target_code)
            unloaded = None  # why a compiled graph of this code does not load: the code compiles
            splits = {}  # the split graphs among them: their guards check that DDP splits as saved
            for backend_id in entry.backend_ids:
                if backend_id not in backends:
                    unloaded = f"its compiled graph {backend_id} is not in the store"
                    break
                started = time.perf_counter()
                try:
                    backend = backends[backend_id].after_deserialization()
                except Exception as error:
                    unloaded = f"its compiled graph does not load ({type(error).__name__}: {error})"
                    break
                finally:
                    report.graph_seconds += time.perf_counter() - started
                install_global(scope, backend_id, torch._dynamo.disable(hits(frame, backend_id).counted(backend)))
                if isinstance(backends[backend_id], SplitGraphArtifact):
                    splits[backend_id] = backends[backend_id].content
            if unloaded:
                report.skipped.append((frame, unloaded))
                continue
            if not entry.guarded_codes:  # Dynamo made no graph for it: PyTorch skips the frame
                torch._dynamo.eval_frame.skip_code(target_code)
                continue
            local_scope = _live_locals(fn, target_code) if code is main_code else {}
            for guarded in entry.guarded_codes:
                refusal = vetting.before_load(frame, guarded.guards_state, local_scope, scope)
                if refusal:
                    report.skipped.append((frame, refusal))
                    continue
                try:
                    state, lenient = _load_guards_state(guarded.guards_state)
                    report.recreated += [f"{frame}: {name} restored without its __setstate__" for name in lenient]
                    report.recreated += _fill_missing(state, local_scope, scope, frame)
                    restore_dimension_marks(state.output_graph.local_scope, vetting.captured_tree(guarded.guards_state))
                    if name := state.output_graph.name_of_builtins_dict_key_in_fglobals:
                        scope.setdefault(name, get_builtins_dict(scope))
                    for name in state.output_graph.global_scope:  # the modules its guards read
                        if name in modules and name not in scope:
                            install_global(scope, name, importlib.import_module(modules[name]))
                    # Under caching precompile PyTorch builds the guards twice, the first time to
                    # filter out the kinds it drops; a saved frame holds none of those.
                    with torch._dynamo.config.patch(caching_precompile=False):
                        manager = load_guard_manager(state, target_code, scope)
                except Exception as error:
                    report.skipped.append((frame, f"its saved guards do not load ({type(error).__name__}: {error})"))
                    continue
                refusal = vetting.after_load(
                    frame, guarded.guards_state, manager, scope, functools.partial(refused.__setitem__, frame)
                )
                if refusal:
                    report.skipped.append((frame, refusal))
                    continue
                transformed = SerializedCode.to_code_object(guarded.dynamo_code)
                for name in transformed.co_names:
                    if name in splits:
                        add_split_check(manager, splits[name], functools.partial(refused.__setitem__, frame))
                for name in transformed.co_names:
                    if name in modules and name not in scope:
                        install_global(scope, name, importlib.import_module(modules[name]))
                _load_precompile_entry(target_code, manager, transformed)
                entries.setdefault(id(target_code), (target_code, []))[1].append(manager)
                loaded.append(target_code)
                report.installed += 1


@dataclasses.dataclass(frozen=True)
class FailedGuard:
    """The guard of a frame's nearest saved entry that a call failed (nearest_failure), with what
    its source reads on that call: the facts replay/misses.py says a miss from."""

    text: str  # as PyTorch's check_verbose gives it, user-line comment included
    now: Any = None
    has_now: bool = False
    caller: str | None = None  # "file:line" of the user's call that missed
    library_line: bool = False  # the user line PyTorch names for the guard is PyTorch's own code
    caller_names: dict[str, str] = dataclasses.field(default_factory=dict)  # the guard's tensor -> the caller's name


def nearest_failure(
    managers: list[Any],
    frame_locals: dict[str, Any],
    frame_globals: dict[str, Any],
    reads: Callable[[str], tuple[str | None, str | None]],
) -> FailedGuard | None:
    """Why a call failed every saved entry of its frame, against the nearest one (the entry
    that ran the most guards before one failed): that guard and, where it compares a source
    of the frame, what the source reads now. `reads(guard)` gives (the source it compares, the
    tensor it checks), either None (replay/misses.py reads guard texts). None if it cannot be told."""
    from torch.utils._python_dispatch import _disable_current_modes

    from dynamo_replay._torch.guards import _LiveExpression

    nearest = None
    for manager in managers:
        # Called while Dynamo compiles: replay's own checks in the guards (an optimizer's state
        # initialized) must see real tensors, as on any call.
        with _disable_current_modes():
            info = manager.check_verbose(frame_locals)
        if not info.result and (nearest is None or info.num_guards_executed > nearest.num_guards_executed):
            nearest = info
    if nearest is None or not nearest.verbose_code_parts:
        return None
    text = str(nearest.verbose_code_parts[0])
    found = calling_user_frame()  # the user's call of the function compiling now, as call sites find it
    caller_locals = found[1] if found else {}
    facts: dict[str, Any] = {"caller": _shown(found[0]) if found else None, "library_line": _in_pytorch(text)}
    source, tensor = reads(text.split("  #")[0].strip())
    if tensor is not None and caller_locals:
        with contextlib.suppress(Exception), _disable_current_modes():
            value = _LiveExpression(tensor, frame_globals).value(frame_locals)
            name = tensor_names(caller_locals).get(id(value))
            facts["caller_names"] = {tensor: name} if name else {}
    if source is None:
        return FailedGuard(text, **facts)
    try:
        with _disable_current_modes():
            now = _LiveExpression(source, frame_globals).value(frame_locals)
    except Exception:
        return FailedGuard(text, **facts)
    return FailedGuard(text, now, True, **facts)


def _in_pytorch(text: str) -> bool:
    """Whether the user line PyTorch appends to a guard (`# nn/modules/dropout.py:73 in forward`,
    its file named relative to the torch package where it is PyTorch's) is PyTorch's own code."""
    import torch

    found = re.search(r"# ([^#]+?):\d+ in \w+", text)
    return bool(found) and os.path.isfile(os.path.join(os.path.dirname(torch.__file__), found.group(1).strip()))


def _shown(frame: dict[str, Any]) -> str:
    """A user frame's "file:line", the file relative to the working directory when under it."""
    file = frame["file"]
    return f"{os.path.relpath(file) if file.startswith(os.getcwd() + os.sep) else file}:{frame['line']}"


def _merged_packages(found: list[tuple[int, Any]]) -> tuple[Any, dict[str, int]]:
    """One package of a function's packages from several generations, oldest first: PyTorch
    installs one package per function, and installing a second resets the first's entries. A
    code object's guarded entries and graphs are appended to the same code's in the first
    package; a code only a later one has (a resume function it made) is added. Returns the
    package and the generation of each graph (backend id)."""
    generation, first = found[0]
    made_by = {backend_id: generation for code in first.dynamo.codes for backend_id in code.backend_ids}
    if len(found) == 1:
        return first, made_by
    codes = list(first.dynamo.codes)
    backends = dict(first.backends)

    def identity(code: Any) -> tuple[Any, ...]:
        return (
            code.python_module,
            code.code_source,
            code.python_code.co_name,
            code.python_code.co_firstlineno,
            tuple(code.function_names),
        )

    for generation, later in found[1:]:
        backends.update(later.backends)
        for code in later.dynamo.codes:
            made_by.update(dict.fromkeys(code.backend_ids, generation))
            index = next((i for i, known in enumerate(codes) if identity(known) == identity(code)), None)
            if index is None:
                codes.append(code)
                continue
            known = codes[index]
            codes[index] = dataclasses.replace(
                known,
                guarded_codes=[*known.guarded_codes, *code.guarded_codes],
                backend_ids=[*known.backend_ids, *(b for b in code.backend_ids if b not in known.backend_ids)],
                import_sources={**known.import_sources, **code.import_sources},
                bypassed=known.bypassed and code.bypassed,
            )
    merged = dataclasses.replace(first, dynamo=dataclasses.replace(first.dynamo, codes=codes), backends=backends)
    return merged, made_by


@dataclasses.dataclass
class _Hits:
    """Where a saved frame's calls are counted (a saved frame's hits per start)."""

    counter: collections.Counter[Any]
    key: Any

    def counted(self, backend: Callable[..., Any]) -> Callable[..., Any]:
        counter, key = self.counter, self.key

        @functools.wraps(backend)
        def call(*args: Any, **kwargs: Any) -> Any:
            counter[key] += 1
            return backend(*args, **kwargs)

        return call


def load_later_generation(data: bytes) -> dict[str, bytes]:
    """Loads a later generation's PyTorch cache artifacts (dynamo_replay.generations), all but
    its precompile packages, which are returned by key: each shares its key with the package an
    earlier generation saved for the same function, and PyTorch's cache keeps one per key, so
    SafeDynamoCache installs them one after the other instead."""
    from torch.compiler._cache import CacheArtifactManager

    artifacts = CacheArtifactManager.deserialize(data)
    if artifacts is None:
        raise ValueError("PyTorch could not read a later generation's cache artifacts")
    packages = {artifact.key: artifact.content for artifact in artifacts.pop("precompile", [])}
    CacheArtifactManager.populate_caches(artifacts)
    return packages


_NO_BACKEND = (
    "its compiled graph is not in the store: PyTorch 2.13's precompile saves graphs compiled by "
    "Inductor, not by other backends (aot_eager, eager)"
)


def _load_guards_state(data: bytes) -> tuple[Any, list[str]]:
    """A frame's saved guard state, and the classes restored leniently.

    PyTorch saves a value its guards do not read as missing, and an object's own __setstate__
    may then fail on it (AdamW's reads each parameter's step count). When the plain load
    fails, load again with each class that has its own __setstate__ restored by setting its
    attributes instead: the guards are built from what they read, which was saved, and check
    the live objects on every call."""
    import torch
    from torch._dynamo import package

    try:
        # PyTorch's loader imports FSDP (all of torch.distributed, about half a second) to turn
        # off FSDP's module construction while unpickling; only a state that names FSDP needs it.
        if b"fsdp" not in data:
            return pickle.loads(data), []
        with _fsdp_modules_keep_their_class():
            return package.load_guards_state(data), []
    except Exception as error:
        first = error
    try:  # 2.15 saves a pruned container as a persistent id, which only PyTorch's loader reads
        return package.load_guards_state(data), []
    except Exception:
        pass
    lenient: list[str] = []
    unpickler = getattr(package, "_GuardsStateUnpickler", pickle.Unpickler)  # 2.15 reads persistent ids

    class LenientUnpickler(unpickler):  # type: ignore[misc, valid-type]
        def find_class(self, module: str, name: str) -> Any:
            found = super().find_class(module, name)
            if (
                isinstance(found, type)
                and isinstance(_own_attributes(found).get("__setstate__"), types.FunctionType)
                and found.__dictoffset__
                and not issubclass(found, (torch.Tensor, torch.nn.Module))
            ):
                try:
                    replacement = _lenient_class(found)
                except TypeError:  # a C type that cannot be subclassed: restored as usual
                    return found
                lenient.append(found.__qualname__)
                return replacement
            return found

    try:
        return LenientUnpickler(io.BytesIO(data)).load(), lenient
    except Exception:
        raise first from None


@contextlib.contextmanager
def _fsdp_modules_keep_their_class() -> Any:
    """While a saved guard state loads, an FSDP2 module is made with its FSDP class. FSDP's
    `__new__` makes an instance of the class it wraps instead (for a container indexed into),
    so the loaded module's type guard would check the plain class (GPT2Model, not
    FSDPGPT2Model) and fail on every call of the live, sharded module."""
    from torch.distributed.fsdp import FSDPModule

    original = FSDPModule.__dict__["__new__"]

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        return super(FSDPModule, cls).__new__(cls)

    FSDPModule.__new__ = __new__  # type: ignore[method-assign]
    try:
        yield
    finally:
        FSDPModule.__new__ = original  # type: ignore[method-assign]


def _own_attributes(cls: type) -> dict[str, Any]:
    """Attributes defined by the class or a base other than object, nearest first."""
    found: dict[str, Any] = {}
    for base in cls.__mro__:
        if base is not object:
            for name, value in vars(base).items():
                found.setdefault(name, value)
    return found


def _lenient_class(cls: type) -> type:
    def __setstate__(self: Any, state: Any) -> None:
        self.__class__ = cls  # the real class again: type guards compare against it
        try:
            cls.__setstate__(self, state)
        except Exception:
            if not isinstance(state, dict):
                raise
            self.__dict__.update(state)  # what the guards read is there; the rest was not saved

    return type(cls.__name__, (cls,), {"__setstate__": __setstate__, "__module__": cls.__module__})


def _resume_function(code: types.CodeType, scope: dict[str, Any], name: str) -> Any:
    """What PyTorch installs for a resume function: the function, or for one with free
    variables a factory that takes the closure (as output_graph.install_resume_function_global)."""
    if not code.co_freevars:
        return types.FunctionType(code, scope, name)

    def make(closure: tuple[types.CellType, ...]) -> types.FunctionType:
        return types.FunctionType(code, scope, name, None, closure)

    import torch

    torch._dynamo.eval_frame.skip_code(make.__code__)  # PyTorch's own factory lives in torch, which Dynamo skips
    return make


def _live_locals(fn: Callable[..., Any], code: types.CodeType) -> dict[str, Any]:
    """The locals of a call of fn that are known before the call: `self` of a bound method and
    the cells of its closure (for transformers' decorated forward, the wrapped function)."""
    known: dict[str, Any] = {}
    if isinstance(fn, types.MethodType) and code.co_varnames[:1]:
        known[code.co_varnames[0]] = fn.__self__
    closure = getattr(fn, "__closure__", None) or ()
    for name, cell in zip(code.co_freevars, closure):
        with contextlib.suppress(ValueError):
            known[name] = cell.cell_contents
    return known


def _fill_missing(state: Any, local_scope: dict[str, Any], global_scope: dict[str, Any], frame: str) -> list[str]:
    """PyTorch saves some values a frame's guards read as missing: a function whose qualified
    name leads elsewhere, as one wrapped by a decorator (transformers' output-capturing
    `wrapper` closes over the model's real forward). Where the live function supplies the
    value (its closure cells, `self`, its module's globals), put it back, so the guards are
    built on it; they still check it on every call."""
    from torch._dynamo.guards import _Missing

    filled = []
    for scope, live, prefix in (
        (state.output_graph.local_scope, local_scope, "L"),
        (state.output_graph.global_scope, global_scope, "G"),
    ):
        for name, value in list(scope.items()):
            if isinstance(value, _Missing) and name in live:
                scope[name] = live[name]
                filled.append(f"{frame}: {prefix}['{name}']")
    return filled
