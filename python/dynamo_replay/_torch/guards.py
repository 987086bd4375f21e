"""Guards across processes: what PyTorch 2.13's caching precompile keeps, drops or cannot save,
and how dynamo-replay makes sure a saved frame never answers for values it was not compiled for.

Four mechanisms, one per way a guard can go wrong when a frame is saved in one process and
installed in another:
- Dropped guards (identity: ID_MATCH, FUNCTION_MATCH, CLOSURE_MATCH, ...). PyTorch leaves them
  out of the saved frame. Capture records each with a description of the value it checked;
  replay compares that description with the live value when it installs the frame and pins
  the value with a guard of its own on every call. A value that has no faithful description
  (one that cannot tell two different values apart) makes its frame compile as usual.
- Kept guards whose expected value PyTorch re-reads at load: a saved frame's guards are built
  again from the saved scopes, and values reached through a function, class or module (saved
  by reference) are read from the live object, so `G['post'].__defaults__[0] == 2.0` silently
  becomes `== 5.0`. Capture records each saved frame's guard tree as PyTorch built it; replay
  compares the rebuilt tree with it and refuses the frame on any difference.
- Object-aliasing guards (`G['CURRENT'] is G['A']`), which PyTorch 2.13 evaluates over its saved
  copy of the globals: replay evaluates them over the live globals as well (2.14 on evaluates
  them live itself; replay checks them at install there, to name the guard when one fails).
- Module hooks, which PyTorch does not guard (skip_nn_module_hook_guards): capture records
  each guarded module's hooks, replay compares them at install.
Guards PyTorch cannot save at all make the frame not saved (named at capture).
GUARD_TABLE says which kind goes where, with the reason; docs/guards.md is its text. How a
value is described so two processes can compare it is descriptions.py's.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import hashlib
import logging
import re
import sys
import types
from collections.abc import Callable
from typing import Any

from dynamo_replay._torch import releases
from dynamo_replay._torch.call_checks import add_call_check
from dynamo_replay.descriptions import (
    describe_like,
    describe_state,
    describe_value,
    identity_used_as_key,
    pinned_module,
)
from dynamo_replay.schema import frame_name

# What happens to each guard kind (GuardBuilder's methods) under replay: 2.13's kinds here, and
# the kinds a later release adds in its adapter (releases.py):
# "kept": PyTorch saves it and checks it on every call; replay also verifies PyTorch rebuilt it
#         with the captured expected value (the guard tree check);
# "rechecked": PyTorch's precompile drops it; replay compares the value's description at
#         install and pins the value on every call, or compiles the frame when the value has no
#         faithful description;
# "compiled": the frame is not saved (PyTorch cannot save the guard), or replay compiles it.
KEPT, RECHECKED, COMPILED = "kept", "rechecked", "compiled"
_GUARD_TABLE_2_13: dict[str, tuple[str, str]] = {
    "TENSOR_MATCH": (KEPT, "dtype, device, sizes, strides, requires_grad and dispatch keys are saved by value"),
    "SHAPE_ENV": (KEPT, "symbolic-shape guards are saved as expressions over the inputs"),
    "DUPLICATE_INPUT": (KEPT, "saved as a pair of sources"),
    "TYPE_MATCH": (
        KEPT,
        "the class is saved by reference; replay also checks a user class's contents "
        "(methods and constants), which identity cannot carry",
    ),
    "FAKE_SCRIPT_TYPE_MATCH": (KEPT, "the script class is saved by name"),
    "EQUALS_MATCH": (KEPT, "the expected value is saved; replay checks it was not re-read from a live object"),
    "CONSTANT_MATCH": (KEPT, "as EQUALS_MATCH (None and bool become NONE_MATCH / BOOL_MATCH)"),
    "CONSTANT_SUBCLASS_MATCH": (KEPT, "as EQUALS_MATCH, for subclasses of int, float and str"),
    "BOOL_MATCH": (KEPT, "the expected value is saved"),
    "NONE_MATCH": (KEPT, "the expected value is saved"),
    "NOT_NONE_MATCH": (KEPT, "the expected value is saved"),
    "HASATTR": (KEPT, "the attribute's name is saved"),
    "NOT_PRESENT_IN_GENERIC_DICT": (KEPT, "the attribute's name is saved"),
    "DICT_CONTAINS": (KEPT, "the key is saved"),
    "DICT_NOT_CONTAINS": (KEPT, "the key is saved"),
    "SET_CONTAINS": (KEPT, "the element is saved"),
    "SET_NOT_CONTAINS": (KEPT, "the element is saved"),
    "DICT_KEYS_MATCH": (KEPT, "the keys are saved in order"),
    "MAPPING_KEYS_CHECK": (KEPT, "the keys are saved"),
    "SEQUENCE_LENGTH": (KEPT, "the length is saved"),
    "TUPLE_ITERATOR_LEN": (KEPT, "the length is saved"),
    "RANGE_ITERATOR_MATCH": (KEPT, "start, stop, step and length are saved"),
    "COUNT_ITERATOR_MATCH": (KEPT, "the count's state is saved"),
    "EMPTY_NN_MODULE_HOOKS_DICT": (
        RECHECKED,
        "PyTorch skips module hook guards (skip_nn_module_hook_guards); "
        "capture records each guarded module's hooks, replay compares them "
        "at install",
    ),
    "DISPATCH_KEY_SET_MATCH": (KEPT, "the key set is saved"),
    "TENSOR_SUBCLASS_METADATA_MATCH": (KEPT, "the metadata is saved by value"),
    "DTENSOR_SPEC_MATCH": (KEPT, "the spec is saved by value"),
    "OPAQUE_OBJ_GUARD_FN_MATCH": (KEPT, "the guard function's result is saved"),
    "GRAD_MODE": (KEPT, "global state, saved from the compile"),
    "DETERMINISTIC_ALGORITHMS": (KEPT, "global state, saved from the compile"),
    "GLOBAL_STATE": (KEPT, "grad mode, autocast, default dtype, thread count and matmul precision, saved"),
    "TORCH_FUNCTION_STATE": (KEPT, "global state, saved from the compile"),
    "DEFAULT_DEVICE": (KEPT, "the device is saved"),
    "AUTOGRAD_SAVED_TENSORS_HOOKS": (KEPT, "saved as 'no hooks'; any hooks fail it"),
    "FUNCTORCH_STACK_MATCH": (KEPT, "the functorch layers are saved"),
    "DUAL_LEVEL": (KEPT, "the forward-AD level is saved"),
    "FSDP_TRAINING_STATE": (KEPT, "the state is saved by value"),
    "ID_MATCH": (
        RECHECKED,
        "identity cannot travel; the value's description can, where it is faithful: "
        "modules, functions, classes, enum members, constants and containers of them; values of "
        "the standard library that library code closes over (dataclass fields, typing constructs, "
        "regexes, partials, getters, cached functions, named tuples, torch.Size, ordered "
        "mappings, signatures, weak references, module sentinels); an optimizer by its class, "
        "step hooks, groups, flags and parameters' dtypes and shapes (the numbers its step reads "
        "are PyTorch's kept guards or graph inputs); an object copy.deepcopy guarded (it "
        "uses the identity only as its memo's key) by its class and state",
    ),
    "FUNCTION_MATCH": (
        RECHECKED,
        "PyTorch cannot save it: capture leaves it out of the saved frame and records "
        "the function by module, name, code, defaults, keyword defaults and closure (what a "
        "closure holds is described as ID_MATCH's values are)",
    ),
    "CLOSURE_MATCH": (RECHECKED, "as FUNCTION_MATCH (PyTorch's precompile drops it itself)"),
    "CLASS_MATCH": (
        RECHECKED,
        "PyTorch cannot save it: capture leaves it out of the saved frame and records the "
        "class by module, name and contents",
    ),
    "MODULE_MATCH": (
        RECHECKED,
        "PyTorch cannot save it: capture leaves it out of the saved frame and records the module by name",
    ),
    "BUILTIN_MATCH": (RECHECKED, "a builtin by name, and that the frame's globals do not shadow it"),
    "NN_MODULE": (
        COMPILED,
        "dropped by PyTorch's precompile, and an nn.Module instance has no faithful description: its frame compiles",
    ),
    "WEAKREF_ALIVE": (
        COMPILED,
        "an object's lifetime in the captured process says nothing about this one (Dynamo's weak "
        "reference to an optimizer whose step it traced adds nothing to the optimizer's own "
        "identity guard, re-checked: it is left out)",
    ),
    "DICT_VERSION": (COMPILED, "a dict's version counter is per process"),
}
# The running release's table.
GUARD_TABLE: dict[str, tuple[str, str]] = {
    **_GUARD_TABLE_2_13,
    **(releases.CURRENT.guard_kinds if releases.CURRENT else {}),
}


def guard_table_every_release() -> dict[str, tuple[str, str, str]]:
    """Every supported release's guard kinds: kind -> (what replay does, why, first release line)."""
    table = {kind: (*row, "2.13") for kind, row in _GUARD_TABLE_2_13.items()}
    for release in releases.RELEASES.values():
        for kind, row in release.guard_kinds.items():
            table.setdefault(kind, (*row, release.line))
    return table


