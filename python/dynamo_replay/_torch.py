"""Every private PyTorch 2.13 touchpoint of dynamo-replay, in one place.

Capture and replay reach into PyTorch only through this module, _torch_guards (the guard
table, value descriptions, dropped guards and guard trees) and _torch_shapes (what capture's
shape events read from PyTorch's frames), so a new PyTorch release is checked in these three.
What this one touches, and why:
- Dynamo's caching precompile (torch._dynamo.package): capture saves each frame's guards and
  transformed bytecode through it, replay installs them. Two PyTorch classes are swapped for
  subclasses while a capture or replay is active, so that one frame PyTorch cannot save or
  load fails alone instead of failing the job (see PrecompileSafety).
- The warning PyTorch logs for each guard its precompile drops: capture records the guard
  and what it checked, and keeps the warning off the job's console.
- Dynamo's counter for generated global names, and Inductor's vector-ISA probe.
Nothing here replaces a function's code; every swap is undone by the handle it returns.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import io
import pickle
import re
import sys
import time
import types
import warnings
from typing import Any, Callable, Protocol

from dynamo_replay._torch_guards import (CLASS_CONTENTS, MODULE_HOOKS, DroppedGuard, QuietLog, UnsaveableGuardDrop,
                                         add_log_filter, code_digest, code_key, describe_module_hooks, describe_value, digests_kept,
                                         guard_builder_frames, guard_tree_lines, guards_state_key, module_hooks_source,
                                         pin_in_capture, pinned_by_build, user_line)
from dynamo_replay._torch_guards import quiet_dropped_guards, record_dropped_guards  # noqa: F401 (capture, replay)

# The config values a precompile capture sets, and replay sets from what the store recorded.
# (module, name, value). They stay set for the rest of the process: a function compiled with
# caching precompile keeps a package, and its next recompile needs the setting. The bundled
# AOTAutograd cache is what caching precompile uses anyway; it is set as well because
# Inductor checks only it before compiling a graph that calls nothing (optimizer.zero_grad()),
# and without it PyTorch 2.13 fails that compile under precompile.
PRECOMPILE_SETTINGS = (
    ("torch._dynamo.config", "caching_precompile", True),
    ("torch._functorch.config", "bundled_autograd_cache", True),
)

def apply_settings(settings: tuple[tuple[str, str, Any], ...]) -> Callable[[], None]:
    """Sets each module.attribute to its value; returns a function that puts the old values back."""
    old = []
    for module_name, attr, value in settings:
        module = importlib.import_module(module_name)
        old.append((module, attr, getattr(module, attr)))
        setattr(module, attr, value)

    def restore() -> None:
        for module, attr, value in reversed(old):
            setattr(module, attr, value)

    return restore


class StableAutogradCacheKeys:
    """Leaves the compiled function's global name out of AOTAutograd cache keys while capture
    or replay is active; remove() puts PyTorch's key function back.

    Under caching precompile PyTorch 2.13 hashes each graph's precompile_backend_id (Dynamo's
    `__compiled_fn_7`) into its AOTAutograd cache key, though the entry it saves holds none of
    it (the id is cleared on save and set anew on load). A frame that compiles at replay draws
    other names than at capture, so it missed every entry the store holds and ran AOTAutograd
    and Inductor again. Everything else that decides what compiles stays in the key."""

    def __init__(self) -> None:
        from torch._functorch._aot_autograd import autograd_cache

        self._original = original = autograd_cache.autograd_cache_key

        def autograd_cache_key(mod: Any, example_inputs: Any, config: Any, *args: Any, **kwargs: Any) -> Any:
            if config.precompile_backend_id is not None:  # AOTConfig is a frozen dataclass
                config = dataclasses.replace(config, precompile_backend_id=None)
            return original(mod, example_inputs, config, *args, **kwargs)

        autograd_cache.autograd_cache_key = autograd_cache_key

    def remove(self) -> None:
        from torch._functorch._aot_autograd import autograd_cache

        autograd_cache.autograd_cache_key = self._original


def import_compiler() -> None:
    """Imports Dynamo and Inductor's configs, which replay's checks read and torch.compile
    imports anyway, so replay's own time can be measured apart from them."""
    import torch._dynamo  # noqa: F401
    import torch._inductor.config  # noqa: F401


