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

import dataclasses
import linecache
import re
import sys
import types
import weakref
from collections.abc import Iterator
from typing import Any

_MAX_DEPTH = 120  # how far up a trace event's caller chain to look
# Files whose frames are PyTorch's or Python's machinery, never the user's line.
_MACHINERY = re.compile(r"[/\\](torch|runpy|importlib|contextlib|functools|logging)[/\\]|[/\\]runpy\.py$|<frozen ")


# Functions whose frame says which stage of a compile is running.
_PHASES = {
    "aot_module_simplified": "aot",
    "create_aot_state": "aot",
    "aot_function": "aot",
    "fx_codegen_and_compile": "inductor",
    "compile_fx_inner": "inductor",
    "_call_user_compiler": "backend",
}


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
            kind = (
                "runtime_assert"
                if prefix.startswith("runtime_assert")
                else "guard_suppressed"
                if "suppressed" in prefix
                else "guard"
            )
            return {"kind": kind, "expr": local.get("g"), "shape_env": local.get("self")}
    return {}


def free_symbols(expr: Any) -> list[str]:
    return sorted(str(s) for s in getattr(expr, "free_symbols", ()) or ())


def free_symbols_of(fake: Any) -> set[str]:
    """The symbols in a node's fake value: a SymInt's expression, a tensor's sizes."""
    import torch

    if isinstance(fake, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return set(free_symbols(fake.node.expr))
    if isinstance(fake, torch.Tensor):
        return {s for size in fake.shape if isinstance(size, torch.SymInt) for s in free_symbols(size.node.expr)}
    if isinstance(fake, (list, tuple)):
        return {s for f in fake for s in free_symbols_of(f)}
    return set()


def failure_facts(error: BaseException) -> dict[str, Any]:
    """The facts of a failed compile or a graph break apart from its message: the exception types
    (outermost first), the kind of failure (failure_kind), the expression PyTorch could not decide
    and its symbols, whether it needed the number itself, the graph-break type, and the user line."""
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    chain, seen, expr, frame, gb_type = [], set(), None, None, ""
    errors: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(chain) < 10:
        seen.add(id(current))
        errors.append(current)
        chain.append(type(current).__qualname__)
        if expr is None and isinstance(current, GuardOnDataDependentSymNode):
            expr = current.cond
        gb_type = gb_type or str(getattr(current, "gb_type", "") or "")
        summary = getattr(current, "innermost_user_frame_summary", None)
        if frame is None and summary is not None and is_user_file(summary.filename):
            frame = user_frame(summary.filename, summary.lineno or 0, summary.name, summary.line)
        current = current.__cause__ or current.__context__
    if frame is None:
        for e in errors:
            user = [f for f in (getattr(e, "real_stack", None) or []) if is_user_file(f.filename)]
            if user:
                frame = user_frame(user[-1].filename, user[-1].lineno or 0, user[-1].name, user[-1].line)
                break
    integer = expr is not None and not getattr(expr, "is_Boolean", False) and not getattr(expr, "is_Relational", False)
    message = str(error).strip().splitlines()
    facts = {
        "type": type(error).__qualname__,
        "chain": chain,
        "kind": failure_kind(errors, integer),
        "expr": "" if expr is None else str(expr),
        "symbols": free_symbols(expr),
        "integer": integer,
        "gb_type": gb_type,
        "user_frame": frame,
        "message": message[0] if message else "",
    }
    if facts["kind"] == "constraint_violation":
        facts["constraints"] = constraint_facts(error)
    return facts


# Exception classes (by name, outermost to innermost cause) -> the failure kind of docs/why.md.
_KINDS = (
    ("GuardOnDataDependentSymNode", "data_dependent"),
    ("PendingUnbackedSymbolNotFound", "unbacked_not_found"),
    ("ConstraintViolationError", "constraint_violation"),
    ("FailOnRecompileLimitHit", "recompile_limit"),
    ("RecompileLimitExceeded", "recompile_limit"),
    ("RecompileError", "recompile_forbidden"),
    ("DynamicOutputShapeException", "dynamic_output_shape"),
    ("DataDependentOutputException", "data_dependent_output"),
    ("UnsupportedOperatorException", "unsupported_operator"),
    ("BackendCompilerFailed", "backend_failed"),
    ("TorchRuntimeError", "fake_tensor_error"),
    ("Unsupported", "graph_break"),
    ("UserError", "user_error"),
    ("InternalTorchDynamoError", "internal_error"),
)


def failure_kind(errors: list[BaseException], integer: bool = False) -> str:
    """The most specific kind among an exception and its causes (innermost causes are the facts;
    Dynamo wraps them in UserError, Unsupported or TorchRuntimeError)."""
    names = {cls.__name__ for e in errors for cls in type(e).__mro__}
    for name, kind in _KINDS:
        if name in names:
            return "data_dependent_int" if kind == "data_dependent" and integer else kind
    return "other"


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


# What compiled code names a symbol's value: Inductor's wrapper keeps `u0 = buf0.size(0)`.
_SYMBOL_LOCAL = re.compile(r"^(?:s|u|zf|zuf)\d+$")


def _plain(value: Any) -> Any:
    return value if isinstance(value, (bool, int, float)) else None


def _symbol_of(value: Any) -> str | None:
    """The symbol a fake SymInt/SymFloat/SymBool stands for, when it is a bare symbol."""
    node = getattr(value, "node", None)
    expr = getattr(node, "expr", None)
    return str(expr) if getattr(expr, "is_Symbol", False) else None


def values_from_fake(fake: Any, real: Any) -> dict[str, Any]:
    """Each bare symbol of a node's fake value paired with what the real value holds there: a
    SymInt's number, a tensor's size in a symbolic dimension."""
    import torch

    out: dict[str, Any] = {}
    if isinstance(fake, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        if (symbol := _symbol_of(fake)) and _plain(real) is not None:
            out[symbol] = real
    elif isinstance(fake, torch.Tensor) and isinstance(real, torch.Tensor) and fake.dim() == real.dim():
        for dim, size in enumerate(fake.shape):
            if (symbol := _symbol_of(size)) is not None:
                out[symbol] = int(real.shape[dim])
    elif isinstance(fake, (list, tuple)) and isinstance(real, (list, tuple)) and len(fake) == len(real):
        for f, r in zip(fake, real):
            out.update(values_from_fake(f, r))
    return out


def node_fake_value(node: Any) -> Any:
    meta = getattr(node, "meta", None) or {}
    return meta.get("val", meta.get("example_value"))


def symbol_values_at_failure(tb: Any) -> dict[str, Any]:
    """The values symbols had in compiled code that raised, read from the frames the exception
    left: an FX graph's forward keeps each node's value in a local named after the node (its
    fake value says which symbol it is), Inductor's wrapper keeps `u0` itself. Only reads."""
    import torch

    values: dict[str, Any] = {}
    depth = 0
    while tb is not None and depth < _MAX_DEPTH:
        local = tb.tb_frame.f_locals
        owner = local.get("self")
        if isinstance(owner, torch.fx.GraphModule):
            for node in owner.graph.nodes:
                if node.name in local:
                    for symbol, value in values_from_fake(node_fake_value(node), local[node.name]).items():
                        values.setdefault(symbol, value)
        else:
            for name, value in local.items():
                if _SYMBOL_LOCAL.match(name) and _plain(value) is not None:
                    values.setdefault(name, value)
        tb, depth = tb.tb_next, depth + 1
    return values


def runtime_asserts(shape_env: Any) -> list[Any]:
    """Every deferred runtime assert of a compile (ShapeEnv.deferred_runtime_asserts)."""
    found = getattr(shape_env, "deferred_runtime_asserts", None) or {}
    return [ra for asserts in found.values() for ra in asserts]


def false_under(expr: Any, values: dict[str, Any]) -> bool:
    """`expr` is false once its symbols take `values` (all of them known)."""
    import sympy

    free = getattr(expr, "free_symbols", None)
    if not free or any(str(s) not in values for s in free):
        return False
    try:
        result = expr.xreplace({s: sympy.sympify(values[str(s)]) for s in free})
    except Exception:
        return False
    return result is sympy.false or result == sympy.false


def constraint_facts(error: BaseException) -> list[dict[str, Any]]:
    """For a ConstraintViolationError from ShapeEnv.produce_guards: each dimension the user marked
    (mark_dynamic, Dim), the range asked for, and what the code made of it: a constant it was
    specialized to (with the user line that did it) or the range the code allows. Read from
    produce_guards' own frame, where the inputs' symbolic contexts are."""
    from torch.fx.experimental.symbolic_shapes import StrictMinMaxConstraint

    frame = _traceback_frame(error, "produce_guards_verbose")
    if frame is None:
        return []
    import torch

    shape_env = frame.f_locals.get("self")  # its other locals are reused as the function goes on
    stacks = getattr(shape_env, "specialization_stacks", {}) or {}
    out = []
    for tracked in getattr(shape_env, "tracked_fakes", None) or []:  # Dynamo's inputs, as produce_guards got them
        source, context, fake = tracked.source, tracked.symbolic_context, tracked.fake
        for dim, constraint in enumerate(getattr(context, "constraint_sizes", None) or []):
            if constraint is None or not isinstance(fake, torch.Tensor) or dim >= fake.dim():
                continue
            name = f"{source.name}.size()[{dim}]"
            asked = None
            if isinstance(constraint, StrictMinMaxConstraint):
                asked = [_bound(constraint.vr.lower), _bound(constraint.vr.upper)]
            size = fake.shape[dim]
            entry: dict[str, Any] = {
                "source": name,
                "tensor": source.name,
                "dim": dim,
                "asked": asked,
                "specialized": None,
                "symbol": "",
                "allowed": None,
                "user_frame": None,
            }
            symbol = _symbol_of(size)
            if symbol is None:
                entry["specialized"] = int(size)
                stack = next((s for src, s in stacks.items() if getattr(src, "name", "") == name), None)
                entry["user_frame"] = _last_user_frame(stack)
            else:
                entry["symbol"] = symbol
                expr = size.node.expr
                entry["allowed"] = _allowed_range(shape_env, expr)
            out.append(entry)
    return out


_SCAN = 4096  # values tried on each side of the compiled size


def _allowed_range(shape_env: Any, symbol: Any) -> list[int | None] | None:
    """The widest run of sizes around the compiled one that every guard on `symbol` allows,
    within its value range: PyTorch's range keeps only bounds (`4 < s0`), while a guard such as
    `Ne(s0 - 4, 1)` cuts a hole; [6, 16] is what `mark_dynamic(x, 0, min=, max=)` can ask."""
    import sympy

    bounds = shape_env.var_to_range.get(symbol) if shape_env is not None else None
    hint = getattr(shape_env, "backed_var_to_val", {}).get(symbol)
    if bounds is None:
        return None
    low, high = _bound(bounds.lower), _bound(bounds.upper)
    guards = [g.expr for g in getattr(shape_env, "guards", []) if g.expr.free_symbols == {symbol}]
    if hint is None or not guards:
        return [low, high]

    def allowed(value: int) -> bool:
        return all(bool(g.xreplace({symbol: sympy.Integer(value)})) for g in guards)

    start = int(hint)
    if not allowed(start):
        return [low, high]
    a, b = start, start
    while a - 1 >= max(low if low is not None else 0, start - _SCAN) and allowed(a - 1):
        a -= 1
    while b + 1 <= min(high if high is not None else start + _SCAN, start + _SCAN) and allowed(b + 1):
        b += 1
    return [a, None if high is None and b == start + _SCAN else b]


def _bound(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        return None  # oo, -oo: unbounded
    return number if abs(number) < (1 << 62) else None


def _last_user_frame(stack: Any) -> dict[str, Any] | None:
    try:
        user = [f for f in (stack or []) if is_user_file(f.filename)]
    except TypeError:
        return None
    if not user:
        return None
    return user_frame(user[-1].filename, user[-1].lineno or 0, user[-1].name, user[-1].line)


def _traceback_frame(error: BaseException, function: str) -> types.FrameType | None:
    """The frame of `function` in the traceback of `error` or of an exception it chains to."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        tb = current.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_name == function:
                return tb.tb_frame
            tb = tb.tb_next
        current = current.__cause__ or current.__context__
    return None


def compiling_frame_locals() -> dict[str, Any] | None:
    """The locals of the frame Dynamo is compiling now (ConvertFrame's `frame`), from a trace
    handler called inside the compile."""
    for frame in _frames(3):
        code = frame.f_code
        if code.co_name == "__call__" and "frame" in code.co_varnames and code.co_filename.endswith("convert_frame.py"):
            target = frame.f_locals.get("frame")
            local = getattr(target, "f_locals", None)
            if isinstance(local, dict):
                return local
    return None


def tensor_names(local: dict[str, Any], limit: int = 64) -> dict[int, str]:
    """id(tensor) -> a source for it in a frame's locals: `x`, `args[0]`, `kwargs['ids']` (at
    most `limit` elements of a list, tuple or dict looked into)."""
    import torch

    found: dict[int, str] = {}
    for name, value in local.items():
        if name.startswith("__"):
            continue
        if isinstance(value, torch.Tensor):
            found.setdefault(id(value), name)
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value[:limit]):
                if isinstance(item, torch.Tensor):
                    found.setdefault(id(item), f"{name}[{i}]")
        elif isinstance(value, dict):
            for key, item in list(value.items())[:limit]:
                if isinstance(key, str) and isinstance(item, torch.Tensor):
                    found.setdefault(id(item), f"{name}[{key!r}]")
    return found


def calling_user_frame() -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(user frame, its locals) of the innermost user frame on the stack while Dynamo compiles:
    the line that called the function being compiled (PyTorch's own frames are skipped)."""
    for frame in _frames(3):
        file = frame.f_code.co_filename
        if is_user_file(file) and "/dynamo_replay/" not in file:
            return user_frame(file, frame.f_lineno, frame.f_code.co_name), frame.f_locals
    return None


@dataclasses.dataclass
class PartialGraph:
    """The graph Dynamo is building, as it was when an unbacked symbol was made: a copy of its
    nodes, because 2.15 empties a failed attempt's graph (metadata too) before the exception
    reaches capture. The node that makes the symbol gets its fake value only after the copy, so
    each original node's fake value is read again just before Dynamo clears it (read_fakes)."""

    nodes: list[Any]
    originals: dict[str, Any]  # copied node's name -> Dynamo's node
    modules: dict[str, Any]
    graph_args: dict[str, Any]  # placeholder name -> Dynamo's GraphArg (the real input)
    fakes: dict[str, Any] = dataclasses.field(default_factory=dict)  # copied node's name -> fake value

    def read_fakes(self) -> None:
        for name, node in self.originals.items():
            fake = node_fake_value(node)
            if fake is not None:
                self.fakes[name] = fake


class _ReadFakesFirst:
    """A cleanup of Dynamo's OutputGraph (its `cleanups` run, on a failed attempt, before its
    nodes are cleared): reads the kept graph's fake values. A weak reference: once capture has
    let the graph go (the compile ended), it does nothing."""

    def __init__(self, kept: PartialGraph) -> None:
        self._kept = weakref.ref(kept)

    def __call__(self) -> None:
        kept = self._kept()
        if kept is not None:
            kept.read_fakes()


def live_partial_graph() -> PartialGraph | None:
    """The graph Dynamo is building now and the real inputs behind its placeholders, read while
    it traces: Dynamo drops the inputs from the graph when a compile ends."""
    import torch
    from torch._dynamo.symbolic_convert import InstructionTranslatorBase

    for frame in _frames(3):
        # Only a translator's `output` is read: getattr on any other `self` (a lazy variable
        # tracker) could make Dynamo build a variable twice.
        tracer = frame.f_locals.get("self") if "self" in frame.f_code.co_varnames else None
        output = tracer.output if isinstance(tracer, InstructionTranslatorBase) else None
        if output is None:
            continue
        copy, copied = torch.fx.Graph(), {}
        copy.graph_copy(output.graph, copied)
        originals = {copied[node].name: node for node in output.graph.nodes if node in copied}
        kept = PartialGraph(
            nodes=list(copy.nodes),
            originals=originals,
            modules=dict(output.nn_modules),
            graph_args={
                node.name: node.meta["grapharg"]
                for node in output.graph.nodes
                if node.op == "placeholder" and "grapharg" in node.meta
            },
        )
        cleanups = getattr(output, "cleanups", None)
        if isinstance(cleanups, list):
            cleanups.append(_ReadFakesFirst(kept))
        return kept
    return None


@dataclasses.dataclass
class FailedGraph:
    """The graph a compile failed in, ready to run (capture/partial_graph_run.py): its nodes, the
    modules its call_module and get_attr nodes name, each placeholder's real input, and the fake
    values read before Dynamo cleared them (copied node's name -> fake value)."""

    nodes: list[Any]
    modules: Any
    inputs: dict[str, Any]
    fakes: dict[str, Any]


def failed_graph(error: BaseException, kept: PartialGraph | None) -> FailedGraph | None:
    """The graph Dynamo had traced up to the failure of a compile (2.13, 2.14: the failing
    translator's, read from the traceback; 2.15 empties it first: the one `kept` by
    live_partial_graph when the last unbacked symbol was made) with the frame's real inputs
    behind its placeholders (Dynamo's GraphArg examples). None when neither graph is there or
    an input is not known."""
    graph_args = kept.graph_args if kept is not None else {}
    graph = _failing_graph(error)
    if (graph is None or not any(node.op != "placeholder" for node in graph[0])) and kept is not None:
        graph = kept.nodes, kept.modules
    if graph is None:
        return None
    nodes, modules = graph
    if kept is not None and nodes is kept.nodes:
        kept.read_fakes()  # where Dynamo has not cleared them (2.13, 2.14)
    fakes = kept.fakes if kept is not None and nodes is kept.nodes else {}
    inputs: dict[str, Any] = {}
    for node in nodes:
        if node.op != "placeholder":
            continue
        grapharg = node.meta.get("grapharg") or graph_args.get(node.name)
        if grapharg is None:
            return None
        inputs[node.name] = grapharg.example
    return FailedGraph(nodes=nodes, modules=modules, inputs=inputs, fakes=fakes)


def real_tensors() -> Any:
    """A context in which operators make real tensors even inside a compile (Dynamo's fake
    tensor mode set aside)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    return unset_fake_temporarily()


def _failing_graph(error: BaseException) -> tuple[list[Any], Any] | None:
    """(nodes, nn_modules) of the graph Dynamo was building when `error` was raised: the
    OutputGraph of the innermost instruction translator in its traceback."""
    from torch._dynamo.symbolic_convert import InstructionTranslatorBase

    found = None
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and found is None:
        seen.add(id(current))
        tb = current.__traceback__
        while tb is not None:
            tracer = tb.tb_frame.f_locals.get("self")
            if isinstance(tracer, InstructionTranslatorBase):
                found = tracer.output
            tb = tb.tb_next
        current = current.__cause__ or current.__context__
    if found is None:
        return None
    return list(found.graph.nodes), getattr(found, "nn_modules", None)


def graph_tensor_inputs(module: Any) -> list[dict[str, Any]]:
    """A Dynamo graph's tensor inputs as compiled: source, each size (None where symbolic), dtype
    and requires_grad, from the placeholders' fake values and Dynamo's GraphArg sources."""
    import torch

    out = []
    for node in module.graph.nodes:
        if node.op != "placeholder":
            continue
        fake, grapharg = node_fake_value(node), node.meta.get("grapharg")
        source = getattr(getattr(grapharg, "source", None), "name", None)
        if not isinstance(fake, torch.Tensor) or not isinstance(source, str):
            continue
        sizes = [None if isinstance(d, torch.SymInt) else int(d) for d in fake.shape]
        out.append(
            {
                "source": source,
                "sizes": sizes,
                "dtype": str(fake.dtype).removeprefix("torch."),
                "requires_grad": bool(fake.requires_grad),
            }
        )
    return out