# Kinds of the entries capture adds to PyTorch's dropped guards: a user class's contents (its
# identity guard cannot say what its methods are) and a module's hooks (PyTorch does not guard them).
CLASS_CONTENTS, MODULE_HOOKS = "CLASS_CONTENTS", "MODULE_HOOKS"
# The hook dicts an nn.Module call runs.
_HOOK_DICTS = ("_forward_pre_hooks", "_forward_hooks", "_backward_pre_hooks", "_backward_hooks")

# Globals Dynamo installs for a frame's transformed code, which the saved frame installs again.
_DYNAMO_GLOBAL = re.compile(r"^G\['(__import_|___module_)\w*'\]$")
# The weak reference to an optimizer that Dynamo stores as a global while it traces the step
# (named by the object's id in that process), guarded alive. The optimizer itself is guarded at
# its own source (ID_MATCH, re-checked by description and pinned), so it adds nothing there.
_OPTIMIZER_WEAKREF = re.compile(r"^G\['__optimizer_\w+'\]\(\)$")
# Dynamo's name for the builtins dict it installs in a frame's globals: G['__builtins_dict___3']['abs'].
_BUILTIN_SOURCE = re.compile(r"^G\['__builtins_dict___\d+'\]\[(['\"])(\w+)\1\]$")