def forget_earlier_cache_artifacts() -> None:
    """Clears PyTorch's in-memory record of cache artifacts and precompile packages made
    earlier in this process, so a capture's Mega-Cache holds only what compiled inside it."""
    from torch._dynamo.precompile_context import PrecompileContext
    from torch.compiler._cache import CacheArtifactManager

    CacheArtifactManager.clear()
    PrecompileContext.clear()


def current_compile_id() -> tuple[int, int, int]:
    """(frame, compile, attempt) of the compile running now, or (-1, -1, -1)."""
    from torch._guards import CompileContext

    trace = CompileContext.current_trace_id()
    if trace is None or trace.compile_id.frame_id is None:
        return (-1, -1, -1)
    return (trace.compile_id.frame_id, trace.compile_id.frame_compile_id, trace.attempt)


def tracing_shape_env() -> Any:
    """The ShapeEnv of the compile being traced (None outside a compile)."""
    from torch._guards import TracingContext

    context = TracingContext.try_get()
    fake_mode = getattr(context, "fake_mode", None)
    return getattr(fake_mode, "shape_env", None)


def tensor_bytes(tensor: Any) -> bytes:
    """A real tensor's data, read with every dispatch mode off: the graph logger runs under the
    compile's fake mode, which refuses real tensors (and a tracing mode would record the ops)."""
    import torch
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes():
        data = tensor.detach().to("cpu").contiguous()
        return data.reshape(-1).view(torch.uint8).numpy().tobytes() if data.numel() else b""  # 0-dim too


def fx_builtin_import(name: str, value: Any) -> str | None:
    """The line that binds a name FX's generated code takes for granted (inf, nan, NoneType,
    device, pytree, ...), as FX's code generator registers it; None for any other name."""
    from torch.fx.graph import _custom_builtins

    builtin = _custom_builtins.get(name)
    return builtin.import_str if builtin is not None and builtin.obj is value else None


def unique_ids_used() -> int:
    """How many generated global names (`__compiled_fn_3`, ...) Dynamo has drawn so far."""
    return _set_unique_id_counter(lambda current: current)


def skip_unique_ids(captured: int) -> None:
    """Moves Dynamo's counter for generated global names past the capture's last one: saved
    frames install globals under the names the capture gave them, and a frame compiled under
    replay would draw the same names from a fresh counter (PyTorch 2.13 then fails on the clash)."""
    _set_unique_id_counter(lambda current: max(current, captured + 1))


def _set_unique_id_counter(start: Callable[[int], int]) -> int:
    """Restarts Dynamo's counter at start(its next value); returns that next value."""
    import itertools

    from torch._dynamo import bytecode_transformation

    current = next(bytecode_transformation._unique_id_counter)
    bytecode_transformation._unique_id_counter = itertools.count(start(current))
    return current


# Dynamo's names for globals it installs by object: `___module_x_<id>_c0` (a module not in the
# frame's globals under its own name) and `_<id>_c1` (install_global_by_id with no prefix).
_INSTALLED_BY_ID = re.compile(r"^(___module_\w*|_\d+_c\d+)$")


