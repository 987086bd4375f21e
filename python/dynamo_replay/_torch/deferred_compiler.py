"""Replay's backend that only loads: while every frame a job calls comes from the store,
Inductor's compiler (compile_fx, GraphLowering, the lowerings and the autotuner, about 0.7-1 s
and 180 modules on 2 cores) is not imported.

Three things import it on a replay that compiles nothing, none of them to run a graph:
`torch.compile` builds the backend's config dict eagerly (get_compiler_config imports
compile_fx); PyTorch's FX-graph cache hit reads `GraphLowering.save_output_code` (a hook tests
set, None otherwise); and every generated wrapper imports `extern_kernels` from
select_algorithm, whose import registers each extern kernel (`mm`, `convolution`, ...) by
importing the lowerings. Replay answers those three from what the capture recorded, and only
them: the two compiler modules stand deferred in sys.modules, any other access to them (a frame
that really compiles, a user's import) imports the real module on the spot, and the deferred
module forwards to it from then on.

The facts replay answers from are recorded at capture from the live objects (`output_code_facts`)
and checked there to resolve to the same objects, so an extern kernel is the very function the
capture's graphs called. A store without them, or one whose graphs call an operator that only a
compiler module registers (quantized_decomposed, ...), defers nothing.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import importlib
import re
import sys
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

# The compiler modules replay defers, and the one name each is read for on a replay's path.
_SELECT_ALGORITHM = "torch._inductor.select_algorithm"
_GRAPH = "torch._inductor.graph"
DEFERRED = (_SELECT_ALGORITHM, _GRAPH)

# A generated wrapper runs as a module PyTorch names after the module that loads it.
_GENERATED_PREFIX = "torch._inductor.runtime.compile_tasks."
# `name = torch.ops.ns` aliases in a generated wrapper, and the operators it calls.
_OPS_ALIAS = re.compile(r"^(\w+) = torch\.ops\.(\w+)\s*$", re.MULTILINE)
_OPS_CALL = re.compile(r"\btorch\.ops\.(\w+)\.(\w+)")


def output_code_facts() -> dict[str, Any] | None:
    """What replay needs to run this process's generated wrappers without importing the
    compiler: where each extern kernel lives ({"extern_kernels": name -> "module:attr.path"},
    those that resolve back to the same object) and the operators the wrappers call outside
    aten ({"operators": ["ns::name", ...]}). None when no wrapper was generated."""
    if _SELECT_ALGORITHM not in sys.modules or "torch._inductor.codecache" not in sys.modules:
        return None
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.select_algorithm import extern_kernels

    references = {}
    for name, value in sorted(vars(extern_kernels).items()):
        reference = _reference(value)
        if reference is not None:
            references[name] = reference
    operators: set[str] = set()
    for module in list(PyCodeCache.modules):
        try:
            with open(module.__file__) as file:
                operators |= _operators_called(file.read())
        except (OSError, TypeError, AttributeError):
            return None  # a wrapper not read: replay must not assume what it calls
    return {"extern_kernels": references, "operators": sorted(operators)}


def _operators_called(source: str) -> set[str]:
    """ "ns::name" of each operator outside aten a generated wrapper calls, directly or
    through an alias (`inductor_ops = torch.ops.inductor`)."""
    found = {f"{ns}::{name}" for ns, name in _OPS_CALL.findall(source)}
    for alias, namespace in _OPS_ALIAS.findall(source):
        found |= {f"{namespace}::{name}" for name in re.findall(rf"\b{re.escape(alias)}\.(\w+)", source)}
    return {op for op in found if not op.startswith("aten::")}


def _reference(value: Any) -> str | None:
    """A "module:attr.path" that resolves to value itself, or None."""
    candidates = []
    module, qualname, name = (getattr(value, key, None) for key in ("__module__", "__qualname__", "__name__"))
    if isinstance(module, str):
        candidates += [f"{module}:{path}" for path in (qualname, name) if isinstance(path, str)]
    if isinstance(name, str):
        candidates.append(f"torch:{name}")  # torch.mm's qualified name is its C class's
    if type(value).__module__ == "torch._ops":  # an operator: its printed name under torch.ops
        candidates.append(f"torch:ops.{value}")
    for candidate in candidates:
        try:
            if resolve(candidate) is value:
                return candidate
        except Exception:
            continue
    return None


def resolve(reference: str) -> Any:
    """The object a "module:attr.path" reference names."""
    module_name, _, path = reference.partition(":")
    found: Any = importlib.import_module(module_name)
    for part in path.split("."):
        found = getattr(found, part)
    return found


def import_graph_runtime() -> None:
    """Imports what running Inductor's graphs needs, and the compiler's import would have
    brought: its output code reads torch._inductor.debug on every call, and a generated
    wrapper imports Inductor's code-generation runtime (torch.compile with a cached graph pays
    this too)."""
    importlib.import_module("torch._inductor.debug")


def undeferrable_operators(operators: list[str]) -> list[str]:
    """The operators a store's wrappers call that are not registered in this process (a
    compiler module registers them as it is imported)."""
    import torch

    registered = {name.partition(".")[0] for name in torch._C._dispatch_get_all_op_names()}
    return [op for op in operators if op not in registered]


def why_not_deferred(facts: dict[str, Any] | None) -> str | None:
    """Why a store's graphs need the compiler imported (the summary's words), or None."""
    if facts is None:
        return "this store's capture did not record what its graphs need"
    missing = undeferrable_operators(facts.get("operators", []))
    return f"the graphs call {missing[0]}, which the compiler registers" if missing else None


class DeferredCompiler:
    """While in force: torch.compile's config dict is built when first read, and the compiler
    modules not imported yet stand deferred (module docstring). remove() puts PyTorch back as
    it was, except for modules a real access imported meanwhile."""

    def __init__(self, facts: dict[str, Any]) -> None:
        import torch

        start = time.perf_counter()
        import_graph_runtime()
        self.runtime_import_seconds = time.perf_counter() - start  # what torch.compile pays for a cached graph too
        self._kernels = _ExternKernels(dict(facts.get("extern_kernels", {})))
        self._wrapper = torch._TorchCompileInductorWrapper
        self._get_config = self._wrapper.__dict__["get_compiler_config"]
        original = self._get_config

        def get_compiler_config(wrapper: Any) -> collections.abc.Mapping[str, Any]:
            return _LazyConfig(lambda: original(wrapper))

        self._wrapper.get_compiler_config = get_compiler_config
        self._deferred = [module for module in (_defer(name, self._answer) for name in DEFERRED) if module]

    def _answer(self, module: str, name: str, caller: types.FrameType) -> Any:
        """What a deferred module gives this caller for name without being imported, or
        _IMPORT: the extern kernels to a generated wrapper's imports, and GraphLowering's
        output-code hook (unset: the module was never imported) to PyTorch's cache hit."""
        importer = caller.f_globals.get("__name__", "")
        if (module, name) == (_SELECT_ALGORITHM, "extern_kernels") and importer.startswith(_GENERATED_PREFIX):
            return self._kernels
        if (module, name, importer, caller.f_code.co_name) == (
            _GRAPH,
            "GraphLowering",
            "torch._inductor.codecache",
            "cache_hit_post_compile",
        ):
            return _UnsetOutputCodeHook
        return _IMPORT

    @property
    def imported(self) -> list[str]:
        """The deferred modules a real access has imported so far."""
        return [module.__name__ for module in self._deferred if _STATE[id(module)].real is not None]

    def remove(self) -> None:
        self._wrapper.get_compiler_config = self._get_config
        for module in self._deferred:
            if _STATE[id(module)].real is None and sys.modules.get(module.__name__) is module:
                del sys.modules[module.__name__]  # a later import is an ordinary one
                parent, _, child = module.__name__.rpartition(".")
                if getattr(sys.modules.get(parent), child, None) is module:
                    delattr(sys.modules[parent], child)