def code_key(code: types.CodeType) -> str:
    """How a frame is named across processes (schema.frame_name)."""
    return frame_name(code.co_name, code.co_filename, code.co_firstlineno)


# --- sources: Dynamo's names for guarded values, read in another process ------------------------


def readable_source(source: str, resolve_builtins: bool = True) -> str:
    """The expression that reads a guarded value in a frame's scope. With resolve_builtins, a
    builtin is read as Python resolves the name in the frame: its globals first, then builtins
    (Dynamo's source reads the builtins dict directly, which cannot see a module global
    shadowing it). A builtin called by inlined code of another module resolves there instead."""
    found = _BUILTIN_SOURCE.match(source)
    if found and resolve_builtins:
        name = found.group(2)
        return f"(G[{name!r}] if {name!r} in G else __builtins__.{name})"
    if found:
        return f"__builtins__.{found.group(2)}"
    return source


def module_hooks_source(module_source: str) -> str:
    """An expression over a frame's scope giving the hooks an nn.Module call runs."""
    return "(" + " + ".join(f"tuple({module_source}.{kind}.values())" for kind in _HOOK_DICTS) + ")"


def describe_module_hooks(module: Any) -> str | None:
    """describe_value of what module_hooks_source reads, for a live module."""
    return describe_value(tuple(hook for kind in _HOOK_DICTS for hook in getattr(module, kind).values()))


def checked_on_every_call(guard: DroppedGuard) -> bool:
    """Whether replay adds this dropped guard to the frame's guards. Builtins and module hooks
    are checked once, at install: PyTorch itself does not check hooks added after a compile,
    and a check per call of every module's hooks would cost more than the guards it keeps."""
    return (
        guard.risky
        and guard.value is not None
        and guard.kind != MODULE_HOOKS
        and not _BUILTIN_SOURCE.match(guard.source)
    )


def _in_frame(guard: DroppedGuard) -> bool:
    """Whether the line that made Dynamo guard it is in the guarded frame's own file."""
    filename = guard.frame.rsplit(" (", 1)[-1].rsplit(":", 1)[0]
    return bool(guard.line) and guard.line.startswith(filename + ":")


def _eval_scope(local_scope: Any, global_scope: dict[str, Any]) -> dict[str, Any]:
    from torch._dynamo.guards import _get_closure_vars

    return {**_get_closure_vars(), "__builtins__": builtins, "L": local_scope, "G": global_scope}