def module_globals(transformed: types.CodeType) -> dict[str, str]:
    """Globals naming a module that Dynamo installed for a frame, read by its transformed code
    or its guards: name -> module. PyTorch 2.13's package does not record them (the name holds
    the module's address in the capture process); replay puts them back. Called from the
    bytecode hook, whose caller holds the frame's OutputGraph as `output`."""
    frame = sys._getframe(1)
    while frame is not None and not hasattr(frame.f_locals.get("output"), "global_scope"):
        frame = frame.f_back
    if frame is None:
        return {}
    output = frame.f_locals["output"]
    names = set(transformed.co_names) | set(getattr(output, "installed_globals", ()))
    scope = output.global_scope
    return {name: scope[name].__name__ for name in sorted(names)
            if _INSTALLED_BY_ID.match(name) and isinstance(scope.get(name), types.ModuleType)}


# --- capture and replay: one frame's precompile failure stays that frame's -------------------

class PrecompileSafety:
    """Swaps two PyTorch 2.13 precompile classes for subclasses that fail one frame, not a job.

    - CompilePackage raises PackageError when a frame's code cannot be named from its module
      (a property such as transformers' `loss_function`, a function made inside another); the
      subclass leaves that frame out of the package and notes why.
    - CheckFunctionManager.serialize_guards raises when a guard cannot be saved (TypeError for
      an instance of a class defined inside a function; PackageError for a guard kind
      precompile cannot save, where PyTorch then fails `check_fn.guards_state must not be
      None` if the frame was already left out). The subclass leaves the frame out of the
      package with the reason, as PyTorch does for the cases it handles.
    Both are looked up by name when PyTorch uses them; the originals go back on remove().
    PyTorch's console warning for each left-out frame is kept off the console: note() has it.
    With note_class, each user class the guards check by identity only is recorded too, and
    with note_tree each saved frame's guard tree (key of its saved bytes -> the tree's lines),
    which replay compares with the tree PyTorch rebuilds (capture); without, nothing is
    recorded (replay, where a recompile needs no record).
    """

    def __init__(self, note: Callable[[str, str], None],
                 note_class: Callable[[DroppedGuard], None] | None = None,
                 note_tree: Callable[[str, list[str]], None] | None = None) -> None:
        from torch._dynamo import convert_frame, package

        self._originals = (package.CompilePackage, convert_frame.CheckFunctionManager)
        package.CompilePackage = _safe_package_class(package.CompilePackage, note)
        convert_frame.CheckFunctionManager = _safe_guards_class(convert_frame.CheckFunctionManager, note, note_class,
                                                                note_tree)
        self._unquiet = add_log_filter("torch._dynamo.output_graph", QuietLog("Detected a package bypass"))

    def remove(self) -> None:
        from torch._dynamo import convert_frame, package

        package.CompilePackage, convert_frame.CheckFunctionManager = self._originals
        self._unquiet()


def quiet_missing_backend() -> Callable[[], None]:
    """Keeps PyTorch's "Backend not found" warning (a saved frame whose graph was not saved)
    off the console; returns the undo."""
    return add_log_filter("torch._dynamo.package", QuietLog("Backend not found"))


def _safe_package_class(base: type, note: Callable[[str, str], None]) -> type:
    from torch._dynamo.exc import PackageError
    from torch._dynamo.package import SerializedCode, _DynamoCodeCacheEntry

    class SafeCompilePackage(base):  # type: ignore[misc, valid-type]
        @contextlib.contextmanager
        def code_context(self, code: types.CodeType):  # type: ignore[override]
            detached = getattr(self, "_dynrep_detached", None)
            if detached is None:
                detached = self._dynrep_detached = {}
            if code not in self._codes and code not in detached:
                try:
                    self._add_user_function(code)
                except PackageError:
                    note(code_key(code), _naming_failure(code))
                    # A bypassed entry outside the package: PyTorch's methods skip it.
                    detached[code] = _DynamoCodeCacheEntry(
                        python_code=SerializedCode.from_code_object(code), python_module=code.co_filename,
                        function_names=[], guarded_codes=[], import_sources={}, backend_ids=[], code_source=None,
                        install_to_global=False, bypassed=True)
            if code not in detached:
                with super().code_context(code):
                    yield
                return
            self._current_entry = detached[code]
            try:
                yield
            finally:
                self._current_entry = None

    return SafeCompilePackage


