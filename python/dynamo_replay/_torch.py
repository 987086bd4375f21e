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
Replay's install of saved frames is in _torch_install. Nothing here replaces a function's
code; every swap is undone by the handle it returns.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import re
import sys
import types
import warnings
from typing import Any, Callable

from dynamo_replay._torch_guards import (CLASS_CONTENTS, MODULE_HOOKS, DroppedGuard, QuietLog, UnsaveableGuardDrop,
                                         add_log_filter, code_key, describe_module_hooks, guard_builder_frames,
                                         guard_tree_lines, guards_state_key, module_hooks_source, pin_in_capture,
                                         user_line)
from dynamo_replay.descriptions import describe_value, digests_kept, pinned_by_build
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


def graph_snapshot(module: Any) -> Any:
    """A copy of an aten graph module that keeps its nodes' metadata (fake values, stack traces,
    module scopes) by reference: Inductor rewrites the logged module in place afterwards."""
    import torch.fx

    graph = torch.fx.Graph()
    graph.output(graph.graph_copy(module.graph, {}))  # node_copy copies each node's meta dict
    return torch.fx.GraphModule(module, graph)


@contextlib.contextmanager
def _quiet_structured_trace() -> Any:
    """The retrace runs after capture, in the job's process: nothing of it goes to the job's own
    TORCH_TRACE log, and the file names it interns are forgotten again (a later compile that
    names them interns and logs them then)."""
    import logging

    from torch._logging.structured import INTERN_TABLE

    logger = logging.getLogger("torch.__trace")
    disabled, known = logger.disabled, set(INTERN_TABLE)
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = disabled
        for name in [n for n in INTERN_TABLE if n not in known]:
            del INTERN_TABLE[name]


def decompose_to_core_aten(module: Any, extra: dict[Any, Any] | None = None) -> Any:
    """The graph retraced with PyTorch's Core ATen decompositions (the table torch.export's
    run_decompositions applies), in the graph's own fake mode and symbols, keeping each node's
    metadata. An operator outside the Core ATen opset that the table leaves alone is decomposed
    by PyTorch's own decomposition for it where there is one, else by `extra`'s. Guards the retrace would add are suppressed: the compile is finished, and its
    guards must not change. A view that the decomposed producer left non-contiguous is taken
    from a contiguous copy: the graph's values are what matters here, not its aliasing."""
    import torch
    import torch.fx
    import torch.fx.traceback as fx_traceback
    from torch._decomp import core_aten_decompositions
    from torch._guards import detect_fake_mode
    from torch.fx.experimental.proxy_tensor import make_fx

    aten = torch.ops.aten
    args = [n.meta.get("val") for n in module.graph.nodes if n.op == "placeholder"]
    fake_mode = detect_fake_mode(args)
    if fake_mode is None:
        raise ValueError("the graph's inputs carry no fake values")
    shape_env = fake_mode.shape_env
    from torch._decomp import decomposition_table

    table = dict(core_aten_decompositions())
    for op, decomposition in decomposition_table.items():
        if isinstance(op, torch._ops.OpOverload) and op not in table and torch.Tag.core not in op.tags and op.namespace == "aten":
            table[op] = decomposition
    for op, decomposition in (extra or {}).items():
        table.setdefault(op, decomposition)

    class Retrace(torch.fx.Interpreter):
        def call_function(self, target: Any, args: Any, kwargs: Any) -> Any:
            if target is aten.view.default and isinstance(args[0], torch.Tensor) and not args[0].is_contiguous():
                args = (aten.clone.default(args[0], memory_format=torch.contiguous_format), *args[1:])
            return super().call_function(target, args, kwargs)

    suppress = shape_env.suppress_guards() if shape_env is not None else contextlib.nullcontext()
    with fake_mode, suppress, fx_traceback.preserve_node_meta(), _quiet_structured_trace():
        decomposed = make_fx(Retrace(module).run, decomposition_table=table, tracing_mode="symbolic")(*args)
    decomposed.graph.eliminate_dead_code()
    return decomposed