def _holder_is_pinned(expression: str, scope: dict[str, Any]) -> bool:
    """Whether the object that holds the guarded value (the expression minus its last
    attribute or item) is a module of torch or the standard library."""
    for cut in (expression.rfind("."), expression.rfind("[")):
        if cut <= 0:
            continue
        try:
            holder = eval(expression[:cut], scope)  # noqa: S307 - a Dynamo source name
        except Exception:
            continue
        if isinstance(holder, types.ModuleType):
            return pinned_module(holder.__name__)
    return False


# --- capture: the guards precompile drops ----------------------------------------------------


@dataclasses.dataclass(frozen=True)
class DroppedGuard:
    """A guard PyTorch's caching precompile left out of a saved frame."""

    kind: str  # ID_MATCH, CLOSURE_MATCH, ...
    source: str  # Dynamo's source expression, such as G['act']
    frame: str  # code_key() of the frame whose guards dropped it
    value: str | None  # describe_value() of what it checked; None: no faithful description
    risky: bool  # what holds the value is not pinned by the torch build
    line: str  # the user line that made Dynamo guard it: "file:line: code", or ""
    # The compile whose guards dropped it ("frame/compile/attempt"): the saved entry it belongs
    # to. "" where unknown (a store written before 2026-11-28): then it holds for every entry.
    compile_id: str = ""

    @staticmethod
    def from_json(data: dict[str, Any]) -> DroppedGuard:
        return DroppedGuard(
            kind=str(data["kind"]),
            source=str(data["source"]),
            frame=str(data.get("frame", "?")),
            value=data.get("value") or None,
            risky=bool(data.get("risky", True)),
            line=str(data.get("line", "")),
            compile_id=str(data.get("compile_id", "")),
        )


class _DroppedGuardFilter(logging.Filter):
    """Turns PyTorch's "X guard on S is dropped with caching_precompile=True" warnings into
    DroppedGuard values and keeps them off the console."""

    def __init__(self, note: Callable[[DroppedGuard], None]) -> None:
        super().__init__()
        self._note = note

    def filter(self, record: logging.LogRecord) -> bool:
        if "is dropped with caching_precompile" not in str(record.msg) or len(record.args or ()) != 2:
            return True
        try:
            kind, source = record.args  # type: ignore[misc]
            self._note(_dropped_guard(str(kind), str(source)))
        except Exception:  # recording must never fail a compile
            pass
        return False


def guard_builder_frames() -> tuple[Any, Any, Any]:
    """(guard entry being filtered, code being guarded, its OutputGraph), read from the stack
    of CheckFunctionManager.__init__ (PyTorch 2.13's guard_filter_fn runs inside it)."""
    from torch._dynamo.types import GuardFilterEntry

    entry = code = output_graph = None
    frame = sys._getframe()
    while frame is not None:
        found = frame.f_locals
        if entry is None and isinstance(found.get("g"), GuardFilterEntry):
            entry = found["g"]
        if "output_graph" in found and "f_code" in found:
            code, output_graph = found["f_code"], found["output_graph"]
            break
        frame = frame.f_back
    return entry, code, output_graph


def user_line(guard: Any) -> str:
    stack = getattr(guard, "user_stack", None) if guard is not None else None
    if not stack:
        return ""
    last = stack[-1]
    return f"{last.filename}:{last.lineno}: {(last.line or '').strip()}"


def _dropped_guard(kind: str, source: str) -> DroppedGuard:
    entry, code, output_graph = guard_builder_frames()
    scope = _eval_scope(output_graph.local_scope, output_graph.global_scope) if output_graph is not None else None
    value = None
    if scope is not None:
        with contextlib.suppress(Exception):  # the value as replay will read it
            value = describe_value(eval(readable_source(source, False), scope))  # noqa: S307 - a Dynamo source
    if value is None and entry is not None and entry.has_value:
        value = describe_value(entry.value)
    line = user_line(entry.orig_guard if entry is not None else None)
    if value is None and entry is not None and entry.has_value and identity_used_as_key(kind, line):
        value = describe_state(entry.value)
    # Not risky: held by torch or the standard library, a global Dynamo installs with the saved
    # frame itself (an import it needs), or Dynamo's weak reference to a guarded optimizer.
    risky = (
        not (scope is not None and _holder_is_pinned(source, scope))
        and not _DYNAMO_GLOBAL.match(source)
        and not _OPTIMIZER_WEAKREF.match(source)
    )
    return DroppedGuard(
        kind=kind, source=source, frame=code_key(code) if code else "?", value=value, risky=risky, line=line
    )