def _safe_guards_class(base: type, note: Callable[[str, str], None],
                       note_class: Callable[[DroppedGuard], None] | None,
                       note_tree: Callable[[str, list[str]], None] | None) -> type:
    class SafeCheckFunctionManager(base):  # type: ignore[misc, valid-type]
        def __init__(self, f_code: types.CodeType, output_graph: Any, cache_entries: Any = None,
                     guard_fail_fn: Any = None, guard_filter_fn: Any = None, *args: Any, **kwargs: Any) -> None:
            drop = None
            if note_class is not None and output_graph is not None:  # capture: guards it can re-check are saved
                drop = guard_filter_fn = UnsaveableGuardDrop(guard_filter_fn, note_class)
            with digests_kept():
                super().__init__(f_code, output_graph, cache_entries, guard_fail_fn, guard_filter_fn, *args, **kwargs)
            if drop is not None and drop.pins:
                pin_in_capture(self.guard_manager, drop.pins)

        def serialize_guards(self, builder: Any, sorted_guards: Any, output_graph: Any) -> bytes:
            if note_class is not None:
                with contextlib.suppress(Exception):  # recording must never fail a compile
                    _note_user_objects(builder, sorted_guards, note_class)
            try:
                with warnings.catch_warnings():  # saving reads .grad of non-leaf tensors too
                    warnings.filterwarnings("ignore", message="The .grad attribute of a Tensor that is not a leaf")
                    saved = super().serialize_guards(builder, sorted_guards, output_graph)
                if note_tree is not None and saved:
                    note_tree(guards_state_key(saved), guard_tree_lines(self.guard_manager))
                return saved
            except Exception as error:
                _, code, _ = guard_builder_frames()
                reason = _saving_failure(error)
                note(code_key(code) if code else "?", reason)
                with contextlib.suppress(Exception):
                    output_graph.bypass_package(reason)
                return b""  # the frame's entry is left out, so these bytes are never saved

    return SafeCheckFunctionManager


def _note_user_objects(builder: Any, sorted_guards: Any, note_class: Callable[[DroppedGuard], None]) -> None:
    """For each TYPE_MATCH guard on an object of a user class, a record of the class's contents:
    the saved guard checks the class's identity, which in another process says nothing about
    its methods. For each on an nn.Module, a record of its hooks: PyTorch does not guard them
    (skip_nn_module_hook_guards), so a hook registered at import in one process only would
    otherwise run the captured process's graph."""
    import torch

    _, code, _ = guard_builder_frames()
    frame = code_key(code) if code else "?"
    seen = set()
    for guard in sorted_guards:
        if guard.create_fn_name() != "TYPE_MATCH":
            continue
        value = builder.get(guard)
        if isinstance(value, torch.nn.Module):
            note_class(DroppedGuard(kind=MODULE_HOOKS, source=module_hooks_source(guard.name), frame=frame, risky=True,
                                    line=user_line(guard), value=describe_module_hooks(value)))
        cls = type(value)
        if pinned_by_build(cls) or cls in seen:
            continue
        seen.add(cls)
        note_class(DroppedGuard(kind=CLASS_CONTENTS, source=f"type({guard.name})", frame=frame,
                                value=describe_value(cls), risky=True, line=user_line(guard)))


def _naming_failure(code: types.CodeType) -> str:
    """Why PyTorch could not name a frame's code, in a user's words."""
    if code.co_filename.startswith("<"):
        where = f"generated code ({code.co_filename}, such as a dataclass's __init__)"
    elif code.co_name in _property_names(code):
        where = "a property"
    else:
        where = "a function defined inside another, or renamed"
    return (f"{code.co_name} is {where}: PyTorch 2.13 cannot save a frame whose code it cannot name "
            f"from its module")


