"""Capture's symbolic-shape records, made while PyTorch logs its own shape events.

For each symbol: where it came from (operator, FX node, user line, phase); for each guard and
runtime assert on symbols: its expression, kind and symbols; for a failed compile: the
expression it could not decide and the user line, apart from the message; for a recompile:
each failed guard with the value the entry expected and the value the call brought. The ShapeEnv
of each compile is kept so the symbol table, with the ranges learned by the end, is written for
failed compiles too. Formats: docs/capture-schema.md, "Capture's own events".
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Callable
from typing import Any

from dynamo_replay import schema
from dynamo_replay._torch import shapes as _torch_shapes
from dynamo_replay.capture import call_sites
from dynamo_replay.capture.graph_ir import user_location
from dynamo_replay.capture.run_facts import RunFacts

PutEvent = Callable[[str, tuple[int, int, int], Any, Any], None]

_TENSOR_MISMATCH = re.compile(
    r"tensor '(?P<name>.+?)' (?P<what>[\w ]+?) mismatch(?: at index (?P<index>\d+))?\. "
    r"expected (?P<expected>[^,]+?)(?:, actual (?P<seen>.+))?$"
)
_SOURCE = re.compile(r"[A-Za-z_]\w*(?:\[[^\]]+\]|\.[A-Za-z_]\w*|\(\))*")
_COMPARISON = re.compile(r"^(?P<source>.+?) (?P<op>==|!=|is|is not) (?P<value>.+)$")


class ShapeEvents:
    def __init__(self, put_event: PutEvent, write_now: Callable[[], None]) -> None:
        self.put_event = put_event
        # Waits until every event put so far is in the file: a failure the job may die of on
        # the spot (os._exit, a kill) must not sit in the writer's queue when it does.
        self.write_now = write_now
        self.shape_envs: dict[tuple[int, int, int], Any] = {}  # compile id -> its ShapeEnv, read after the job
        self.run_facts = RunFacts(put_event, self.shape_envs, write_now)
        # compile id -> the Dynamo graph's tensor inputs: source, sizes (None where symbolic), dtype, requires_grad
        self.inputs: dict[tuple[int, int, int], list[dict[str, Any]]] = {}

    def logged(self, name: str, compile_id: tuple[int, int, int], metadata: Any, payload: Any) -> None:
        """Called for each trace event as PyTorch logs it, inside PyTorch's logging call."""
        if name == "dynamo_start":
            call_sites.record(self.put_event, compile_id)
        elif name in ("create_symbol", "create_unbacked_symbol"):
            self.symbol_created(compile_id, metadata, unbacked=name == "create_unbacked_symbol")
        elif name == "guard_added_fast":
            self.guard_added(compile_id, metadata)
        elif name == "compilation_metrics":
            if isinstance(metadata, dict) and metadata.get("fail_type"):
                self.compile_failed(compile_id, metadata)
            self.run_facts.partial_graphs.pop(compile_id, None)  # the compile is over
        elif name == "artifact" and isinstance(metadata, dict) and metadata.get("name") == "recompile_reasons":
            self.recompiled(compile_id, payload)
        elif name == "artifact" and isinstance(metadata, dict) and metadata.get("name") == "dynamo_graph_break_reason":
            self.graph_broke(compile_id)

    def keep_shape_env(self, compile_id: tuple[int, int, int], shape_env: Any) -> None:
        if shape_env is not None and compile_id not in self.shape_envs:
            self.shape_envs[compile_id] = shape_env

    def symbol_created(self, compile_id: tuple[int, int, int], metadata: dict[str, Any], unbacked: bool) -> None:
        context = _torch_shapes.creation_context()
        self.keep_shape_env(compile_id, context.get("shape_env"))
        node = context.get("node")
        frame, attributed = _torch_shapes.tracing_user_frame(), "user_stack"
        if frame is None:  # made while AOTAutograd or Inductor ran the graph: the node's own line
            stack_trace = _torch_shapes.current_node_stack_trace() or _torch_shapes.node_stack_trace(node)
            frame, attributed = user_location(stack_trace), "graph_node"
        target = _torch_shapes.target_name(node.target) if node is not None else ""
        origin = {
            "symbol": str(metadata.get("symbol", "")),
            "unbacked": unbacked,
            "phase": context["phase"],
            "op": context.get("op") or target,
            "node": node.name if node is not None else "",
            "node_target": target,
            "source": metadata.get("source", ""),
            "value": metadata.get("val"),
            "user_frame": frame,
            "attributed": attributed if frame else "",
        }
        self.put_event(schema.EVENT_SYMBOL_ORIGIN, compile_id, origin, None)
        if unbacked:
            self.run_facts.unbacked_symbol_made(compile_id, context["phase"])

    def guard_added(self, compile_id: tuple[int, int, int], metadata: dict[str, Any]) -> None:
        context = _torch_shapes.guard_context()
        self.keep_shape_env(compile_id, context.get("shape_env"))
        frame = _torch_shapes.tracing_user_frame() or user_location(_torch_shapes.current_node_stack_trace())
        expr = context.get("expr")
        if context.get("kind") == "runtime_assert" and expr is not None:
            self.run_facts.assert_frames[(compile_id, str(expr))] = frame
        self.put_event(
            schema.EVENT_SHAPE_GUARD,
            compile_id,
            {
                "expr": str(metadata.get("expr", "")),
                "kind": context.get("kind", "guard"),
                "symbols": _torch_shapes.free_symbols(expr),
                "user_frame": frame,
            },
            None,
        )

    def compile_failed(self, compile_id: tuple[int, int, int], metadata: dict[str, Any]) -> None:
        error = sys.exc_info()[1]  # the metrics are logged while the compile's exception unwinds
        if error is not None:
            facts = _torch_shapes.failure_facts(error)
        else:
            facts = {
                "type": metadata.get("fail_type"),
                "chain": [],
                "expr": "",
                "symbols": [],
                "user_frame": None,
                "message": str(metadata.get("fail_reason") or "").split("\n")[0],
            }
        if facts["user_frame"] is None and metadata.get("fail_user_frame_filename"):
            facts["user_frame"] = _torch_shapes.user_frame(
                metadata["fail_user_frame_filename"], int(metadata.get("fail_user_frame_lineno") or 0), ""
            )
        self.put_event(schema.EVENT_COMPILE_FAILURE, compile_id, facts, None)
        if error is not None:
            self.run_facts.compile_failed(compile_id, error, facts)
        self.write_now()

    def graph_broke(self, compile_id: tuple[int, int, int]) -> None:
        """A graph break is logged inside Dynamo's handler of its exception: its facts are read from it."""
        error = sys.exc_info()[1]
        if error is None:
            return
        facts = _torch_shapes.failure_facts(error)
        self.put_event(schema.EVENT_GRAPH_BREAK, compile_id, facts, None)
        self.run_facts.compile_failed(compile_id, error, facts)

    def graph_inputs(self, compile_id: tuple[int, int, int], module: Any) -> None:
        """Keeps what a Dynamo graph was compiled for, per tensor input, to name a recompile's
        cause from the objects themselves rather than from PyTorch's reason text."""
        self.inputs[compile_id] = _torch_shapes.graph_tensor_inputs(module)

    def recompiled(self, compile_id: tuple[int, int, int], payload: Any) -> None:
        reasons = _reason_list(payload)
        frame = _torch_shapes.recompiling_frame()
        causes = []
        for reason in reasons:
            entry = reason.partition(": ")[0]
            cause = self.compared_cause(entry, compile_id, frame) or recompile_cause(reason, frame)
            cause["text"] = reason.split("\n")[0]
            causes.append(cause)
        self.put_event(schema.EVENT_RECOMPILE, compile_id, {"causes": causes}, None)

    def compared_cause(
        self, entry: str, compile_id: tuple[int, int, int], frame: tuple[dict[str, Any], dict[str, Any]] | None
    ) -> dict[str, str] | None:
        """The cause of one cache entry's failure found by comparing what its graph was compiled
        for with the call's own values: the first tensor input whose dtype, rank, a static size or
        requires_grad differs. None when nothing differs there (the guard was on something else)."""
        frame_id, _, number = entry.partition("/")
        try:
            key = (int(frame_id), int(number.split("_")[0]), 0)
        except ValueError:
            return None
        if key[0] != compile_id[0] or frame is None or key not in self.inputs:
            return None
        for expected in self.inputs[key]:
            if (found := compare_input(expected, *frame)) is not None:
                return {"entry": entry, "from": "compared", **found}
        return None


