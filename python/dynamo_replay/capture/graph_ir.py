"""The graphs Dynamo and AOTAutograd produced, as a torch-free graph IR (JSON, format 2).

PyTorch logs each Dynamo, forward, backward and inference graph to the structured trace while
the compile runs, and the function that logs it holds the graph module in a local variable.
Capture's trace handler reads that module right there, before Inductor's passes change it,
and turns it into data: per node the operator with overload, every argument as a typed value,
each output's dtype, shape (symbolic expressions kept), strides, device and requires_grad, the
user source line and the module scope; constant tensors with their bytes; each graph input's
role and the stored sample that feeds it. The layout is in docs/capture-schema.md.

Only reads: nothing is registered in Inductor's hook points or written into the graph (node
metadata enters Inductor's cache keys), and symbolic sizes are printed, never compared (a
comparison would add a guard). Where the graph object is not there (PyTorch logs a graph it
read from its AOTAutograd cache as text only), capture falls back to graph_text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from dynamo_replay import _torch
from dynamo_replay.capture.graph_text import schema_of
from dynamo_replay.capture.tensor_samples import stored_bytes

FORMAT = 2
# Structured-trace event -> the local variable of the logging function that holds the graph.
GRAPH_LOCALS = {
    "dynamo_output_graph": "gm",
    "aot_forward_graph": "fw_module",
    "aot_backward_graph": "bw_module",
    "aot_inference_graph": "fw_module",
}
IR_GRAPHS = tuple(GRAPH_LOCALS)

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)\n(?P<code>[^\n]*)')
_ROOT = re.compile(r"^[LG]\['[^']*'\]")
_PART = re.compile(r"\._(?:modules|parameters|buffers)\['([^']*)'\]|\.(\w+)|\[(\d+)\]|\['([^']*)'\]")


def graph_being_logged(event: str) -> tuple[Any, dict[str, Any]] | None:
    """(graph module, the logging function's locals), or None where PyTorch logged text only."""
    return _torch.graphs.graph_being_logged(GRAPH_LOCALS[event])


# --- values -------------------------------------------------------------------------------


def _dim(value: Any) -> int | str:
    return value if isinstance(value, int) else str(value)  # a SymInt prints its expression


def describe_meta(value: Any) -> Any:
    """What a node produces, from its fake value: tensors, symbolic and plain scalars, tuples."""
    import torch

    if isinstance(value, torch.Tensor):
        entry: dict[str, Any] = {
            "dtype": str(value.dtype).removeprefix("torch."),
            "shape": [_dim(d) for d in value.shape],
        }
        try:
            entry["stride"] = [_dim(s) for s in value.stride()]
            entry["storage_offset"] = _dim(value.storage_offset())  # as_strided reads from it
        except RuntimeError:  # sparse and nested tensors have no strides
            entry["stride"] = None
        entry["device"] = str(value.device)
        entry["requires_grad"] = bool(value.requires_grad)
        return entry
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {"sym": str(value.node.expr), "type": type(value).__name__.removeprefix("Sym").lower()}
    if isinstance(value, (list, tuple)):
        return [describe_meta(v) for v in value]
    if value is None or isinstance(value, (bool, int, str)):
        return {"value": value}
    if isinstance(value, float):
        return {"value": encode_arg(value)}
    return {"unsupported": type(value).__qualname__}


def encode_arg(value: Any) -> Any:
    """One argument as a typed JSON value (docs/capture-schema.md, "Arguments")."""
    import torch
    import torch.fx

    if isinstance(value, torch.fx.Node):
        return {"ref": value.name}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}  # JSON has no inf or nan
    if isinstance(value, list):
        return [encode_arg(v) for v in value]
    if isinstance(value, tuple):  # torch.Size too
        return {"tuple": [encode_arg(v) for v in value]}
    if isinstance(value, torch.dtype):
        return {"dtype": str(value).removeprefix("torch.")}
    if isinstance(value, torch.layout):
        return {"layout": str(value).removeprefix("torch.")}
    if isinstance(value, torch.memory_format):
        return {"memory_format": str(value).removeprefix("torch.")}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {"sym": str(value.node.expr)}
    if isinstance(value, slice):
        return {"slice": [encode_arg(value.start), encode_arg(value.stop), encode_arg(value.step)]}
    if value is Ellipsis:
        return {"ellipsis": True}
    if isinstance(value, complex):
        return {"complex": [encode_arg(value.real), encode_arg(value.imag)]}
    if callable(value):
        return {"py": _qualified(value)}
    return {"repr": repr(value)[:200]}


def _qualified(target: Any) -> str:
    from torch.fx.node import _get_qualified_name

    try:
        return _get_qualified_name(target)
    except Exception:  # a callable FX itself cannot name: keep what Python says
        return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"


def target_name(node: Any) -> str:
    """`aten::addmm.default` for an operator overload; the qualified name of any other callable;
    the attribute, method or module name for the other node kinds."""
    target = node.target
    if (name := _torch.graphs.operator_name(target)) is not None:
        return name
    return target if isinstance(target, str) else _qualified(target)


# --- where a node comes from --------------------------------------------------------------


def user_location(stack_trace: str | None) -> dict[str, Any] | None:
    """The innermost frame of a node's stack trace: file, line, function and the code text."""
    frames = list(_FRAME.finditer(stack_trace or ""))
    if not frames:
        return None
    last = frames[-1]
    return {"file": last["file"], "line": int(last["line"]), "function": last["function"], "code": last["code"].strip()}


