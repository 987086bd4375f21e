"""Stored graphs as runnable torch.fx.GraphModules: `load_graph`, and checking one against its samples.

gm = dynamo_replay.load_graph("job.dynrep", "0/0", graph="forward")
outputs = gm(*gm.example_inputs)          # the inputs the compiled graph first ran with
assert not gm.check()                     # [] when the outputs match the stored ones
"""

from __future__ import annotations

import os
from typing import Any

import torch

from dynamo_replay.errors import GraphError
from dynamo_replay.graphs import samples
from dynamo_replay.graphs.rebuild import rebuild
from dynamo_replay.graphs.standalone import differences
from dynamo_replay.graphs.stored import GRAPH_EVENTS, compile_ids, read_compile

__all__ = ["FLOAT_TOLERANCE", "GRAPH_EVENTS", "compile_ids", "load_graph"]

# The rebuilt graph runs the stored aten ops one by one; the compiled graph may have fused them.
FLOAT_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}


def _run(module: torch.fx.GraphModule, inputs: list[Any], rng_state: torch.Tensor | None = None) -> list[Any]:
    """The graph's outputs on copies of `inputs` (a graph may update its inputs in place:
    batch-norm statistics, an in-place op on an argument), random operators drawing from
    `rng_state` where given (the caller's generator is left as it was)."""
    copies = [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]  # clone keeps strides
    with torch.no_grad(), torch.random.fork_rng(devices=[]):
        if rng_state is not None:
            torch.set_rng_state(rng_state)
        result = module(*copies)
    return list(result) if isinstance(result, (list, tuple)) else [result]


def load_graph(
    store: str | os.PathLike[str], compile_id: str, graph: str = "forward", inputs: bool = True
) -> torch.fx.GraphModule:
    """The graph `graph` ("forward", "backward", "inference" or "dynamo") of compile `compile_id`
    ("0/0"), rebuilt from the store's graph IR.

    The module has `example_inputs` (the stored inputs; for a backward graph, its saved values
    from running the forward graph and the stored tangents), `expected_outputs` ((position,
    value) pairs from the samples), `rng_state` (the CPU generator's state at the first call,
    for graphs with random operators such as dropout), `check(rtol, atol)` (lines naming each output that differs)
    and `ir` (the graph IR). With inputs=False no sample is read. An input the capture did not
    store (over the sample cap) is filled with seeded random values of its description, as
    replay-run fills it, and named in `filled_inputs`; there is then nothing to compare with.

    GraphError names the store and what is missing: the compile, the graph, a sample, or a
    node that cannot be rebuilt here."""
    try:
        stored = read_compile(store, compile_id)
        event, ir = stored.ir(graph)
        module = rebuild(ir, stored.blobs, name=f"Compile_{compile_id.replace('/', '_')}_{event}")
        module.ir = ir
        module.graph_event = event
        module.compile_id = compile_id
        module.example_inputs = []
        module.expected_outputs = []
        module.rng_state = None
        module.filled_inputs = []
        if inputs:
            forward = None if event != "aot_backward_graph" else rebuild(stored.irs["aot_forward_graph"], stored.blobs)
            forward_rng = samples.rng_state(stored, "aot_forward_graph")
            module.filled_inputs = []
            module.example_inputs = samples.example_inputs(
                stored, event, lambda xs: _run(forward, xs, forward_rng), module.filled_inputs
            )
            # Outputs of inputs filled at random are not the stored ones: nothing to compare with.
            module.expected_outputs = [] if module.filled_inputs else samples.expected_outputs(stored, event)
            module.rng_state = samples.rng_state(stored, event)
    except GraphError as error:
        raise GraphError(f"{os.fspath(store)}: {error}") from None

    def check(rtol: float = FLOAT_TOLERANCE["rtol"], atol: float = FLOAT_TOLERANCE["atol"]) -> list[str]:
        return differences(_run(module, module.example_inputs, module.rng_state), module.expected_outputs, rtol, atol)

    module.check = check
    return module
