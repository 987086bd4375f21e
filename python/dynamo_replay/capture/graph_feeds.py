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


def tangent_sources(fw_metadata: Any) -> list[int] | None:
    """For each tangent of the backward graph, the position of the gradient it is among those
    flowing into the compiled graph's autograd node (one per output of the forward graph, up to
    its saved values). AOTAutograd's backward prologue keeps the gradients of the mutated inputs
    that require grad, of the tensor outputs that are not aliases and need a gradient, and of
    the intermediate bases, in that order; autograd passes a None for a gradient that never
    flowed, which the prologue sees as zeros."""
    import torch

    try:
        mutated = list(fw_metadata.mutated_inp_runtime_indices)
        inputs = fw_metadata.input_info
        sources = [i for i, index in enumerate(mutated) if inputs[index].mutates_data and inputs[index].requires_grad]
        for i, info in enumerate(fw_metadata.output_info):
            if (
                getattr(info.output_type, "name", "") in ("non_alias", "unsafe_view_alias", "custom_function_view")
                and isinstance(info.raw_type, type)
                and issubclass(info.raw_type, torch.Tensor)
                and info.requires_grad_for_backward
            ):
                sources.append(len(mutated) + i)
        start = len(mutated) + len(fw_metadata.output_info)
        sources.extend(range(start, start + int(fw_metadata.num_intermediate_bases)))
    except (AttributeError, TypeError):  # PyTorch's metadata changed shape: tangents in order, Nones left out
        return None
    return sources


def link_backward(ir: dict[str, Any], forward: dict[str, Any] | None, fw_metadata: Any = None) -> None:
    """The backward graph: saved values by their name among the forward graph's outputs, each
    tangent by its gradient's position (tangent_sources; without it, the n-th gradient that is
    not None)."""
    produced = {}
    roles = {n["name"]: n["input"] for n in _placeholders(forward) if "input" in n} if forward else {}
    for position, ref in enumerate(output_refs(forward) if forward else []):
        if isinstance(ref, dict) and "ref" in ref:
            produced.setdefault(ref["ref"], position)
    tangent = 0
    tangents = [n for n in _placeholders(ir) if n["name"].startswith("tangents_")]
    sources = tangent_sources(fw_metadata) if fw_metadata is not None else None
    if sources is not None and len(sources) != len(tangents):
        sources = None
    for node in _placeholders(ir):
        if node["name"].startswith("tangents_"):
            node["feed"] = {"tangent": tangent}
            if sources is not None:
                node["feed"]["grad_output"] = sources[tangent]
            tangent += 1
        elif node["name"] in produced:
            node["feed"] = {"forward_output": produced[node["name"]]}
        if node["name"] in roles:
            node["input"] = roles[node["name"]]
    ir["results"] = _gradient_results(forward, len(output_refs(ir)))


def _gradient_results(forward: dict[str, Any] | None, count: int) -> list[dict[str, Any]]:
    """The backward returns one gradient per forward input; the compiled graph's autograd node
    (where the backward sample is taken) has a slot per tensor input only, none for a symbolic
    size, so gradient j is the slot of the j-th input counting tensors alone."""
    inputs = _placeholders(forward) if forward else []
    if len(inputs) != count:
        return [{"grad_input": j} for j in range(count)]
    results, slot = [], 0
    for node in inputs:
        meta = (node.get("outputs") or [{}])[0]
        if isinstance(meta, dict) and "sym" in meta:
            results.append({"symbol": True})
        else:
            results.append({"grad_input": slot})
            slot += 1
    return results