# Guard kinds PyTorch 2.13's serializer refuses (CheckFunctionManager.UNSUPPORTED_SERIALIZATION_
# GUARD_TYPES) that its precompile does not drop itself, where the value they check has a
# faithful description. Capture leaves them out of the saved frame, as PyTorch does with
# ID_MATCH, so such frames are saved; replay re-checks them like PyTorch's own drops. NN_MODULE
# checks a module instance, which has no faithful description: its frame stays not saved.
SAVED_BY_DESCRIPTION = ("CLASS_MATCH", "MODULE_MATCH", "FUNCTION_MATCH")
# What PyTorch 2.13's precompile drops itself (guards.py, CheckFunctionManager.__init__).
_DROPPED_BY_PYTORCH = frozenset({"ID_MATCH", "CLOSURE_MATCH", "WEAKREF_ALIVE", "DICT_VERSION"})


class UnsaveableGuardDrop:
    """A guard_filter_fn, for capture, that leaves the SAVED_BY_DESCRIPTION guards out of a
    frame's guards after `inner` (the job's own filter) has had its say. Each is noted as a
    DroppedGuard, and `pins` keeps (source, value) of each, so the capture process keeps
    checking it by identity (pin_in_capture)."""

    def __init__(self, inner: Callable[[Any], Any] | None, note: Callable[[DroppedGuard], None]) -> None:
        self._inner = inner
        self._note = note
        self.pins: list[tuple[_LiveExpression, Any]] = []

    def __call__(self, guards: Any) -> list[bool]:
        keep = [bool(k) for k in self._inner(guards)] if self._inner else [True] * len(guards)
        _, _, output_graph = guard_builder_frames()
        if output_graph is None:
            return keep  # not inside CheckFunctionManager: nothing to drop against
        for index, g in enumerate(guards):  # `g`: guard_builder_frames finds the entry by that name
            kinds = {g.guard_type, *g.derived_guard_types}
            kind = next((k for k in SAVED_BY_DESCRIPTION if k in kinds), None)
            if not keep[index] or kind is None or kinds & _DROPPED_BY_PYTORCH or not g.has_value:
                continue
            try:
                dropped = _dropped_guard(kind, g.orig_guard.name)
                live = _LiveExpression(readable_source(g.orig_guard.name), output_graph.global_scope)
            except Exception:  # kept: the frame is then not saved, as without capture
                continue
            keep[index] = False
            self._note(dropped)
            self.pins.append((live, g.value))
        return keep


def pin_in_capture(manager: Any, pins: list[tuple[_LiveExpression, Any]]) -> None:
    """Keeps each guard UnsaveableGuardDrop left out in force in the capture process: the
    source must still hold the very object it held at compile time."""
    for live, value in pins:

        def check(f_locals: Any, live: _LiveExpression = live, value: Any = value) -> bool:
            try:
                return live.value(f_locals) is value
            except Exception:
                return False

        add_call_check(manager, check, f"dynamo-replay: {live.text} is the object compiled for")


def record_dropped_guards(note: Callable[[DroppedGuard], None]) -> Callable[[], None]:
    """Calls note() for every guard precompile drops from now on; returns the undo."""
    return add_log_filter("torch._dynamo.guards", _DroppedGuardFilter(note))


class QuietLog(logging.Filter):
    def __init__(self, text: str) -> None:
        super().__init__()
        self._text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self._text not in str(record.msg)


def quiet_dropped_guards() -> Callable[[], None]:
    """Keeps PyTorch's warning for each guard precompile drops off the console, unrecorded
    (replay's own recompiles); returns the undo."""
    return add_log_filter("torch._dynamo.guards", QuietLog("is dropped with caching_precompile"))


def add_log_filter(logger_name: str, log_filter: logging.Filter) -> Callable[[], None]:
    logger = logging.getLogger(logger_name)
    logger.addFilter(log_filter)
    return lambda: logger.removeFilter(log_filter)


# --- replay: dropped guards checked again ------------------------------------------------------


def read_dropped_source(guard: DroppedGuard, local_scope: dict[str, Any], global_scope: dict[str, Any]) -> Any:
    """What a dropped guard's source reads now. REQUIRES: the caller handles what an unreadable
    source raises."""
    return eval(  # noqa: S307 - a Dynamo source
        readable_source(guard.source, _in_frame(guard)), _eval_scope(local_scope, global_scope)
    )


