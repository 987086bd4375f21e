"""Graph IR (format 1) from a graph's printed text: the fallback where PyTorch logs a graph
without the module at hand (a graph it read from its AOTAutograd cache), and how stores
written before format 2 were made. Format 1 has no source lines, scopes, constants or feeds.

PyTorch's structured trace carries each forward, backward and inference graph as readable
Python (`print_readable` with shape annotations). Capture turns that text into data: per node
the operator with overload (`aten::addmm.default`), its arguments (node references, scalars,
lists, dtypes, devices, symbolic expressions) and each output's dtype, shape, strides and
device; and per operator its full schema, looked up in the running PyTorch, so that no reader
needs PyTorch to know what an argument means. The layout is in docs/capture-schema.md, "Graph IR".

Reading the text rather than the graph object keeps capture out of Inductor's hook points:
a graph pass registered there would enter Inductor's cache keys and change what is compiled.
"""

from __future__ import annotations

import ast
import functools
import re
from typing import Any

FORMAT = 1

_DTYPES = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "c64": "complex64",
    "c128": "complex128",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "b8": "bool",
    "f8e4m3fn": "float8_e4m3fn",
    "f8e5m2": "float8_e5m2",
}
_TENSOR = re.compile(r"^(?P<dtype>\w+)\[(?P<shape>[^\]]*)\]\[(?P<stride>[^\]]*)\](?P<device>.*)$")
_SYM = re.compile(r"^Sym\((?P<expr>.*)\)$")
_CLASS_LINE = re.compile(r"^(?P<indent>[ \t]*)class [^(\n]*\(", re.MULTILINE)


def _dims(text: str) -> list[int | str]:
    return [int(d) if d.strip().lstrip("-").isdigit() else d.strip() for d in text.split(",") if d.strip()]


def parse_meta(annotation: str) -> dict[str, Any]:
    """'f32[s0, 64][64, 1]cpu' -> dtype, shape, stride, device; 'Sym(s0)' -> a symbolic int."""
    if match := _TENSOR.match(annotation):
        abbreviation = match["dtype"]
        return {
            "dtype": _DTYPES.get(abbreviation, abbreviation),
            "shape": _dims(match["shape"]),
            "stride": _dims(match["stride"]),
            "device": match["device"] or "cpu",
        }
    if match := _SYM.match(annotation):
        return {"sym": match["expr"]}
    return {"unparsed": annotation}


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _target(call: ast.expr) -> str:
    """`torch.ops.aten.addmm.default` -> `aten::addmm.default`; other callables as written."""
    dotted = _dotted(call) or ast.unparse(call)
    if dotted.startswith("torch.ops.") and dotted.count(".") == 4:
        _, _, namespace, op, overload = dotted.split(".")
        return f"{namespace}::{op}.{overload}"
    return dotted


_BINARY = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "truediv",
    ast.FloorDiv: "floordiv",
    ast.Mod: "mod",
    ast.Pow: "pow",
}


def _argument(node: ast.expr, names: set[str]) -> Any:
    if isinstance(node, ast.Name):
        if node.id in names:
            return {"ref": node.id}
        return {"float": node.id} if node.id in ("inf", "nan") else {"expr": node.id}
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return {"float": repr(value)}  # JSON has no nan or inf
        return value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_argument(element, names) for element in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        if isinstance(node.operand, ast.Constant):
            return _argument(ast.Constant(-node.operand.value), names)
        if isinstance(node.operand, ast.Name) and node.operand.id == "inf":
            return {"float": "-inf"}
    dotted = _dotted(node)
    if dotted and dotted.startswith("torch.") and dotted.count(".") == 1:
        return {"dtype": dotted[6:]} if not dotted.endswith("_format") else {"enum": dotted}
    if isinstance(node, ast.Call) and _dotted(node.func) == "device":
        return {"device": ":".join(str(_argument(a, names)) for a in node.args + [k.value for k in node.keywords])}
    return {"expr": ast.unparse(node)}


