"""PyTorch's settings, counters and compile context as capture and replay read and set them:
the config values precompile needs, the compile running now and its ShapeEnv, Dynamo's counter
for generated global names, the module globals it installs, and a real tensor's bytes."""

from __future__ import annotations

import contextlib
import importlib
import itertools
import logging
import re
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

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


def import_compiler() -> None:
    """Imports Dynamo and Inductor's configs, which replay's checks read and torch.compile
    imports anyway, so replay's own time can be measured apart from them."""
    import importlib

    importlib.import_module("torch._dynamo")
    importlib.import_module("torch._inductor.config")


def forget_earlier_cache_artifacts() -> None:
    """Clears PyTorch's in-memory record of cache artifacts and precompile packages made
    earlier in this process, so a capture's Mega-Cache holds only what compiled inside it."""
    from torch._dynamo.precompile_context import PrecompileContext
    from torch.compiler._cache import CacheArtifactManager

    from dynamo_replay._torch import ddp_split

    CacheArtifactManager.clear()
    PrecompileContext.clear()
    ddp_split.forget_pending()


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


def unreadable_tensor(tensor: Any) -> str | None:
    """Why a tensor's data cannot be read as the bytes of its dtype (a quantized, sparse, nested
    or MKL-DNN tensor, or one without storage), or None. Reading a quantized tensor's storage as
    uint8 crashes the process, so capture must ask first."""
    import torch

    if tensor.is_quantized:
        return f"a quantized tensor ({str(tensor.dtype).removeprefix('torch.')}): its data is not stored"
    if tensor.layout != torch.strided or tensor.is_nested:
        return f"a tensor of layout {tensor.layout}{' (nested)' if tensor.is_nested else ''}: its data is not stored"
    if tensor.device.type == "meta":
        return "a meta tensor: it has no data"
    return None


def tensor_bytes(tensor: Any) -> bytes:
    """A real tensor's data, read with every dispatch mode off: the graph logger runs under the
    compile's fake mode, which refuses real tensors (and a tracing mode would record the ops)."""
    import torch
    from torch.utils._python_dispatch import _disable_current_modes

    with _disable_current_modes():
        data = tensor.detach().to("cpu").contiguous()
        # numpy() marks the storage it shares as not resizable, and FSDP frees the storage of
        # the parameters it gathered by resizing it to 0: read through a copy.
        return data.reshape(-1).view(torch.uint8).clone().numpy().tobytes() if data.numel() else b""  # 0-dim too


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
    return {
        name: scope[name].__name__
        for name in sorted(names)
        if _INSTALLED_BY_ID.match(name) and isinstance(scope.get(name), types.ModuleType)
    }


def config_modules() -> dict[str, Any]:
    """Dynamo's, Inductor's and functorch's config modules, by the fingerprint's name for them."""
    import torch._dynamo.config
    import torch._functorch.config
    import torch._inductor.config

    return {"dynamo": torch._dynamo.config, "inductor": torch._inductor.config, "functorch": torch._functorch.config}


def compile_config_values() -> dict[str, dict[str, Any]]:
    """Each config module's settings that affect compilation (PyTorch's own list of the
    compile-ignored ones left out), by the fingerprint's name for the module."""
    return {
        name: module._get_dict(ignored_keys=list(module._compile_ignored_keys), readonly_values=True)
        for name, module in config_modules().items()
    }


def inductor_cxx_names() -> list[str]:
    """The compilers Inductor's config names, in the order it tries them."""
    import torch._inductor.config

    return [c for c in torch._inductor.config.cpp.cxx if c]


def inductor_config_ignored_prefixes() -> tuple[str, ...]:
    """The Inductor settings PyTorch leaves out of its own cache keys (by prefix)."""
    import torch._inductor.config

    return tuple(getattr(torch._inductor.config, "_cache_config_ignore_prefix", ()))


def register_bytecode_hook(hook: Callable[[types.CodeType, types.CodeType], Any]) -> Callable[[], None]:
    """Dynamo's hook on each frame's original and transformed code; returns its remover."""
    import torch._dynamo.convert_frame

    return torch._dynamo.convert_frame.register_bytecode_hook(hook).remove


def interned_names() -> list[tuple[str, int]]:
    """The structured trace's intern table so far: (file name, index)."""
    from torch._logging.structured import INTERN_TABLE

    return list(INTERN_TABLE.items())


def dynamo_counters() -> dict[str, dict[str, Any]]:
    """Dynamo's counters (torch._dynamo.utils.counters) as plain dicts."""
    from torch._dynamo.utils import counters

    return {group: dict(values) for group, values in counters.items()}


def compilation_metrics() -> list[Any]:
    """Dynamo's metrics of each compile in this process so far."""
    from torch._dynamo.utils import get_compilation_metrics

    return list(get_compilation_metrics())


def compiling_frame_scopes() -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(locals, globals) of the frame Dynamo is compiling now, read from its `_compile` (a
    bytecode hook runs inside it), or None when PyTorch's frames are not laid out as expected."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_compile" and frame.f_code.co_filename.endswith("convert_frame.py"):
            scopes = frame.f_locals.get("locals"), frame.f_locals.get("globals")
            if isinstance(scopes[0], dict) and isinstance(scopes[1], dict):
                return scopes[0], scopes[1]
            return None
        frame = frame.f_back
    return None


def compiled_graph_globals(depth: int = 2) -> tuple[dict[str, Any], list[str]] | None:
    """(module globals, names of compiled graphs) of the compile that called the bytecode hook,
    read from the OutputGraph its caller holds as `output`; None when PyTorch's frames are not
    laid out as expected."""
    frame = sys._getframe(depth)
    while frame is not None:
        output = frame.f_locals.get("output")
        scope = getattr(output, "global_scope", None)
        installed = getattr(output, "installed_globals", None)
        if isinstance(scope, dict) and installed is not None:
            return scope, sorted(name for name in installed if name.startswith("__compiled_fn"))
        frame = frame.f_back
    return None


def listen_to_trace(handler: logging.Handler) -> Callable[[], None]:
    """Puts `handler` on PyTorch's structured-trace logger (torch.__trace) at DEBUG, kept from the
    job's own log handlers; returns what takes it off and puts the logger back."""
    logger = logging.getLogger("torch.__trace")
    old_level, old_propagate = logger.level, logger.propagate
    # First in the list: PyTorch's idle LazyTraceHandler removes itself from the list
    # while logging loops over it, which skips the handler after it for that record.
    logger.handlers.insert(0, handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # the job's own log handlers must not see the trace
    return lambda: (
        logger.removeHandler(handler),
        logger.setLevel(old_level),
        setattr(logger, "propagate", old_propagate),
    )


@contextlib.contextmanager
def eager_backend_stance() -> Iterator[None]:
    """Every frame Dynamo compiles in the block gets the eager backend (torch.compiler.set_stance's
    force_backend): traced, but neither AOTAutograd nor Inductor runs. Saved frames still run
    their stored code."""
    import torch
    from torch._dynamo import eval_frame

    prior = eval_frame._stance
    torch.compiler.set_stance("default", force_backend="eager")
    try:
        yield
    finally:
        eval_frame._set_stance(prior)


def fail_on_recompile() -> Callable[[], None]:
    """Sets Dynamo's stance to fail on a recompile; returns what puts the earlier stance back."""
    import torch
    from torch._dynamo import eval_frame

    prior = eval_frame._stance
    torch.compiler.set_stance("fail_on_recompile")
    return lambda: eval_frame._set_stance(prior)