def _reason_list(payload: Any) -> list[str]:
    if isinstance(payload, list):
        return [str(r) for r in payload]
    if isinstance(payload, str):
        try:
            parsed = json.loads(payload)
        except ValueError:
            return [payload]
        return [str(r) for r in parsed] if isinstance(parsed, list) else [str(parsed)]
    return []


def compare_input(expected: dict[str, Any], local: dict[str, Any], scope: dict[str, Any]) -> dict[str, str] | None:
    """How the call's tensor at `expected["source"]` differs from what the graph was compiled for."""
    import torch

    source = expected["source"]
    try:
        value = _evaluate(ast.parse(source, mode="eval").body, local, scope)
    except Exception:
        return None
    if not isinstance(value, torch.Tensor):
        return None
    dtype = str(value.dtype).removeprefix("torch.")
    if dtype != expected["dtype"]:
        return _difference(source, f"{source}.dtype", "dtype", expected["dtype"], dtype)
    if value.dim() != len(expected["sizes"]):
        return _difference(source, f"{source}.dim()", "rank", str(len(expected["sizes"])), str(value.dim()))
    for dim, size in enumerate(expected["sizes"]):
        if size is not None and value.shape[dim] != size:
            return _difference(source, f"{source}.size()[{dim}]", "size", str(size), str(value.shape[dim]))
    if bool(value.requires_grad) != expected["requires_grad"]:
        return _difference(
            source,
            f"{source}.requires_grad",
            "requires_grad",
            str(expected["requires_grad"]),
            str(bool(value.requires_grad)),
        )
    return None


