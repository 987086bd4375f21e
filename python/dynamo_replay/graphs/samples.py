"""The inputs each stored graph was called with and the outputs it gave, from the samples.

How the IR's feeds and results map onto the samples is in capture/graph_feeds.py. A backward
graph's saved values come from running its forward graph on the forward sample.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from dynamo_replay.errors import GraphError
from dynamo_replay.graphs.rebuild import tensor
from dynamo_replay.graphs.stored import StoredCompile


def filled(entry: dict[str, Any], position: int, stride: list[Any] | None = None, seed: int = 0) -> torch.Tensor:
    """Seeded random values of a tensor the capture described but did not store (over the
    sample cap), drawn as replay-run draws them (replay/run/runner.cc, Run::filled): a CPU
    generator seeded with seed + the input's position, float32 normals of the recorded mean and
    standard deviation cast to the dtype, integers in the recorded range."""
    dtype = getattr(torch, entry["dtype"])
    generator = torch.Generator().manual_seed(seed + position)
    if dtype.is_floating_point:
        values = torch.randn(entry["shape"], generator=generator, dtype=torch.float32)
        values = (values * entry.get("std", 1.0) + entry.get("mean", 0.0)).to(dtype)
    else:
        low, high = (0, 1) if dtype == torch.bool else (entry.get("min", 0), entry.get("max", 9))
        values = torch.randint(low, high + 1, entry["shape"], generator=generator, dtype=torch.int64).to(dtype)
    if stride and all(isinstance(s, int) for s in stride) and list(values.stride()) != stride:
        values = torch.empty_strided(values.shape, stride, dtype=dtype).copy_(values)
    return values


def not_stored(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and "blob" not in entry
        and "value" not in entry
        and "dtype" in entry
        and "shape" in entry
    )


def _value(entry: dict[str, Any] | None, blobs: dict[str, bytes], stride: list[Any] | None = None) -> Any:
    if entry is None:
        return None
    if "blob" in entry:
        return tensor(entry, blobs, stride)
    if "value" in entry:
        value = entry["value"]
        return int(value) if isinstance(value, str) and value.lstrip("-").isdigit() else value
    raise GraphError(f"a sample was not stored: {entry.get('skipped') or entry.get('unsupported') or entry}")


def _placeholders(ir: dict[str, Any]) -> list[dict[str, Any]]:
    return [n for n in ir["nodes"] if n["op"] == "placeholder"]


def _stride(node: dict[str, Any]) -> list[Any] | None:
    outputs = node.get("outputs") or [{}]
    return outputs[0].get("stride") if isinstance(outputs[0], dict) else None


def example_inputs(
    stored: StoredCompile,
    event: str,
    run_forward: Callable[[list[Any]], list[Any]] | None = None,
    filled_names: list[str] | None = None,
) -> list[Any]:
    """The stored inputs of one graph, in placeholder order; GraphError names an input no sample
    feeds. An input over the sample cap is `filled`, and its name added to `filled_names`."""
    ir = stored.irs[event]
    forward_sample = stored.samples.get("forward")
    backward_sample = stored.samples.get("backward")
    grads = (backward_sample or {}).get("inputs", [])
    tangents = [t for t in grads if t.get("value", 0) is not None]  # stores without "grad_output"
    forward_outputs: list[Any] | None = None

    def forward_output(node: dict[str, Any], position: int) -> Any:
        nonlocal forward_outputs
        if forward_outputs is None:
            if run_forward is None:
                raise GraphError(f"input {node['name']} of {event} is computed by the forward graph")
            forward_outputs = run_forward(example_inputs(stored, "aot_forward_graph"))
        return forward_outputs[position]

    values = []
    for node in _placeholders(ir):
        feed = node.get("feed")
        if feed is None:
            raise GraphError(f"no stored sample feeds input {node['name']} of {event}")
        if "sample_input" in feed:
            if forward_sample is None:
                raise GraphError(
                    f"compile {stored.compile_id} has no stored sample (captured with samples off, "
                    "or the graph never ran)"
                )
            entry = forward_sample["inputs"][feed["sample_input"]]
            if not_stored(entry):
                values.append(filled(entry, len(values), _stride(node)))
                if filled_names is not None:
                    filled_names.append(node["name"])
            else:
                values.append(_value(entry, stored.blobs, _stride(node)))
        elif "tangent" in feed:
            missing = GraphError(
                f"compile {stored.compile_id} has no stored backward sample for {node['name']} "
                "(the job never ran backward through it inside capture)"
            )
            if "grad_output" not in feed:
                if feed["tangent"] >= len(tangents):
                    raise missing
                values.append(_value(tangents[feed["tangent"]], stored.blobs, _stride(node)))
            elif feed["grad_output"] >= len(grads):
                raise missing
            elif grads[feed["grad_output"]].get("value", 0) is None:  # no gradient flowed: autograd's zeros
                values.append(_zeros_like(forward_output(node, feed["grad_output"]), _stride(node)))
            else:
                values.append(_value(grads[feed["grad_output"]], stored.blobs, _stride(node)))
        elif "forward_output" in feed:
            values.append(forward_output(node, feed["forward_output"]))
    return values


def _zeros_like(value: Any, stride: list[Any] | None) -> Any:
    """The zeros autograd passes for a gradient that never flowed, laid out as the graph traced it."""
    if stride and all(isinstance(s, int) for s in stride):
        return torch.empty_strided(value.shape, stride, dtype=value.dtype).zero_()
    return torch.zeros_like(value, memory_format=torch.contiguous_format)


def rng_state(stored: StoredCompile, event: str) -> torch.Tensor | None:
    """The CPU generator's state at the compiled graph's first call, for a graph that draws
    random numbers as that call did (not a backward graph: it ran later)."""
    entry = (stored.samples.get("forward") or {}).get("rng_state")
    if event == "aot_backward_graph" or not isinstance(entry, dict) or "blob" not in entry:
        return None
    return tensor(entry, stored.blobs)


def expected_outputs(stored: StoredCompile, event: str) -> list[tuple[int, Any]]:
    """(output position, stored value) for each output a sample holds."""
    ir = stored.irs[event]
    pairs = []
    for position, result in enumerate(ir.get("results") or []):
        if "sample_output" in result and (sample := stored.samples.get("forward")):
            entry = sample["outputs"][result["sample_output"]]
        elif "grad_input" in result and (sample := stored.samples.get("backward")):
            entry = sample["outputs"][result["grad_input"]] if result["grad_input"] < len(sample["outputs"]) else None
        else:
            continue
        if isinstance(entry, dict) and ("blob" in entry or "value" in entry) and entry.get("value", 0) is not None:
            pairs.append((position, _value(entry, stored.blobs)))
    return pairs