_IMPORT = object()


@dataclasses.dataclass
class _DeferredState:
    module: types.ModuleType  # kept alive, so its id names it for good
    answer: Callable[[str, str, types.FrameType], Any]
    real: types.ModuleType | None = None  # once imported


_STATE: dict[int, _DeferredState] = {}  # id(deferred module) -> its state; a removed one still forwards


class _Deferred(types.ModuleType):
    """A compiler module not imported yet. Its own dict holds only what the import system reads
    (__spec__, __name__, ...); any other name imports the real module, through the ordinary
    import machinery and its locks, and is read from it, as is every name from then on."""

    def __getattr__(self, name: str) -> Any:
        if name == "__path__":  # asked of every module by `from m import x`; a plain module has none
            raise AttributeError(name)
        answer = _STATE[id(self)].answer(self.__name__, name, sys._getframe(1))
        if answer is not _IMPORT:
            return answer
        return getattr(_real(self), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(_real(self), name, value)

    def __delattr__(self, name: str) -> None:
        delattr(_real(self), name)

    def __dir__(self) -> list[str]:
        return dir(_real(self))


def _defer(name: str, answer: Callable[[str, str, types.FrameType], Any]) -> _Deferred | None:
    """Puts a deferred module in sys.modules under name, or None if it is imported already."""
    if name in sys.modules:
        return None
    from importlib.util import find_spec, module_from_spec

    spec = find_spec(name)
    if spec is None:
        return None
    module = module_from_spec(spec)
    module.__class__ = _Deferred
    _STATE[id(module)] = _DeferredState(module, answer)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)  # as an import sets it
    return module  # type: ignore[return-value]


