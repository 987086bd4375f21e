"""Values described so that two processes can compare them: a description is equal in two
processes exactly when they hold the same function, class, module, enum member or constant,
and None where no description can tell two different values apart (such a value is never a
match). Replay compares a dropped guard's captured description with the live value's
(_torch.guards). Plain Python: nothing here imports torch."""

from __future__ import annotations

import contextlib
import enum
import functools
import hashlib
import importlib
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

from dynamo_replay.library_values import describe_library_value

# Frames whose code lives in these modules are pinned by the torch build and Python version,
# which the fingerprint compares.
_PINNED_ROOTS = frozenset(sys.stdlib_module_names) | {"torch", "builtins"}


def describe_value(value: Any) -> str | None:
    """Within digests_kept(), each value is described once (a config class's validators are
    reached from hundreds of guards); see _describe_value."""
    kept = getattr(_DESCRIBING, "values", None)
    if kept is None:
        return _describe_value(value)
    found = kept.get(id(value))
    if found is not None and found[0] is value:
        return found[1]
    described = _describe_value(value)
    if described is None or _ENCLOSING not in described:  # a cycle's text depends on the stack
        kept[id(value)] = (value, described)  # the value is held, so its id is not reused
    return described


def _describe_value(value: Any) -> str | None:
    """A description of a value that is equal in two processes exactly when they hold the same
    function, class, module, enum member or constant (identity itself cannot travel), or the
    same value of the standard library that library code closes over (library_values); None
    when this value has no such description (an arbitrary object: two different ones would
    look alike, so it must never count as a match)."""
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if isinstance(value, types.CellType):
        try:
            inner = describe_value(value.cell_contents)
        except ValueError:
            return "empty cell"
        return None if inner is None else f"cell of {inner}"
    if isinstance(value, enum.Enum):
        return f"enum {_qualified(type(value))}.{value.name}"
    if isinstance(value, types.MethodType):
        func, owner = describe_value(value.__func__), describe_value(value.__self__)
        return None if func is None or owner is None else f"method {func} of {owner}"
    if isinstance(value, types.FunctionType):
        return _describe_function(value)
    if isinstance(value, types.CodeType):
        return f"code {value.co_qualname} {code_digest(value)}"
    if isinstance(value, type):
        if pinned_by_build(value):
            return f"class {_qualified(value)}"
        return f"class {_qualified(value)} contents {_digest_class(value)}"
    if value is None or value is Ellipsis or isinstance(value, (bool, int, float, complex, str, bytes)):
        return f"constant {value!r}"
    if type(value) in (tuple, list, frozenset, set, dict):  # a subclass may hold state: library_values' rows
        return _describe_container(value)
    if _is_torch_constant(value):
        return f"constant {value!r}"
    if isinstance(value, types.BuiltinFunctionType) and getattr(value, "__qualname__", None):
        # A C function: its module and qualified name are fixed by the build that defines it.
        return f"callable {_qualified(value)}"
    if callable(value) and _resolves_to(value):
        return f"callable {_qualified(value)}"
    for test, describe in _FRAMEWORK_DESCRIBERS:
        if test(value):
            return describe(value, describe_value)
    return describe_library_value(value, describe_value, pinned_by_build)


# Describers of PyTorch's own objects (an optimizer), which read PyTorch's private attributes:
# _torch registers them when it is imported, so this module imports no torch. A row: (test,
# describe(value, describe_value)).
_FRAMEWORK_DESCRIBERS: list[tuple[Callable[[Any], bool], Callable[[Any, Callable[[Any], str | None]], str | None]]] = []


def register_describer(
    test: Callable[[Any], bool], describe: Callable[[Any, Callable[[Any], str | None]], str | None]
) -> None:
    _FRAMEWORK_DESCRIBERS.append((test, describe))


# The functions being described on this thread, outermost first: a closure that leads back to
# one of them (a decorator's wrapper and the function it wraps, each holding the other) is
# described by how many levels up it leads, which is as faithful and ends.
_DESCRIBING = threading.local()
_ENCLOSING = " enclosing by "


def _describe_function(fn: types.FunctionType) -> str | None:
    """A function by name and code, and by what its code reads that is not code: defaults,
    keyword defaults and closure cells (a default fixed at import differs between processes)."""
    stack: list[int] = _DESCRIBING.__dict__.setdefault("stack", [])
    if id(fn) in stack:
        return f"function {_qualified(fn)}{_ENCLOSING}{len(stack) - stack.index(id(fn))}"
    members = [("defaults", value) for value in fn.__defaults__ or ()]
    members += [("closure", cell) for cell in fn.__closure__ or ()]
    members += [(f"kwdefault {name}=", value) for name, value in sorted((fn.__kwdefaults__ or {}).items())]
    parts = [f"function {_qualified(fn)} code {code_digest(fn.__code__)}"]
    stack.append(id(fn))
    try:
        for label, value in members:
            described = _describe_member(value)
            if described is None:
                return None
            parts.append(f"{label} {described}")
    finally:
        stack.pop()
    return "; ".join(parts)


def _describe_member(value: Any) -> str | None:
    """describe_value for what a function or class holds, with a class by its name only: a
    method's __class__ cell leads back to the class being described."""
    if isinstance(value, types.CellType):
        try:
            value = value.cell_contents
        except ValueError:
            return "empty cell"
    return f"class {_qualified(value)}" if isinstance(value, type) else describe_value(value)