def recheck_at_install(
    guard: DroppedGuard,
    local_scope: dict[str, Any],
    global_scope: dict[str, Any],
    matched: dict[DroppedGuard, Any] | None = None,
) -> str | None:
    """Why a saved frame must not be used because of this dropped guard, or None. On user code
    (risky): a value the capture could not describe faithfully fails closed; a global that
    cannot be read now, or reads another value, fails; a local known only at the call is left
    to the call-time check. On what torch or the standard library holds (pinned by the
    fingerprint): compared where it was described and can be read, never failing closed.
    `matched` gets the live object each guard read and found equal to its description, which
    the call-time check then starts pinned to (the frame is installed at its first call)."""
    if guard.value is None:
        return (
            f"{guard.source} ({guard.kind}) has no description that another process can compare"
            if guard.risky
            else None
        )
    try:
        value = read_dropped_source(guard, local_scope, global_scope)
        now = describe_like(guard.value, value)
    except Exception as error:
        if not guard.risky or "L[" in guard.source:
            return None  # pinned, or an argument: checked on each call
        return f"{guard.source} was {guard.value} at capture, and cannot be read now ({type(error).__name__})"
    if now == guard.value and matched is not None:
        matched[guard] = value
    if now == guard.value or now is None and not guard.risky:
        return None
    if now is None:
        return f"{guard.source} was {guard.value} at capture, is a value without a faithful description now"
    captured, live = differing_parts(guard.value, now)
    return f"{guard.source} was {captured} at capture, is {live} now"


def differing_parts(captured: str, live: str, limit: int = 400) -> tuple[str, str]:
    """Two descriptions as a message shows them: whole when short, else the first of their
    `; `-separated parts that differs, in its place (a module's hooks under FSDP describe
    the whole sharding state, twice)."""
    if len(captured) + len(live) <= limit:
        return captured, live
    a, b = captured.split("; "), live.split("; ")
    index = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))

    def shown(parts: list[str]) -> str:
        part = parts[index] if index < len(parts) else "(no more)"
        return ("...; " if index else "") + part + ("; ..." if index < len(parts) - 1 else "")

    return shown(a), shown(b)


class _LiveExpression:
    """A guard expression over a frame's live scope: its arguments (L) and its module's globals
    (G). Built once per saved frame; evaluated on every call, so the per-call scope holds only
    what the expression names."""

    def __init__(self, expression: str, global_scope: dict[str, Any]) -> None:
        from torch._dynamo.guards import _get_closure_vars

        self.text = expression
        self._code = compile(expression, f"<dynamo-replay guard {expression}>", "eval")
        names = set(self._code.co_names)
        self._base = {name: value for name, value in _get_closure_vars().items() if name in names}
        self._base.update(__builtins__=builtins, G=global_scope)

    def value(self, f_locals: Any) -> Any:
        """REQUIRES: the caller handles the exception an unreadable source raises."""
        return eval(self._code, {**self._base, "L": f_locals})  # noqa: S307 - a guard PyTorch or Dynamo wrote


# An object-aliasing guard as a captured tree renders it. PyTorch 2.13 builds it as a lambda guard
# over its saved copy of the globals (config use_lamba_guard_for_object_aliasing, on in 2.13),
# where two objects that were one at capture stay one; 2.14 on builds an OBJECT_ALIASING leaf
# between two accessors, which read the live globals on every call.
_ALIASING = re.compile(r"^(LAMBDA_GUARD|OBJECT_ALIASING): (\S.* is \S.*)$")


@dataclasses.dataclass(frozen=True)
class AliasingGuard:
    expression: str  # `G['CURRENT'] is G['A']`
    live_in_pytorch: bool  # PyTorch itself evaluates it over the live globals on every call


def aliasing_guards(tree: list[str]) -> list[AliasingGuard]:
    """The object-aliasing guards of a captured tree that read globals (`G['CURRENT'] is G['A']`).
    Replay evaluates each over the live globals when it installs the frame, so a refusal names
    the guard on every release; and on every call where PyTorch evaluates it over its saved copy."""
    return [
        AliasingGuard(found.group(2), found.group(1) == "OBJECT_ALIASING")
        for line in tree
        if (found := _ALIASING.match(line)) and "G[" in found.group(2)
    ]