def _property_names(code: types.CodeType) -> set[str]:
    """Names of the properties of the classes in the module that defines `code`."""
    module = inspect.getmodule(code)
    names = set()
    for value in vars(module).values() if module else ():
        if isinstance(value, type):
            names |= {name for name, member in vars(value).items() if isinstance(member, property)}
    return names


def _saving_failure(error: Exception) -> str:
    line = str(error).split("\n")[0]
    text = line[:200]
    if "defined in local scope" in line:
        return f"its guards check an object whose class is defined inside a function, which PyTorch 2.13 cannot save ({text})"
    return f"PyTorch 2.13 cannot save its guards: {text}"


# --- replay: install saved frames one by one --------------------------------------------------

@dataclasses.dataclass
class InstallReport:
    """What installing one compiled function's saved frames did."""

    installed: int = 0  # guarded entries (frame, guard set) now in force
    skipped: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (frame, why): compiles as usual
    recreated: list[str] = dataclasses.field(default_factory=list)  # values rebuilt from the live function
    seconds: float = 0.0


class FrameVetting(Protocol):
    """What replay checks for each saved frame, around PyTorch's loading of its guards."""

    def before_load(self, frame: str, local_scope: dict[str, Any], global_scope: dict[str, Any]) -> str | None:
        """Why the frame must not be used, from what is known before its guards load, or None."""

    def after_load(self, frame: str, guards_state: bytes, manager: Any, global_scope: dict[str, Any]) -> str | None:
        """Why this guarded entry must not be used, given its loaded guard manager (to which
        checks may be added), or None."""


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

    def __init__(self, vetting: FrameVetting, report: Callable[[str, InstallReport], None],
                 modules: dict[str, str]) -> None:
        from torch._dynamo import package

        self._original = package.DynamoCache
        self._vetting = vetting
        self._modules = modules
        self._report = report
        self._installed: list[Any] = []  # packages stay alive as long as replay
        self._codes: dict[int, types.CodeType] = {}  # id -> code of each function installed or pending
        # (by id: code objects compare equal across files when their bytecode is the same)
        outer = self

        class _Cache(type(self._original)):  # type: ignore[misc]
            def load(self, fn: Callable[..., Any]) -> None:  # type: ignore[override]
                outer._when_first_called(fn, lambda: super(_Cache, self).load(fn))
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
            result = take()
            if result is not None:
                self._install(fn, result)
            return _no_cleanup

        hooks = getattr(_wrapper_being_made(), "enter_exit_hooks", None)
        if isinstance(hooks, list):
            hooks.append(install)
        else:
            install()

    def remove(self) -> None:
        from torch._dynamo import package

        package.DynamoCache = self._original

    def _install(self, fn: Callable[..., Any], result: Any) -> None:
        from torch._C._dynamo.eval_frame import _reset_precompile_entries
        from torch._dynamo.package import CompilePackage

        name = getattr(fn, "__qualname__", repr(fn))
        frame = code_key(fn.__code__) if hasattr(fn, "__code__") else name
        report = InstallReport()
        start = time.perf_counter()
        installed: list[tuple[dict[str, Any], str]] = []
        mismatch = _package_mismatch(fn, result.dynamo)
        if mismatch:  # nothing installed: the whole function compiles as usual
            report.skipped.append((frame, mismatch))
        else:
            try:
                package = CompilePackage(fn, result.dynamo)  # checks versions and inlined sources
                with digests_kept():
                    _install_entries(package, fn, result.backends, self._vetting, report, installed, self._modules)
                self._installed.append(package)
            except Exception as error:  # the whole function compiles as usual
                for scope, global_name in installed:
                    scope.pop(global_name, None)
                with contextlib.suppress(Exception):
                    _reset_precompile_entries(getattr(fn, "__code__"))
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
        return (f"the package PyTorch saved under its name and first line is for other code, in "
                f"{saved.co_filename} (PyTorch 2.13 keys saved frames by name and first line only)")
    return None


