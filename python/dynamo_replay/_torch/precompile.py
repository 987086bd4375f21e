"""One frame's precompile failure stays that frame's: while capture or replay runs, two of
PyTorch's classes (the package and its guard serializer) are swapped for subclasses that record
and skip what PyTorch 2.13 cannot save or load, and AOTAutograd cache keys leave out Dynamo's
per-process name for the compiled function. Every swap is undone by the handle it returns."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import inspect
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any

from dynamo_replay._torch import releases
from dynamo_replay._torch.guards import (
    CLASS_CONTENTS,
    MODULE_HOOKS,
    DroppedGuard,
    QuietLog,
    UnsaveableGuardDrop,
    add_log_filter,
    code_key,
    describe_module_hooks,
    guard_builder_frames,
    guard_tree_lines,
    guards_state_key,
    module_hooks_source,
    pin_in_capture,
    user_line,
)
from dynamo_replay.descriptions import describe_value, digests_kept, pinned_by_build


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

    def __init__(
        self,
        note: Callable[[str, str], None],
        note_class: Callable[[DroppedGuard], None] | None = None,
        note_tree: Callable[[str, list[str]], None] | None = None,
    ) -> None:
        from torch._dynamo import convert_frame, package

        self._originals = (package.CompilePackage, convert_frame.CheckFunctionManager, convert_frame.ConvertFrame)
        package.CompilePackage = _safe_package_class(package.CompilePackage, note)
        convert_frame.CheckFunctionManager = _safe_guards_class(
            convert_frame.CheckFunctionManager, note, note_class, note_tree
        )
        convert_frame.ConvertFrame = _packaged_ddp_class(convert_frame.ConvertFrame)
        self._unquiet = add_log_filter("torch._dynamo.output_graph", QuietLog("Detected a package bypass"))

    def remove(self) -> None:
        from torch._dynamo import convert_frame, package

        package.CompilePackage, convert_frame.CheckFunctionManager, convert_frame.ConvertFrame = self._originals
        self._unquiet()


def _packaged_ddp_class(base: type) -> type:
    """ConvertFrame whose clone for DDPOptimizer keeps the package: under a DDP module, Dynamo
    compiles each frame with a clone made by `_clone_with_backend`, which PyTorch makes
    without the package, so no frame a DDP model runs would be saved. The clone's backend
    saves each graph DDPOptimizer splits (ddp_split)."""
    from torch._dynamo import convert_frame

    from dynamo_replay._torch.ddp_split import saving_split_graphs

    class PackagedConvertFrame(base):  # type: ignore[misc, valid-type]
        @property
        def _clone_with_backend(self) -> Callable[[Any], Any]:
            package = getattr(getattr(self, "_inner_convert", None), "_package", None)
            hooks, limit = self._hooks, self._recompile_limit
            return lambda backend: convert_frame.convert_frame(
                saving_split_graphs(backend), hooks, package=package, recompile_limit=limit
            )

    return PackagedConvertFrame


def save_cache_artifacts() -> tuple[Any, list[tuple[str, int]]]:
    """torch.compiler.save_cache_artifacts(), and (qualname, first line) of each compiled
    function whose package PyTorch left a frame out of while saving: the frame's compiled graph
    was never recorded (its `dynamo_cache_bypass` artifact, "Backend not found"). A graph that
    needs gradients is recorded once its backward has compiled, so a forward run with grad
    enabled and never backpropagated during capture is one."""
    import json
    import logging

    import torch.compiler

    left_out: list[tuple[str, int]] = []

    class Bypasses(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            metadata = getattr(record, "metadata", None) or {}
            if (
                not isinstance(metadata.get("artifact"), dict)
                or metadata["artifact"].get("name") != "dynamo_cache_bypass"
            ):
                return
            try:
                entry = json.loads(getattr(record, "payload", None) or "{}")["entry"]
                left_out.append((str(entry["fn_name"]), int(entry["fn_first_lineno"])))
            except (ValueError, KeyError, TypeError):
                pass

    from dynamo_replay._torch.settings import listen_to_trace

    stop = listen_to_trace(Bypasses())
    try:
        return torch.compiler.save_cache_artifacts(), left_out
    finally:
        stop()


def quiet_missing_backend() -> Callable[[], None]:
    """Keeps PyTorch's "Backend not found" warning (a saved frame whose graph was not saved)
    off the console; returns the undo."""
    return add_log_filter("torch._dynamo.package", QuietLog("Backend not found"))


def _safe_package_class(base: type, note: Callable[[str, str], None]) -> type:
    from torch._dynamo.exc import PackageError
    from torch._dynamo.package import SerializedCode, _DynamoCodeCacheEntry, _FunctionId

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
                    named = _named_by_its_function(code)
                    if named is not None:  # saved like any frame
                        module, name, source = named
                        self._add_function(code, module, function_name=_FunctionId(name), code_source=source)
                    else:
                        note(code_key(code), _naming_failure(code))
                if code not in self._codes:
                    # A bypassed entry outside the package: PyTorch's methods skip it.
                    detached[code] = _DynamoCodeCacheEntry(
                        python_code=SerializedCode.from_code_object(code),
                        python_module=code.co_filename,
                        function_names=[],
                        guarded_codes=[],
                        import_sources={},
                        backend_ids=[],
                        code_source=None,
                        install_to_global=False,
                        bypassed=True,
                    )
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


def _safe_guards_class(
    base: type,
    note: Callable[[str, str], None],
    note_class: Callable[[DroppedGuard], None] | None,
    note_tree: Callable[[str, list[str]], None] | None,
) -> type:
    class SafeCheckFunctionManager(base):  # type: ignore[misc, valid-type]
        def __init__(
            self,
            f_code: types.CodeType,
            output_graph: Any,
            cache_entries: Any = None,
            guard_fail_fn: Any = None,
            guard_filter_fn: Any = None,
            *args: Any,
            **kwargs: Any,
        ) -> None:
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
            note_class(
                DroppedGuard(
                    kind=MODULE_HOOKS,
                    source=module_hooks_source(guard.name),
                    frame=frame,
                    risky=True,
                    line=user_line(guard),
                    value=describe_module_hooks(value),
                )
            )
        cls = type(value)
        if pinned_by_build(cls) or cls in seen:
            continue
        seen.add(cls)
        note_class(
            DroppedGuard(
                kind=CLASS_CONTENTS,
                source=f"type({guard.name})",
                frame=frame,
                value=describe_value(cls),
                risky=True,
                line=user_line(guard),
            )
        )


def _named_by_its_function(code: types.CodeType) -> tuple[str, str, str] | None:
    """(module, qualified name, path from it to the code) for code PyTorch cannot name, where
    the function that holds it can be named: a property's accessor (its qualified name leads to
    the property; transformers' `loss_function`), or a function made by exec for a class (a
    dataclass's `__init__`, whose code is in no module's file) with its module's globals.
    PyTorch's loader follows the path from the named object in the replaying process: it
    reaches that process's own code."""
    for function in gc.get_referrers(code):
        if not isinstance(function, types.FunctionType) or function.__code__ is not code:
            continue
        module = sys.modules.get(function.__module__ or "")
        owner: Any = module
        *path, name = function.__qualname__.split(".")
        for part in path:
            owner = vars(owner).get(part) if owner is not None and hasattr(owner, "__dict__") else None
        named = vars(owner).get(name) if owner is not None and hasattr(owner, "__dict__") else None
        if module is None or named is None or function.__globals__ is not vars(module):
            continue  # PyTorch installs a frame's compiled graphs into its module's globals
        if named is function:
            return module.__name__, function.__qualname__, "__code__"
        if isinstance(named, property):
            for accessor in ("fget", "fset", "fdel"):
                if getattr(named, accessor) is function:
                    return module.__name__, function.__qualname__, f"{accessor}.__code__"
    return None


def _naming_failure(code: types.CodeType) -> str:
    """Why PyTorch could not name a frame's code, in a user's words."""
    if code.co_filename.startswith("<"):
        where = f"generated code ({code.co_filename}, such as a dataclass's __init__)"
    elif code.co_name in _property_names(code):
        where = "a property"
    else:
        where = "a function defined inside another, or renamed"
    return (
        f"{code.co_name} is {where}: PyTorch {releases.VERSION} cannot save a frame whose code it "
        "cannot name from its module"
    )


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
        return (
            f"its guards check an object whose class is defined inside a function, which PyTorch "
            f"{releases.VERSION} cannot save ({text})"
        )
    return f"PyTorch {releases.VERSION} cannot save its guards: {text}"
