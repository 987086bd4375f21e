"""Graph IR -> torch.fx.GraphModule, from the IR alone (no pickles), and the sample tensors.

Node names, operators, arguments, constants, `stack_trace` and `nn_module_stack` come back as
PyTorch had them. Parameters and buffers stay graph inputs, as in the graph PyTorch compiled
(Dynamo lifts them); their stored values are in the example inputs.
"""

from __future__ import annotations

import builtins
import importlib
from typing import Any

import torch
import torch.fx

from dynamo_replay.errors import GraphError
from dynamo_replay.graphs.standalone import register_constants


def resolve(qualified: str) -> Any:
    """`torch._C._nn.linear`, `operator.getitem`, `len` -> the object."""
    found = locate(qualified)
    return found[2] if found is not None else getattr(builtins, qualified)


def locate(qualified: str) -> tuple[str, list[str], Any] | None:
    """(module, attributes, object) for a dotted name, importing the longest module prefix
    that holds it; None when no prefix does."""
    parts = qualified.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            value: Any = importlib.import_module(".".join(parts[:cut]))
            for part in parts[cut:]:
                value = getattr(value, part)
        except (ImportError, AttributeError):
            continue
        return ".".join(parts[:cut]), parts[cut:], value
    return None


def operator(target: str) -> Any:
    """`aten::addmm.default` -> torch.ops.aten.addmm.default; other targets by qualified name."""
    if target.startswith("higher_order::"):
        return getattr(torch.ops.higher_order, target.split("::", 1)[1])
    if "::" in target:
        namespace, rest = target.split("::", 1)
        name, _, overload = rest.partition(".")
        packet = getattr(getattr(torch.ops, namespace), name)
        return getattr(packet, overload) if overload else packet
    return resolve(target)


def decode_arg(value: Any, env: dict[str, torch.fx.Node]) -> Any:
    if isinstance(value, list):
        return [decode_arg(v, env) for v in value]
    if not isinstance(value, dict):
        return value
    ((kind, payload),) = value.items()
    if kind == "ref":
        return env[payload]
    if kind == "tuple":
        return tuple(decode_arg(v, env) for v in payload)
    if kind == "float":
        return float(payload)
    if kind in ("dtype", "layout", "memory_format"):
        return getattr(torch, payload)
    if kind == "device":
        return torch.device(payload)
    if kind == "slice":
        return slice(*(decode_arg(v, env) for v in payload))
    if kind == "ellipsis":
        return Ellipsis
    if kind == "complex":
        return complex(*payload)
    if kind == "py":
        return resolve(payload)
    raise GraphError(f"argument {value!r} cannot be rebuilt")


def tensor(entry: dict[str, Any], blobs: dict[str, bytes], stride: list[Any] | None = None) -> torch.Tensor:
    """A stored tensor (sample or constant) from its bytes; laid out with `stride` where the
    graph's input has concrete strides (a transposed input stays transposed)."""
    dtype = getattr(torch, entry["dtype"])
    raw = bytearray(blobs[entry["blob"]])
    value = torch.frombuffer(raw, dtype=dtype) if raw else torch.empty(0, dtype=dtype)
    value = value.reshape(entry["shape"])
    if stride and all(isinstance(s, int) for s in stride) and list(value.stride()) != stride:
        value = torch.empty_strided(value.shape, stride, dtype=dtype).copy_(value)
    return value


def _scope_meta(scope: list[dict[str, str]]) -> dict[str, tuple[str, str]]:
    return {f"scope_{i}": (s["path"], s["class"]) for i, s in enumerate(scope)}


def rebuild(ir: dict[str, Any], blobs: dict[str, bytes], name: str = "Graph") -> torch.fx.GraphModule:
    if ir.get("format", 1) < 2:
        raise GraphError(
            "this graph was stored as graph IR format 1 (parsed from PyTorch's printed text, "
            "without constants or source lines); capture the job again with this version to rebuild it"
        )
    constants = {}
    for attr, entry in (ir.get("constants") or {}).items():
        if "blob" not in entry:
            raise GraphError(f"constant {attr} was not stored: {entry.get('skipped') or entry.get('unsupported')}")
        constants[attr] = tensor(entry, blobs, entry.get("stride"))
    root = torch.nn.Module()
    register_constants(root, constants)
    graph = torch.fx.Graph()
    env: dict[str, torch.fx.Node] = {}
    for entry in ir["nodes"]:
        op = entry["op"]
        try:
            if op == "placeholder":
                node = graph.placeholder(entry["name"])
            elif op == "output":
                graph.output(decode_arg(entry["args"][0], env) if entry["args"] else None)
                continue
            else:
                if op == "call_module":
                    raise GraphError("it calls a submodule, which the store does not hold")
                target = operator(entry["target"]) if op == "call_function" else entry["target"]
                args = tuple(decode_arg(a, env) for a in entry.get("args", []))
                kwargs = {k: decode_arg(v, env) for k, v in entry.get("kwargs", {}).items()}
                node = graph.create_node(op, target, args, kwargs, name=entry["name"])
        except GraphError as error:
            raise GraphError(f"node {entry['name']} ({entry.get('target', op)}): {error}") from None
        except (AttributeError, ImportError, KeyError, RuntimeError) as error:
            where = entry.get("location")
            line = f" at {where['file']}:{where['line']}" if where else ""
            raise GraphError(
                f"node {entry['name']} ({entry.get('target', op)}){line} cannot be rebuilt here: "
                f"{type(error).__name__}: {error}"
            ) from None
        node.name = entry["name"]
        if "stack_trace" in entry:
            node.meta["stack_trace"] = entry["stack_trace"]
        if "scope" in entry:
            node.meta["nn_module_stack"] = _scope_meta(entry["scope"])
        env[entry["name"]] = node
    module = torch.fx.GraphModule(root, graph, class_name=name)
    return module
