"""Which stored sample feeds each graph input and which result each graph output is.

The samples are taken at the compiled graph Dynamo installs (capture/tensor_samples.py): its
inputs are the Dynamo graph's inputs, in order, and AOTAutograd's forward or inference graph
takes the same inputs. Its outputs are, in order, the inputs it mutated (where AOTAutograd
returns their new values rather than keeping the mutation in the graph), the user outputs, and
for training the values saved for the backward. The backward graph takes those saved values by
name, then the tangents (the gradients flowing into the compiled graph, sampled at its autograd
node), and returns one gradient per forward input.
"""

from __future__ import annotations

from typing import Any

from dynamo_replay.capture.graph_ir import output_refs


def _placeholders(ir: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in ir["nodes"] if n["op"] == "placeholder"]


def link_dynamo(ir: dict[str, Any]) -> None:
    for index, node in enumerate(_placeholders(ir)):
        node["feed"] = {"sample_input": index}
    ir["results"] = [{"sample_output": j} for j in range(len(output_refs(ir)))]


def link_forward(ir: dict[str, Any], dynamo: dict[str, Any] | None, fw_metadata: Any) -> None:
    """An AOTAutograd forward or inference graph, from its compile's Dynamo graph (for the
    input roles) and AOTAutograd's view of the outputs (`fw_metadata`, ViewAndMutationMeta)."""
    inputs = _placeholders(ir)
    dynamo_inputs = _placeholders(dynamo) if dynamo else []
    if len(dynamo_inputs) == len(inputs):
        for index, (node, source) in enumerate(zip(inputs, dynamo_inputs)):
            node["feed"] = {"sample_input": index}
            if "input" in source:
                node["input"] = source["input"]
    results: list[dict[str, Any]] = []
    try:
        mutated = list(fw_metadata.mutated_inp_runtime_indices)
        users = len(fw_metadata.output_info)
    except AttributeError:  # PyTorch's metadata changed shape: leave the outputs unlinked
        mutated, users = [], -1
    for position in range(len(output_refs(ir))):
        if position < len(mutated):
            results.append({"mutated_input": mutated[position]})
        elif users >= 0 and position < len(mutated) + users:
            results.append({"sample_output": position - len(mutated)})
        else:
            results.append({"saved": True})
    ir["results"] = results


def link_backward(ir: dict[str, Any], forward: dict[str, Any] | None) -> None:
    """The backward graph: saved values by their name among the forward graph's outputs."""
    produced = {}
    roles = {n["name"]: n["input"] for n in _placeholders(forward) if "input" in n} if forward else {}
    for position, ref in enumerate(output_refs(forward) if forward else []):
        if isinstance(ref, dict) and "ref" in ref:
            produced.setdefault(ref["ref"], position)
    tangent = 0
    for node in _placeholders(ir):
        if node["name"].startswith("tangents_"):
            node["feed"] = {"tangent": tangent}
            tangent += 1
        elif node["name"] in produced:
            node["feed"] = {"forward_output": produced[node["name"]]}
        if node["name"] in roles:
            node["input"] = roles[node["name"]]
    ir["results"] = [{"grad_input": j} for j in range(len(output_refs(ir)))]