def parse_readable(text: str) -> dict[str, Any]:
    """Graph IR of one `print_readable` graph: its forward's inputs, nodes and outputs."""
    # Graph modules print with names like `<lambda>`, which are not identifiers.
    module = ast.parse(_CLASS_LINE.sub(lambda m: f"{m['indent']}class Graph{m.start()}(", text))
    forward = next((n for n in ast.walk(module) if isinstance(n, ast.FunctionDef) and n.name == "forward"), None)
    if forward is None:
        raise ValueError("no forward() in the graph text")
    nodes: list[dict[str, Any]] = []
    names: set[str] = set()
    for arg in forward.args.args[1:]:  # after self
        annotation = arg.annotation.value if isinstance(arg.annotation, ast.Constant) else ""
        nodes.append({"name": arg.arg, "op": "placeholder", "outputs": [parse_meta(annotation)]})
        names.add(arg.arg)
    for statement in forward.body:
        if isinstance(statement, ast.Return):
            nodes.append({"name": "output", "op": "output", "args": [_argument(statement.value, names)]})
            continue
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            target, value = statement.target.id, statement.value
            annotation = statement.annotation.value if isinstance(statement.annotation, ast.Constant) else ""
        elif (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            target, value, annotation = statement.targets[0].id, statement.value, ""
        else:
            continue
        if isinstance(value, ast.Constant) and value.value is None:
            continue  # `x = None`: the printed graph freeing a value, not a node
        node: dict[str, Any] = {"name": target, "op": "call_function"}
        if isinstance(value, ast.Call):
            node["target"] = _target(value.func)
            node["args"] = [_argument(a, names) for a in value.args]
            node["kwargs"] = {k.arg: _argument(k.value, names) for k in value.keywords if k.arg}
        elif isinstance(value, ast.BinOp) and type(value.op) in _BINARY:  # symbolic int arithmetic
            node["target"] = "operator." + _BINARY[type(value.op)]
            node["args"] = [_argument(value.left, names), _argument(value.right, names)]
            node["kwargs"] = {}
        elif isinstance(value, ast.Subscript):
            node["target"] = "operator.getitem"
            node["args"] = [_argument(value.value, names), _argument(value.slice, names)]
            node["kwargs"] = {}
        else:
            node.update(op="get_attr" if isinstance(value, ast.Attribute) else "expr", target=ast.unparse(value))
        node["outputs"] = [parse_meta(annotation)] if annotation else []
        nodes.append(node)
        names.add(target)
    return {"format": FORMAT, "origin": "text", "nodes": nodes, "schemas": {}}


@functools.cache
def schema_of(target: str) -> dict[str, Any] | None:
    """The operator's schema from the running PyTorch: arguments with types and defaults, returns.
    Cached: graphs share most operators, and schemas do not change within a process."""
    if "::" not in target:
        return None
    from dynamo_replay._torch import graphs

    namespace, rest = target.split("::", 1)
    op_name, _, overload = rest.partition(".")
    schema = graphs.operator_schema(namespace, op_name, overload or "default")
    if schema is None:
        return None
    text = str(schema)
    try:  # torchgen reads the schema the way native_functions.yaml spells it: Scalar, int[1]?
        from torchgen.model import FunctionSchema

        parsed = FunctionSchema.parse(text)
    except Exception:  # a custom op's schema torchgen cannot read: keep the text alone
        return {"text": text}
    kwarg_only = {a.name for a in parsed.arguments.flat_kwarg_only}
    return {
        "text": text,
        "arguments": [
            {
                "name": a.name,
                "type": str(a.type),
                "kwarg_only": a.name in kwarg_only,
                **({"default": a.default} if a.default is not None else {}),
            }
            for a in parsed.arguments.flat_all
        ],
        "returns": [{"name": r.name or "", "type": str(r.type)} for r in parsed.returns],
    }


def graph_ir(text: str) -> dict[str, Any]:
    """Parses the graph text and adds the schema of every operator it calls."""
    ir = parse_readable(text)
    for node in ir["nodes"]:
        target = node.get("target")
        called = node["op"] == "call_function" and target not in ir["schemas"]
        if called and (schema := schema_of(target)) is not None:
            ir["schemas"][target] = schema
    return ir
