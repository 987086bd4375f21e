"""The private PyTorch 2.13 touchpoints of capture's shape events (capture/shape_events.py).

PyTorch logs a symbol's creation and each guard on symbols to the structured trace, but the
facts a user needs beside them (is a guard a runtime assert? which operator and graph node made
an unbacked symbol? which expression did a failed compile choke on?) are logged only under
TORCH_DTRACE, which also logs every symbolic expression: it made a GPT-2 compile four times
slower. Instead, capture's trace handler reads them from PyTorch's own frames while the event
is being logged: the ShapeEnv method logging it, the FX node being run, the operator being
dispatched. Only reads; nothing here changes what PyTorch does. Each reader returns None or an
empty value when a frame is not laid out as 2.13 lays it out, so a new PyTorch degrades the
record, never the job.
"""

from __future__ import annotations

import linecache
import re
import sys
import types
from typing import Any, Iterator

_MAX_DEPTH = 120  # how far up a trace event's caller chain to look
# Files whose frames are PyTorch's or Python's machinery, never the user's line.
_MACHINERY = re.compile(r"[/\\](torch|runpy|importlib|contextlib|functools|logging)[/\\]|[/\\]runpy\.py$|<frozen ")


# Functions whose frame says which stage of a compile is running.
_PHASES = {"aot_module_simplified": "aot", "create_aot_state": "aot", "aot_function": "aot",
           "fx_codegen_and_compile": "inductor", "compile_fx_inner": "inductor", "_call_user_compiler": "backend"}


def _frames(depth: int = 2) -> Iterator[types.FrameType]:
    frame: types.FrameType | None = sys._getframe(depth)
    for _ in range(_MAX_DEPTH):
        if frame is None:
            return
        yield frame
        frame = frame.f_back


def user_frame(file: str, line: int, function: str, code: str | None = None) -> dict[str, Any]:
    if code is None:
        code = linecache.getline(file, line).strip()
    return {"file": file, "line": line, "function": function, "code": code}


def is_user_file(file: str) -> bool:
    return bool(file) and not _MACHINERY.search(file) and not file.startswith("<")


def tracing_user_frame() -> dict[str, Any] | None:
    """The innermost user line Dynamo is tracing now (its own record of the user's stack)."""
    from torch._guards import TracingContext

    stack = TracingContext.extract_stack()
    if not stack:
        return None
    last = stack[-1]
    if not is_user_file(last.filename):
        return None
    return user_frame(last.filename, last.lineno or 0, last.name, last.line)


def node_stack_trace(node: Any) -> str | None:
    """The `stack_trace` Dynamo wrote into a graph node's meta: the user frames that made it."""
    meta = getattr(node, "meta", None)
    return meta.get("stack_trace") if isinstance(meta, dict) else None


def current_node_stack_trace() -> str | None:
    """The `stack_trace` of the graph node AOTAutograd or Inductor is running now."""
    import torch.fx.traceback as fx_traceback

    meta = fx_traceback.get_current_meta()
    return meta.get("stack_trace") if meta else None


def target_name(target: Any) -> str:
    if isinstance(target, str):
        return f"Tensor.{target}"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if name is None:
        return str(target)
    if name.startswith("_VariableFunctionsClass."):  # torch.nonzero and the other C functions
        return "torch." + name.partition(".")[2]
    if module.startswith("torch") and not module.startswith("torch._ops"):
        module = "torch"
    return f"{module}.{name}" if module else name


def creation_context() -> dict[str, Any]:
    """What is making a symbol now: the ShapeEnv, the aten operator being dispatched, the FX node
    being run (a Dynamo node in every phase: AOTAutograd and Inductor run Dynamo's graph) and
    the phase, read from the logging call's callers."""
    import torch
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    found: dict[str, Any] = {}
    for frame in _frames(3):
        name = frame.f_code.co_name
        names = frame.f_code.co_varnames
        # f_locals copies a frame's locals: read it only where a wanted name is a local.
        local = frame.f_locals if ("self" in names or "func" in names or "node" in names or "n" in names) else {}
        if "shape_env" not in found and isinstance(local.get("self"), ShapeEnv):
            found["shape_env"] = local["self"]
        if "op" not in found and isinstance(local.get("func"), torch._ops.OpOverload):
            found["op"] = str(local["func"])
        if "node" not in found:
            node = local.get("node") if name != "_call_user_compiler" else None
            node = node if isinstance(node, torch.fx.Node) else local.get("n")
            if isinstance(node, torch.fx.Node) and node.op not in ("placeholder", "output"):
                found["node"] = node
        # The innermost stage wins: Inductor runs AOTAutograd, which calls Inductor's lowering.
        if "phase" not in found and name in _PHASES:
            found["phase"] = _PHASES[name]
        if name == "_call_user_compiler":
            break
    found.setdefault("phase", "dynamo")
    return found


def guard_context() -> dict[str, Any]:
    """For a guard being logged: its kind (PyTorch's `_log_guard` prefix), the sympy expression
    and the ShapeEnv, from the logging method's frame."""
    for frame in _frames(3):
        if frame.f_code.co_name == "_log_guard":
            local = frame.f_locals
            prefix = str(local.get("prefix", ""))
            kind = ("runtime_assert" if prefix.startswith("runtime_assert")
                    else "guard_suppressed" if "suppressed" in prefix else "guard")
            return {"kind": kind, "expr": local.get("g"), "shape_env": local.get("self")}
    return {}


def free_symbols(expr: Any) -> list[str]:
    return sorted(str(s) for s in getattr(expr, "free_symbols", ()) or ())


def failure_facts(error: BaseException) -> dict[str, Any]:
    """The facts of a failed compile apart from its message: the exception types (outermost
    first), the expression PyTorch could not decide and its symbols, and the user line."""
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    chain, seen, expr, frame = [], set(), None, None
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(chain) < 10:
        seen.add(id(current))
        chain.append(type(current).__qualname__)
        if expr is None and isinstance(current, GuardOnDataDependentSymNode):
            expr = current.cond
        summary = getattr(current, "innermost_user_frame_summary", None)
        if frame is None and summary is not None and is_user_file(summary.filename):
            frame = user_frame(summary.filename, summary.lineno or 0, summary.name, summary.line)
        current = current.__cause__ or current.__context__
    if frame is None:
        real_stack = getattr(error, "real_stack", None) or []
        user = [f for f in real_stack if is_user_file(f.filename)]
        if user:
            frame = user_frame(user[-1].filename, user[-1].lineno or 0, user[-1].name, user[-1].line)
    message = str(error).strip().splitlines()
    return {"type": type(error).__qualname__, "chain": chain, "expr": "" if expr is None else str(expr),
            "symbols": free_symbols(expr), "user_frame": frame, "message": message[0] if message else ""}


def recompiling_frame() -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(f_locals, f_globals) of the frame Dynamo is checking guards for when it logs why it
    recompiles (get_and_maybe_log_recompilation_reasons' `frame`)."""
    for frame in _frames(3):
        if frame.f_code.co_name == "get_and_maybe_log_recompilation_reasons":
            target = frame.f_locals.get("frame")
            local, scope = getattr(target, "f_locals", None), getattr(target, "f_globals", None)
            if isinstance(local, dict):
                return local, scope if isinstance(scope, dict) else {}
            return None
    return None