def _describe_container(value: Any) -> str | None:
    """Plain containers of described values; sets and dict keys in sorted order (their
    iteration order follows the per-process string hash seed)."""
    if type(value) not in (tuple, list, frozenset, set, dict):
        return None  # a subclass may hold state of its own
    if isinstance(value, dict):
        items = [(describe_value(k), describe_value(v)) for k, v in value.items()]
        if any(k is None or v is None for k, v in items):
            return None
        return "dict {" + ", ".join(f"{k}: {v}" for k, v in sorted(items)) + "}"
    inner = [describe_value(v) for v in value]
    if any(v is None for v in inner):
        return None
    if isinstance(value, (set, frozenset)):
        inner.sort()
    return f"{type(value).__name__} [" + ", ".join(inner) + "]"  # type: ignore[arg-type]


# An ID_MATCH Dynamo adds while tracing copy.deepcopy or copy.copy (transformers' configs are
# deep-copied inside forward): the copy module reads id() only as its memo's key, never as a
# value, so another object of the same class and state gives the same answer. Such an object
# is described by its state (describe_state); every other ID_MATCH on an object has no
# faithful description (`m is A` tells two objects of equal state apart).
_STATE_PREFIX = "object of "
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class defined in Python; one defined in C keeps state outside __dict__


def identity_used_as_key(kind: str, line: str) -> bool:
    """Whether an ID_MATCH guard was made by the standard library's copy module (its line)."""
    import copy

    return kind == "ID_MATCH" and line.startswith(copy.__file__ + ":")


def describe_state(value: Any, _depth: int = 0) -> str | None:
    """An instance of a class by the class (name and contents) and the description of every
    attribute in its __dict__, nested plain instances by their state too; None when the class
    keeps state elsewhere (__slots__, a C base) or any attribute has no faithful description."""
    cls = type(value)
    state = getattr(value, "__dict__", None)
    if (
        not isinstance(state, dict)
        or _depth > 8
        or isinstance(value, (type, types.ModuleType))
        or any("__slots__" in vars(base) or not base.__flags__ & _HEAPTYPE for base in cls.__mro__[:-1])
    ):
        return None
    parts = []
    for name, item in sorted(state.items()):
        described = describe_value(item)
        if described is None and not callable(item):
            described = describe_state(item, _depth + 1)
        if described is None:
            return None
        parts.append(f"{name}={described}")
    digest = hashlib.sha256(";".join(parts).encode()).hexdigest()[:16]
    return f"{_STATE_PREFIX}{describe_value(cls)} state {digest}"


def describe_like(expected: str | None, value: Any) -> str | None:
    """The description of a live value in the form a captured one took."""
    if expected is not None and expected.startswith(_STATE_PREFIX):
        return describe_state(value)
    return describe_value(value)


def _is_torch_constant(value: Any) -> bool:
    """dtypes, devices, layouts and memory formats: their repr names them exactly."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, (torch.dtype, torch.device, torch.layout, torch.memory_format))


def _resolves_to(value: Any) -> bool:
    """Whether importing the value's module and following its qualified name gives the value
    back: then its name says which object it is in any process with the same code."""
    module_name = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    owner = getattr(value, "__self__", None)
    if isinstance(owner, (types.ModuleType, type)) and getattr(value, "__name__", None):
        # A builtin bound to a module or class (torch.relu lives on torch._C._VariableFunctions).
        return getattr(owner, value.__name__, None) is value
    if not module_name or not qualname or "<locals>" in qualname:
        return False
    try:
        found: Any = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except Exception:
        return False
    return found is value


def pinned_by_build(cls: type) -> bool:
    return pinned_module(getattr(cls, "__module__", None) or "")


def pinned_module(name: str) -> bool:
    return name.split(".")[0] in _PINNED_ROOTS


@contextlib.contextmanager
def digests_kept() -> Any:
    """Within the block, each value is described once, a class's contents digest included
    (installing one saved frame re-checks hundreds of guards over the same few classes and
    values, which no user code runs to change meanwhile)."""
    outer = getattr(_DESCRIBING, "values", None)
    _DESCRIBING.values = {} if outer is None else outer
    try:
        yield
    finally:
        _DESCRIBING.values = outer


def _digest_class(cls: type) -> str:
    """A digest of what a user class's attributes are (methods by their code, constants by
    value), over its bases outside torch and the standard library: Dynamo guards a class by
    identity only, which cannot tell a swapped method in another process. An attribute without
    a faithful description counts by its type: any read of it by a compiled frame has guards
    of its own, which are checked or re-checked."""
    digest = hashlib.sha256()
    for base in cls.__mro__:
        if pinned_by_build(base):
            continue
        for name, value in sorted(vars(base).items()):
            if name in ("__dict__", "__weakref__", "__doc__", "__module__", "__qualname__", "__slotnames__"):
                continue
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            inner = _describe_member(value)
            digest.update(f"{base.__qualname__}.{name}={inner or 'object of ' + _qualified(type(value))};".encode())
    return digest.hexdigest()[:16]


@functools.cache  # a code object never changes; equal ones digest alike
def code_digest(code: types.CodeType) -> str:
    """A digest of what a code object does, equal across processes (the repr of a nested
    code object holds its address, so constants are digested one by one)."""
    digest = hashlib.sha256(code.co_code)
    for const in code.co_consts:
        digest.update(_const_text(const).encode())
    digest.update(repr((code.co_names, code.co_varnames, code.co_freevars)).encode())
    return digest.hexdigest()[:16]


def _const_text(const: Any) -> str:
    """A code constant as text that is equal across processes: nested code by its digest, sets
    in sorted order (their repr follows the per-process string hash seed)."""
    if isinstance(const, types.CodeType):
        return code_digest(const)
    if isinstance(const, frozenset):
        return "frozenset(" + ",".join(sorted(map(_const_text, const))) + ")"
    if isinstance(const, tuple):
        return "(" + ",".join(map(_const_text, const)) + ")"
    return repr(const)


def _qualified(obj: Any) -> str:
    module = getattr(obj, "__module__", None) or "?"
    return f"{module}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"