def add_live_aliasing_check(manager: Any, guard: AliasingGuard, global_scope: dict[str, Any]) -> str | None:
    """Checks an aliasing guard over the live globals now (when it reads no argument) and, unless
    PyTorch does, on every call; returns why the frame must not be used, or None."""
    expression = guard.expression
    live = _LiveExpression(expression, global_scope)
    if "L[" not in expression:
        try:
            holds = bool(live.value({}))
        except Exception as error:
            return f"`{expression}` held at capture and cannot be evaluated now ({type(error).__name__})"
        if not holds:
            return f"`{expression}` held at capture and does not now"
    if guard.live_in_pytorch:
        return None

    def check(f_locals: Any) -> bool:
        try:
            return bool(live.value(f_locals))
        except Exception:
            return False

    add_call_check(manager, check, f"dynamo-replay: {expression} (over the live globals)")
    return None


def add_call_time_recheck(
    manager: Any, guard: DroppedGuard, global_scope: dict[str, Any], matched: dict[DroppedGuard, Any]
) -> None:
    """Adds to a loaded frame's guards a check, on every call, that the dropped guard's source
    still holds a value with the captured description; once one value passes, that object is
    pinned and later calls compare identity only, as Dynamo's own ID_MATCH does. A value that
    matched at install (`matched`, from recheck_at_install) starts pinned: describing a class
    again on the first call would cost as much as the install's check did."""
    live = _LiveExpression(readable_source(guard.source), global_scope)
    expected = guard.value
    pinned: list[Any] = [matched[guard]] if guard in matched else []

    def check(f_locals: Any) -> bool:
        try:
            value = live.value(f_locals)
        except Exception:
            return False
        if pinned and pinned[0] is value:
            return True
        if describe_like(expected, value) != expected:
            return False
        pinned[:] = [value]
        return True

    text = f"dynamo-replay: {guard.source} is {expected} ({guard.kind} dropped by PyTorch's precompile)"
    add_call_check(manager, check, text)


# --- replay: kept guards rebuilt with the captured values --------------------------------------

_MANAGER_DETAILS = re.compile(r",\s*(type=<class '[^']*'>|tag_safe=\([^)]*\))")
_OBJECT_IDS = re.compile(r"(___check_(?:type|obj)_id\(.*), \d+\)")
_NO_ALIASING = re.compile(r"check_no_aliasing\((.*)\)$")


def guard_tree_lines(manager: Any) -> list[str]:
    """A saved frame's guards as PyTorch prints its tree, one line per guard or accessor, sorted
    (PyTorch's order of some leaves, as the aliasing check's sources, differs between builds of
    the same guards), with what differs between two processes for the same guards taken out:
    type and object addresses, user-line comments, an accessor's example type (a fake tensor
    while compiling). Each line names its full source, so the set says every value checked."""
    lines = []
    for line in str(manager).splitlines():
        body = line.split("  #", 1)[0].split(" # ", 1)[0].rstrip()
        if "+- " not in body:
            continue
        body = body.split("+- ", 1)[1]
        if ": " not in body:
            continue  # a leaf printed by name only (a shared NO_TENSOR_ALIASING): its text is elsewhere
        body = _without_manager_details(_OBJECT_IDS.sub(r"\1, <id>)", body))
        found = _NO_ALIASING.search(body)
        if found:
            body = body[: found.start()] + "check_no_aliasing(" + ", ".join(sorted(found.group(1).split(", "))) + ")"
        lines.append(body)
    return sorted(lines)


def _without_manager_details(line: str) -> str:
    """A manager's line (`GuardManager:`, a dict's `ValueManager: GuardManager:`) without its
    example type and tag flags."""
    return _MANAGER_DETAILS.sub("", line) if "GuardManager:" in line else line


_FAKE_SCRIPT_TYPE = re.compile(r"(___check_fake_script_type\(.*, )\d+(\), type=<class '[^']+'>)")


def _without_type_address(line: str) -> str:
    """A script-class type check (a device mesh, a process group: opaque objects) without the
    type's address, which is this process's: the class it names is what is compared."""
    return _FAKE_SCRIPT_TYPE.sub(r"\1<type>\2", line) if "FAKE_SCRIPT_TYPE_MATCH" in line else line


