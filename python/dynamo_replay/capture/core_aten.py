"""Each stored aten graph once more, decomposed to PyTorch's Core ATen opset.

AOTAutograd's graphs call any of about 2000 aten operators; the Core ATen opset (the `core`
tag, about 190 operators) is what PyTorch guarantees every other operator decomposes into, and
what torch.export hands to backends. Capture stores the decomposed graph next to the original
(event dynamo_replay.core_aten_graph_ir), in the same graph IR, so the offline MLIR lowering
needs lowerings for the Core ATen opset only: lower-check takes the decomposed graph where the
original has an operator without a lowering (docs/mlir.md).

The decomposition runs when capture finishes, not while the job compiles, on a snapshot taken
when the graph was logged (Inductor rewrites the logged module in place afterwards). The
decomposed graph keeps the original's placeholders by name, so feeds, roles and results carry
over unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dynamo_replay import _torch
from dynamo_replay.capture import graph_ir
from dynamo_replay.capture.decompositions import extra_decompositions


def _rename_refs(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"ref"}:
            return {"ref": names.get(value["ref"], value["ref"])}
        return {k: _rename_refs(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename_refs(v, names) for v in value]
    return value


def core_aten_ir(
    snapshot: Any,
    original: dict[str, Any],
    put_blob: Callable[[bytes], str],
    constant_limit: int,
    scope_by_seq: dict[int, list[dict[str, str]]] | None,
) -> dict[str, Any]:
    """The graph IR of `snapshot` (graph_snapshot of the graph `original` was read from),
    decomposed to Core ATen; raises where PyTorch cannot retrace it."""
    decomposed = _torch.decompose_to_core_aten(snapshot, extra_decompositions())
    ir = graph_ir.graph_ir(original["graph"], decomposed, put_blob, constant_limit, scope_by_seq)
    before = [n for n in original["nodes"] if n["op"] == "placeholder"]
    after = [n for n in ir["nodes"] if n["op"] == "placeholder"]
    if len(before) != len(after) or len(graph_ir.output_refs(ir)) != len(graph_ir.output_refs(original)):
        raise ValueError(
            f"the decomposed graph takes {len(after)} inputs and returns {len(graph_ir.output_refs(ir))} "
            f"values, the original {len(before)} and {len(graph_ir.output_refs(original))}"
        )
    # The original's input names (a backward graph's saved values are named after the forward
    # nodes that made them) replace the retrace's; a retraced node that has one of those names
    # takes a fresh one.
    names = {new["name"]: old["name"] for new, old in zip(after, before)}
    used = {n["name"] for n in ir["nodes"]} | set(names.values())
    for node in ir["nodes"]:
        if node["op"] != "placeholder" and node["name"] in names.values():
            fresh = next(
                f"{node['name']}_core{i}" for i in range(len(used) + 1) if f"{node['name']}_core{i}" not in used
            )
            used.add(fresh)
            names[node["name"]] = fresh
    for node in ir["nodes"]:
        if node["op"] == "placeholder":
            old = before[after.index(node)]
            node.update({key: old[key] for key in ("feed", "input") if key in old})
        else:
            node["args"] = _rename_refs(node.get("args", []), names)
            node["kwargs"] = _rename_refs(node.get("kwargs", {}), names)
        node["name"] = names.get(node["name"], node["name"])
    if "results" in original:
        ir["results"] = original["results"]
    ir["opset"] = "core_aten"
    return ir