def _install_entries(package: Any, fn: Callable[..., Any], backends: dict[str, Any],
                     vetting: FrameVetting, report: InstallReport,
                     installed: list[tuple[dict[str, Any], str]], modules: dict[str, str]) -> None:
    """CompilePackage.install, with each guarded entry loaded on its own (PyTorch 2.13 loads
    them all or fails): what PyTorch installs per code object, in the same order. One change:
    the compiled function's own frame runs with the globals of the module that defines its
    code, which for a decorated function (transformers' forward) is not the module PyTorch
    records (functools.wraps copies __module__); PyTorch 2.13 installs into the latter."""
    import torch
    from torch._C._dynamo.eval_frame import _load_precompile_entry
    from torch._dynamo.output_graph import get_builtins_dict
    from torch._dynamo.package import SerializedCode, _compile_frame_context, _lookup_code, load_guard_manager

    def install_global(scope: dict[str, Any], name: str, value: Any) -> None:
        scope[name] = value
        installed.append((scope, name))

    main_code = package._innermost_fn.__code__
    for code, entry in package._codes.items():
        context = _compile_frame_context(code) if entry.has_compile_id else contextlib.nullcontext()
        with context:
            module = sys.modules[entry.python_module]
            scope = getattr(package._innermost_fn, "__globals__", module.__dict__) if code is main_code else module.__dict__
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
            for backend_id in entry.backend_ids:
                if backend_id not in backends:
                    raise RuntimeError(f"backend {backend_id} is not in the store")
                backend = backends[backend_id].after_deserialization()
                install_global(scope, backend_id, torch._dynamo.disable(backend))
            if not entry.guarded_codes:  # Dynamo made no graph for it: PyTorch skips the frame
                torch._dynamo.eval_frame.skip_code(target_code)
                continue
            frame = code_key(target_code)
            local_scope = _live_locals(fn, target_code) if code is main_code else {}
            refusal = vetting.before_load(frame, local_scope, scope)
            if refusal:
                report.skipped.append((frame, refusal))
                continue
            for guarded in entry.guarded_codes:
                try:
                    state, lenient = _load_guards_state(guarded.guards_state)
                    report.recreated += [f"{frame}: {name} restored without its __setstate__" for name in lenient]
                    report.recreated += _fill_missing(state, local_scope, scope, frame)
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
                refusal = vetting.after_load(frame, guarded.guards_state, manager, scope)
                if refusal:
                    report.skipped.append((frame, refusal))
                    continue
                transformed = SerializedCode.to_code_object(guarded.dynamo_code)
                for name in transformed.co_names:
                    if name in modules and name not in scope:
                        install_global(scope, name, importlib.import_module(modules[name]))
                _load_precompile_entry(target_code, manager, transformed)
                report.installed += 1


_NO_BACKEND = ("its compiled graph is not in the store: PyTorch 2.13's precompile saves graphs compiled by "
               "Inductor, not by other backends (aot_eager, eager)")