def module_path(source_name: str) -> str:
    """`L['self'].blocks.0.fc1` or `L['self']._modules['fc1']` -> `blocks.0.fc1`, `fc1`."""
    rest = _ROOT.sub("", source_name)
    return ".".join(next(p for p in m.groups() if p is not None) for m in _PART.finditer(rest))


def module_scope(nn_module_stack: dict[str, Any] | None) -> list[dict[str, str]]:
    """Outermost to innermost: each module's path and class, as the scope of a node."""
    scope = []
    for path, cls in (nn_module_stack or {}).values():
        name = cls if isinstance(cls, str) else f"{cls.__module__}.{cls.__qualname__}"
        scope.append({"path": module_path(str(path)), "class": name})
    return scope


def input_role(source: Any, example: Any) -> dict[str, Any]:
    """A Dynamo graph input: a parameter or buffer with its qualified name, a user input with
    its Dynamo source, or a symbolic size with its symbol."""
    import torch

    name = source.name if isinstance(getattr(source, "name", None), str) else str(source)
    if isinstance(example, torch.SymInt):
        return {"role": "symbol", "symbol": str(example.node.expr), "source": name}
    for kind, role in (("._parameters[", "parameter"), ("._buffers[", "buffer")):
        if kind in name:
            return {"role": role, "name": module_path(name), "source": name}
    if isinstance(example, torch.nn.Parameter):
        return {"role": "parameter", "name": module_path(name), "source": name}
    return {"role": "user_input", "source": name}


# --- the graph ----------------------------------------------------------------------------


def _constant(module: Any, target: str, put_blob: Callable[[bytes], str], budget: list[int]) -> dict[str, Any]:
    import torch

    value: Any = module
    for part in target.split("."):
        value = getattr(value, part, None)
    if not isinstance(value, torch.Tensor):
        return {"unsupported": type(value).__qualname__}
    entry = describe_meta(value)
    if _torch.graphs.is_fake(value):
        return entry | {"skipped": "no data: a fake or meta tensor"}
    return entry | stored_bytes(value, budget, put_blob, "constant")


def graph_ir(
    event: str,
    module: Any,
    put_blob: Callable[[bytes], str],
    constant_limit: int,
    scope_by_seq: dict[int, list[dict[str, str]]] | None = None,
) -> dict[str, Any]:
    """Graph IR of one graph module. `scope_by_seq` (forward node seq_nr -> module scope) gives
    backward nodes, which PyTorch leaves without one, the scope of the forward node they differentiate."""
    nodes: list[dict[str, Any]] = []
    schemas: dict[str, Any] = {}
    constants: dict[str, Any] = {}
    budget = [constant_limit]
    for node in module.graph.nodes:
        entry: dict[str, Any] = {"name": node.name, "op": node.op}
        if node.op != "placeholder" and node.op != "output":
            entry["target"] = target_name(node)
        if node.op != "placeholder":
            entry["args"] = [encode_arg(a) for a in node.args]
            entry["kwargs"] = {k: encode_arg(v) for k, v in node.kwargs.items()}
        meta = node.meta
        value = meta.get("val", meta.get("example_value"))
        if node.op != "output":
            described = describe_meta(value)
            entry["outputs"] = described if isinstance(described, list) else [described]
        if node.op == "placeholder":  # PyTorch copies an input's metadata from its first use
            pass
        elif stack := meta.get("stack_trace"):
            entry["stack_trace"] = stack
            if location := user_location(stack):
                entry["location"] = location
        scope = module_scope(meta.get("nn_module_stack")) if node.op != "placeholder" else []
        if node.op != "placeholder" and not scope and scope_by_seq and isinstance(meta.get("seq_nr"), int):
            scope = scope_by_seq.get(meta["seq_nr"], [])
        if scope:
            entry["scope"] = scope
        if isinstance(meta.get("seq_nr"), int):
            entry["seq_nr"] = meta["seq_nr"]
        if node.op == "placeholder" and (grapharg := meta.get("grapharg")) is not None:
            entry["input"] = input_role(grapharg.source, value)
        called = node.op == "call_function" and "::" in entry["target"] and entry["target"] not in schemas
        if called and (schema := schema_of(entry["target"])) is not None:
            schemas[entry["target"]] = schema
        if node.op == "get_attr":
            constants[node.target] = _constant(module, node.target, put_blob, budget)
        nodes.append(entry)
    return {
        "format": FORMAT,
        "graph": event,
        "origin": "graph",
        "nodes": nodes,
        "schemas": schemas,
        "constants": constants,
    }


def scope_by_seq_nr(ir: dict[str, Any]) -> dict[int, list[dict[str, str]]]:
    return {n["seq_nr"]: n["scope"] for n in ir["nodes"] if "seq_nr" in n and "scope" in n}


def output_refs(ir: dict[str, Any]) -> list[Any]:
    """The output node's values, flattened one level (graphs return one tuple)."""
    output = next((n for n in ir["nodes"] if n["op"] == "output"), None)
    if output is None or not output["args"]:
        return []
    value = output["args"][0]
    return (
        value["tuple"]
        if isinstance(value, dict) and "tuple" in value
        else value
        if isinstance(value, list)
        else [value]
    )
