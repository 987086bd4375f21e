"""The real values of the unbacked symbols a compile failed on: the graph Dynamo had traced up
to the failure (_torch.shapes.failed_graph) is run eagerly, node by node, on copies of the
frame's real inputs, until every wanted symbol has a value. A small FX interpreter over public
FX API; what it reads of Dynamo's state comes through _torch.shapes."""

from __future__ import annotations

from typing import Any

from dynamo_replay._torch import shapes as _torch_shapes


def partial_graph_values(
    error: BaseException, wanted: set[str], kept: _torch_shapes.PartialGraph | None, byte_limit: int = 256 << 20
) -> dict[str, Any]:
    """The values of the unbacked symbols `wanted` of a compile that failed on them (`kept`: the
    graph live_partial_graph kept when the last unbacked symbol was made, which made every
    wanted symbol). The random state is put back after. Empty when there is no graph, when the
    inputs are larger than `byte_limit`, or when a node cannot be run."""
    import torch

    if not wanted:
        return {}
    graph = _torch_shapes.failed_graph(error, kept)
    if graph is None:
        return {}
    total = sum(
        value.numel() * value.element_size() for value in graph.inputs.values() if isinstance(value, torch.Tensor)
    )
    if total > byte_limit:
        return {}
    try:
        return torch.compiler.disable(_run)(graph, wanted)
    except Exception:  # the values are a help, never worth more than the facts already recorded
        return {}


def _run(graph: _torch_shapes.FailedGraph, wanted: set[str]) -> dict[str, Any]:
    import torch

    found: dict[str, Any] = {}
    env: dict[str, Any] = {}
    modules = graph.modules
    with _torch_shapes.real_tensors(), torch.no_grad(), torch.random.fork_rng(devices=[]):
        for node in graph.nodes:
            if node.op == "placeholder":
                value = graph.inputs.get(node.name)
                env[node.name] = value.clone() if isinstance(value, torch.Tensor) else value
                continue
            args = torch.fx.node.map_arg(node.args, lambda n: env[n.name])
            kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: env[n.name])
            if node.op == "call_function":
                env[node.name] = node.target(*args, **kwargs)
            elif node.op == "call_method":
                env[node.name] = getattr(args[0], node.target)(*args[1:], **kwargs)
            elif node.op in ("call_module", "get_attr"):
                target = modules.get(node.target) if isinstance(modules, dict) else None
                if target is None:
                    return found
                env[node.name] = target(*args, **kwargs) if node.op == "call_module" else target
            else:
                continue
            fake = graph.fakes[node.name] if node.name in graph.fakes else _torch_shapes.node_fake_value(node)
            for symbol, value in _torch_shapes.values_from_fake(fake, env[node.name]).items():
                if symbol in wanted:
                    found.setdefault(symbol, value)
            if wanted <= found.keys():
                break
    return found