# A tensor's dimension marks (torch._dynamo.mark_dynamic, maybe_mark_dynamic, mark_unbacked) as the
# captured tree prints their guard, one line a part: a set of marked dimensions,
# `((getattr(L['x'], '_dynamo_dynamic_indices', set()).issubset({1})) if hasattr(...) else True)`,
# and a value read only where its gate is set, `((getattr(L['x'], '_dynamo_dynamic_range', None) ==
# None) if hasattr(L['x'], '_has_dynamo_dim_marking') else True)`.
_MARKED = re.compile(
    r"^DIMENSION_DYNAMIC_MARKING_GUARD: \(\(getattr\((?P<source>L(?:\['\w+'\])+), '(?P<attr>_dynamo_\w+)', "
    r"(?:set\(\)\)\.issubset\((?P<indices>.+)\)|None\) == (?P<value>.+))\) "
    r"if hasattr\((?P=source), '(?P<gate>_\w+)'\) else True\)$"
)


def restore_dimension_marks(local_scope: dict[str, Any], captured_tree: list[str]) -> None:
    """Puts back on a saved frame's tensors the dimension marks its captured guards checked.
    PyTorch saves a frame's tensors without their Python attributes, so it rebuilds the marking
    guard as "no marks", which no marked call passes. Only what the captured tree names is put
    back; anything it does not name stays absent, which rebuilds a stricter guard, never a
    looser one (and replay compares the rebuilt tree with the captured one after)."""
    import ast

    import torch

    for line in captured_tree:
        found = _MARKED.match(line.split("  #", 1)[0].strip())
        if not found:
            continue
        try:
            value = ast.literal_eval(found.group("indices") or found.group("value"))
            target: Any = local_scope
            for key in re.findall(r"\['(\w+)'\]", found.group("source")):
                target = target[key]
        except (ValueError, SyntaxError, KeyError, TypeError):
            continue
        if not isinstance(target, torch.Tensor):
            continue
        if found.group("indices"):
            setattr(target, found.group("attr"), value)
            continue
        if found.group("gate") == "_has_dynamo_dim_marking":  # what torch._dynamo's marks set it to
            target._has_dynamo_dim_marking = True
        if value is not None:  # None reads the same as absent
            setattr(target, found.group("attr"), value)


def guard_tree_difference(captured: list[str], rebuilt: list[str]) -> str | None:
    """The first captured guard PyTorch did not rebuild as it was, in words. (A store written
    before a dict value's manager line was stripped of its example type is read the same way.)"""
    captured = [_without_type_address(_without_manager_details(line)) for line in captured]
    rebuilt = [_without_type_address(line) for line in rebuilt]
    rebuilt_set, captured_set = set(rebuilt), set(captured)
    for want in captured:
        if want in rebuilt_set or _stricter_aliasing_check(want, rebuilt):
            continue
        head = re.split(r" == | is |\(", want, maxsplit=1)[0]
        now = next((got for got in rebuilt if got not in captured_set and got.startswith(head)), None)
        if want.startswith("DIMENSION_DYNAMIC_MARKING_GUARD:"):
            return (
                f"its guards check a tensor's dimension marks (torch._dynamo.mark_dynamic and friends), which "
                f"PyTorch's precompile saves without the marks and replay could not put back (`{want}`): "
                "dynamic=True in torch.compile instead of the mark needs none"
            )
        if now:
            return f"PyTorch rebuilt a guard with another value: captured `{want}`, now `{now}`"
        return f"PyTorch did not rebuild the captured guard `{want}`"
    return None  # a guard only the rebuilt tree has can reject a call, never accept a stale one


def _no_aliasing_sources(line: str) -> set[str] | None:
    found = _NO_ALIASING.search(line)
    return set(found.group(1).split(", ")) if found and line.startswith("NO_TENSOR_ALIASING:") else None


def _stricter_aliasing_check(want: str, rebuilt: list[str]) -> bool:
    """Whether the rebuilt tree checks that no tensor aliases another over a superset of the
    captured sources (PyTorch adds the module's parameters when it rebuilds a saved frame's
    guards): stricter, so it can reject a call the captured check took, never take a stale one."""
    sources = _no_aliasing_sources(want)
    return sources is not None and any(sources <= (_no_aliasing_sources(got) or set()) for got in rebuilt)


def guards_state_key(data: bytes) -> str:
    """How a saved frame's guard state is named in the replay data."""
    return hashlib.sha256(data).hexdigest()
