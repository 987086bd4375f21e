"""Graphs as capture keeps and retraces them: a snapshot of an aten graph module, and its
decomposition to the Core ATen opset in the compile's own fake mode (capture/core_aten.py)."""

from __future__ import annotations

import contextlib
import sys
from types import FrameType
from typing import Any


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
    # A graph without inputs (torch.linspace(0, 1, 10) alone) takes the fake mode its nodes'
    # values were made in; one whose nodes carry none either has no symbols, and a new mode does.
    fake_mode = detect_fake_mode(args) or detect_fake_mode([n.meta.get("val") for n in module.graph.nodes])
    if fake_mode is None and args:
        raise ValueError("the graph's inputs carry no fake values")
    if fake_mode is None:
        from torch._subclasses.fake_tensor import FakeTensorMode

        fake_mode = FakeTensorMode()
    shape_env = fake_mode.shape_env
    from torch._decomp import decomposition_table

    table = dict(core_aten_decompositions())
    for op, decomposition in decomposition_table.items():
        if (
            isinstance(op, torch._ops.OpOverload)
            and op not in table
            and torch.Tag.core not in op.tags
            and op.namespace == "aten"
        ):
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
        tracing = "symbolic" if shape_env is not None else "fake"
        decomposed = make_fx(Retrace(module).run, decomposition_table=table, tracing_mode=tracing)(*args)
    decomposed.graph.eliminate_dead_code()
    return decomposed


def operator(namespace: str, name: str, overload: str) -> Any | None:
    """torch.ops.NAMESPACE.NAME.OVERLOAD, or None when this process has no such operator."""
    import torch

    try:
        return getattr(getattr(getattr(torch.ops, namespace), name), overload)
    except (AttributeError, RuntimeError):
        return None


def operator_schema(namespace: str, name: str, overload: str) -> Any | None:
    """The schema (torch._C.FunctionSchema) of torch.ops.NAMESPACE.NAME.OVERLOAD, or None when
    this PyTorch has no such operator."""
    found = operator(namespace, name, overload)
    return None if found is None else found._schema


def aten_operator(name: str, overload: str = "default") -> Any:
    """torch.ops.aten.NAME.OVERLOAD, for an operator whose name is private (a leading underscore)."""
    import torch

    return getattr(getattr(torch.ops.aten, name), overload)


def logging_frame() -> FrameType | None:
    """The frame of the PyTorch function that is logging a trace event (trace_structured's caller)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "trace_structured":
        frame = frame.f_back
    return frame.f_back if frame is not None else None


def graph_being_logged(local_name: str) -> tuple[Any, dict[str, Any]] | None:
    """(graph module, the logging function's locals) where the function logging a graph holds
    the module as `local_name`; None where PyTorch logged text only."""
    import torch.fx

    frame = logging_frame()
    if frame is None:
        return None
    scope = frame.f_locals
    module = scope.get(local_name)
    return (module, scope) if isinstance(module, torch.fx.GraphModule) else None


def operator_name(target: Any) -> str | None:
    """`aten::addmm.default` for an operator overload, `aten::addmm` for a packet,
    `higher_order::cond` for a higher-order operator; None for any other callable."""
    import torch

    if isinstance(target, torch._ops.OpOverload):
        return f"{target._schema.name}.{target._overloadname}"
    if isinstance(target, torch._ops.OpOverloadPacket):
        return target._qualified_op_name
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order::{target.name()}"
    return None


def is_fake(value: Any) -> bool:
    """A fake tensor (or a meta one): it has no data to store."""
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(value, FakeTensor) or bool(getattr(value, "is_meta", False))