def _difference(tensor: str, source: str, what: str, expected: str, seen: str) -> dict[str, str]:
    return {
        "guard": f"{source} == {expected}",
        "source": source,
        "tensor": tensor,
        "what": what,
        "expected": expected,
        "seen": seen,
    }


def recompile_cause(reason: str, frame: tuple[dict[str, Any], dict[str, Any]] | None) -> dict[str, str]:
    """One cache entry's failure, `0/0: scale == 0.5  # user line...`, as entry, guard, source,
    expected and seen; seen is read from the call's own frame where PyTorch's text lacks it."""
    entry, _, rest = reason.partition(": ")
    guard = rest.split("\n")[0].split("  #")[0].strip()
    cause = {"entry": entry, "guard": guard, "source": "", "expected": "", "seen": "", "text": reason.split("\n")[0]}
    if match := _TENSOR_MISMATCH.match(guard):
        what = match["what"].replace(" ", "_")
        attribute = {"size": f".size()[{match['index']}]", "stride": f".stride()[{match['index']}]"}.get(
            what, f".{what}"
        )
        cause["source"] = match["name"] + attribute
        cause["expected"] = match["expected"].removeprefix(f"{what}=").strip()
        cause["seen"] = (match["seen"] or "").strip()
    elif match := _COMPARISON.match(guard):
        cause["source"], cause["expected"] = match["source"].strip(), match["value"].strip()
    else:
        sources = [
            s for s in _SOURCE.findall(guard) if not s.isdigit() and s not in ("and", "or", "not", "True", "False")
        ]
        cause["source"], cause["expected"] = (sources[0] if sources else ""), guard
    if not cause["seen"] and cause["source"] and frame is not None:
        cause["seen"] = read_source(cause["source"], *frame)
    return cause


def read_source(source: str, local: dict[str, Any], scope: dict[str, Any]) -> str:
    """The value a guard source names in the calling frame (`x.size()[0]`, `L['scale']`,
    `self.training`), read with a small evaluator: names, subscripts by constant, attributes
    and size()/stride()/dim() calls only; "" when it cannot be read."""
    try:
        return _describe(_evaluate(ast.parse(source, mode="eval").body, local, scope))
    except Exception:
        return ""


def _evaluate(node: ast.AST, local: dict[str, Any], scope: dict[str, Any]) -> Any:
    if isinstance(node, ast.Name):
        if node.id == "L":
            return local
        if node.id == "G":
            return scope
        return local[node.id] if node.id in local else scope[node.id]
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return _evaluate(node.value, local, scope)[node.slice.value]
    if isinstance(node, ast.Attribute) and not node.attr.startswith("_"):
        return getattr(_evaluate(node.value, local, scope), node.attr)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("size", "stride", "dim")
        and not node.keywords
        and all(isinstance(a, ast.Constant) for a in node.args)
    ):
        import torch

        target = _evaluate(node.func.value, local, scope)
        if isinstance(target, torch.Tensor):
            return getattr(target, node.func.attr)(*(a.value for a in node.args))
    raise ValueError(f"not read: {ast.dump(node)}")


def _describe(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"tensor {tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}"
    if isinstance(value, (torch.Size, tuple, list)):
        return str(tuple(value))
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."