def _load_guards_state(data: bytes) -> tuple[Any, list[str]]:
    """A frame's saved guard state, and the classes restored leniently.

    PyTorch saves a value its guards do not read as missing, and an object's own __setstate__
    may then fail on it (AdamW's reads each parameter's step count). When the plain load
    fails, load again with each class that has its own __setstate__ restored by setting its
    attributes instead: the guards are built from what they read, which was saved, and check
    the live objects on every call."""
    import torch
    from torch._dynamo.package import load_guards_state

    try:
        # PyTorch's loader imports FSDP (all of torch.distributed, about half a second) to turn
        # off FSDP's module construction while unpickling; only a state that names FSDP needs it.
        return (load_guards_state(data) if b"fsdp" in data else pickle.loads(data)), []
    except Exception as error:
        first = error
    lenient: list[str] = []

    class LenientUnpickler(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> Any:
            found = super().find_class(module, name)
            if isinstance(found, type) and isinstance(_own_attributes(found).get("__setstate__"), types.FunctionType) \
                    and found.__dictoffset__ and not issubclass(found, (torch.Tensor, torch.nn.Module)):
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
    for scope, live, prefix in ((state.output_graph.local_scope, local_scope, "L"),
                                (state.output_graph.global_scope, global_scope, "G")):
        for name, value in list(scope.items()):
            if isinstance(value, _Missing) and name in live:
                scope[name] = live[name]
                filled.append(f"{frame}: {prefix}['{name}']")
    return filled


# --- Inductor's vector-ISA probe ---------------------------------------------------------------

# The extras Inductor probes on top of an ISA: record key -> the ISA attribute its probe sets.
_ISA_EXTRAS = {"avx512_bf16": "_is_avx512_bf16_supported", "amx_fp16": "_is_amx_fp16_supported"}


def probed_vec_isas() -> list[dict[str, Any]] | None:
    """What Inductor's probe found in this process, or None if it never ran: each vector ISA it
    accepted, with the two extras it probes separately (AVX-512 bf16 conversions, AMX fp16)."""
    if "torch._inductor.cpu_vec_isa" not in sys.modules:
        return None
    from torch._inductor.cpu_vec_isa import valid_vec_isa_list

    if valid_vec_isa_list.cache_info().currsize == 0:
        return None
    return [{"isa": str(isa), **{key: bool(getattr(isa, attr, False)) for key, attr in _ISA_EXTRAS.items()}}
            for isa in valid_vec_isa_list()]


def reuse_vec_isa_probe(recorded: list[Any]) -> bool:
    """Answers Inductor's vector-ISA probe (a compiler and a Python child process per ISA and
    extra) from the capture's record: PyTorch's own selection then runs with each compile
    check answered as it was at capture. Call only after checking that this CPU's feature flags
    are the captured ones (the fingerprint's cpu.flags). Returns whether the record was used."""
    from torch._inductor import cpu_vec_isa

    if cpu_vec_isa.valid_vec_isa_list.cache_info().currsize:
        return False  # already probed in this process
    found = {entry["isa"]: entry for entry in recorded if isinstance(entry, dict) and "isa" in entry}
    if len(found) != len(recorded):
        return False  # a record from before the extras were kept: probe as usual
    extras = {cpu_vec_isa.VecAVX512._avx512_bf16_code: "avx512_bf16", cpu_vec_isa.VecAMX._amx_fp16_code: "amx_fp16"}

    def answer(isa: Any, code: str) -> bool:
        entry = found.get(str(isa))
        return bool(entry) and bool(entry.get(extras[code], False) if code in extras else True)

    _clear_isa_caches(cpu_vec_isa)
    original = cpu_vec_isa.VecISA.check_build
    cpu_vec_isa.VecISA.check_build = answer  # type: ignore[method-assign]
    try:
        selected = [str(isa) for isa in cpu_vec_isa.valid_vec_isa_list()]
    finally:
        cpu_vec_isa.VecISA.check_build = original  # type: ignore[method-assign]
    if selected != [entry["isa"] for entry in recorded]:
        _clear_isa_caches(cpu_vec_isa)  # let Inductor probe as usual
        return False
    return True


def _clear_isa_caches(cpu_vec_isa: Any) -> None:
    """Forgets every cached probe answer: the list, and each ISA's own cached __bool__."""
    cpu_vec_isa.valid_vec_isa_list.cache_clear()
    for isa in cpu_vec_isa.supported_vec_isa_list:
        for cls in type(isa).__mro__:
            for name in ("__bool__", "_VecISA__bool__impl"):
                cached = vars(cls).get(name)
                if hasattr(cached, "cache_clear"):
                    cached.cache_clear()
        for attr in _ISA_EXTRAS.values():
            vars(isa).pop(attr, None)