def _real(module: _Deferred) -> types.ModuleType:
    """The real module a deferred one stands for, imported on first need."""
    state = _STATE[id(module)]
    if state.real is None:
        name = module.__dict__["__name__"]
        if sys.modules.get(name) is module:
            del sys.modules[name]
        state.real = importlib.import_module(name)  # another thread importing it meanwhile: the same module
    return state.real


class _UnsetOutputCodeHookType(type):
    def __getattr__(cls, name: str) -> Any:  # any other attribute: the real class's
        return getattr(importlib.import_module(_GRAPH).GraphLowering, name)


class _UnsetOutputCodeHook(metaclass=_UnsetOutputCodeHookType):
    """GraphLowering as PyTorch's cache hit reads it before the module is imported: its
    output-code hook is unset (tests set it on the imported class)."""

    save_output_code = None


class _ExternKernels:
    """Inductor's extern-kernel namespace as a generated wrapper reads it: each name resolved
    from the capture's reference on first use, or from the real namespace when none was
    recorded (which imports the compiler)."""

    def __init__(self, references: dict[str, str]) -> None:
        self._references = references

    def __getattr__(self, name: str) -> Any:
        reference = self._references.get(name)
        if reference is not None:
            value = resolve(reference)
        else:
            value = getattr(importlib.import_module(_SELECT_ALGORITHM).extern_kernels, name)
        setattr(self, name, value)
        return value


class _LazyConfig(collections.abc.Mapping[str, Any]):
    """torch.compile's compiler config (`compiled.get_compiler_config()`), built on first read."""

    def __init__(self, build: Callable[[], dict[str, Any]]) -> None:
        self._build = build
        self._built: dict[str, Any] | None = None

    def _config(self) -> dict[str, Any]:
        if self._built is None:
            self._built = self._build()
        return self._built

    def __getitem__(self, key: str) -> Any:
        return self._config()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._config())

    def __len__(self) -> int:
        return len(self._config())

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self._config()),))

    def __repr__(self) -> str:
        return repr(self._config())
