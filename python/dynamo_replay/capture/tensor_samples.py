"""How often each compiled graph runs, and the real inputs and outputs of its first call, for
numeric checks later.

Dynamo installs each compiled graph as a global of the user's module (`__compiled_fn_*`) and
the transformed bytecode calls it by name. When Dynamo hands capture the transformed code (the
bytecode hook), capture finds that global through the compile that is running (the hook's
caller holds its OutputGraph) and puts a recorder in its place until capture ends. The
recorder counts calls (about a microsecond each); on the first call, when samples are on, it
copies the inputs, runs the graph, copies the outputs and stores them.

Tensors are stored torch-free: raw contiguous bytes (little-endian) as a blob, with dtype and
shape in the event's JSON; anything over the size cap is named but not stored.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dynamo_replay import _torch

DEFAULT_LIMIT_BYTES = 64 << 20  # per graph call, inputs and outputs together


def compiled_graph_globals(depth: int = 2) -> tuple[dict[str, Any], list[str]] | None:
    """(module globals, names of compiled graphs) of the compile that called the bytecode hook,
    or None when PyTorch's frames are not laid out as expected."""
    return _torch.settings.compiled_graph_globals(depth + 1)


def stored_bytes(tensor: Any, budget: list[int], put_blob: Callable[[bytes], str], what: str) -> dict[str, Any]:
    """{"blob", "bytes"} of a tensor's data put in the store, or {"skipped": why} when it is over
    what is left of `budget` (bytes, shared by one call's values and taken from here), or when
    its data is not a plain strided buffer of its dtype."""
    unreadable = _torch.unreadable_tensor(tensor)
    if unreadable:
        return {"skipped": unreadable}
    size = tensor.numel() * tensor.element_size()
    if size > budget[0]:
        return {"skipped": f"{size} bytes, over the {what} size cap"}
    budget[0] -= size
    raw = _torch.tensor_bytes(tensor)
    return {"blob": put_blob(raw), "bytes": len(raw)}


def _description(tensor: Any) -> dict[str, Any]:
    """What random stand-ins for a tensor that was not stored should look like: an integer
    tensor's smallest and largest value (embedding ids, class labels stay in range), a float
    tensor's mean and standard deviation (a norm's weight stays near 1, a linear's small)."""
    import torch

    if tensor.dtype == torch.bool or tensor.dtype.is_complex or not tensor.numel() or _torch.unreadable_tensor(tensor):
        return {}
    with torch.no_grad():
        if tensor.dtype.is_floating_point:
            values = tensor.detach().float()
            moments = {"mean": float(values.mean()), "std": float(values.std()) if tensor.numel() > 1 else 0.0}
            return moments if all(math.isfinite(v) for v in moments.values()) else {}
        return {"min": int(tensor.min()), "max": int(tensor.max())}


def describe_value(
    value: Any, budget: list[int], put_blob: Callable[[bytes], str], whole: bool = False
) -> dict[str, Any]:
    """One input or output: a tensor's dtype, shape and data blob (or, over what is left of the
    budget, its strides and _description); a scalar's value. `whole`: stored whatever
    its size, outside the budget (parameters, with capture's `parameters=True`)."""
    import torch

    if isinstance(value, torch.Tensor):
        entry: dict[str, Any] = {
            "dtype": str(value.dtype).removeprefix("torch."),
            "shape": list(value.shape),
            "device": str(value.device),
        }
        if isinstance(value, torch.nn.Parameter):
            entry["parameter"] = True
        stored = stored_bytes(value, [1 << 62] if whole else budget, put_blob, "sample")
        if "skipped" in stored:
            stored = stored | {"stride": list(value.stride())} | _description(value)
        return entry | stored
    if isinstance(value, (bool, int, float)) or value is None:
        return {"value": value}
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {"value": str(value)}
    return {"unsupported": type(value).__qualname__}


class CallRecorder:
    """Stands in for one compiled graph while capture runs: counts its calls and, with a
    sample limit, records the first.

    `record(inputs, outputs, backward=False)` gets the described values; inputs are read before
    the call, since a graph may update them in place (batch-norm statistics, optimizer state).
    Where the outputs need a gradient, the first backward through the compiled graph is sampled
    too, by a hook on its autograd node that only reads: the gradients flowing in (the backward
    graph's tangents) and the gradients it returns (its outputs)."""

    def __init__(
        self,
        scope: dict[str, Any],
        name: str,
        limit: int,
        put_blob: Callable[[bytes], str],
        record: Callable[..., None],
        parameters: bool = False,
        failed: Callable[[BaseException, int], None] | None = None,
        outputs: Callable[[list], None] | None = None,
    ) -> None:
        import torch

        self.scope, self.name, self.graph = scope, name, scope[name]
        self.limit, self.put_blob, self.record = limit, put_blob, record
        self.parameters = parameters  # store parameters whole, outside the cap
        self.failed = failed  # told of a call that raised (the exception goes on)
        self.outputs = outputs  # told of the first call's outputs
        self.calls = 0
        # What goes into the scope: the transformed code calls it from inside the compiled
        # region, so it must be a function Dynamo does not trace.
        self.stand_in = torch.compiler.disable(self._call)

    def install(self) -> None:
        self.scope[self.name] = self.stand_in

    def _call(self, *args: Any) -> Any:
        self.calls += 1
        try:
            if self.calls == 1:
                return self._first_call(*args) if self.limit else self._told(self.graph(*args))
            return self.graph(*args)
        except BaseException as error:  # compiled code failed on real data: recorded, then raised as is
            if self.failed is not None:
                self.failed(error, self.calls)
            raise

    def _told(self, result: Any) -> Any:
        if self.outputs is not None:
            self.outputs(list(result) if isinstance(result, (list, tuple)) else [result])
        return result

    def _first_call(self, *args: Any) -> Any:
        import torch

        budget = [self.limit]
        try:  # the job's own inputs first: parameters are what a cap should leave out
            order = sorted(range(len(args)), key=lambda i: isinstance(args[i], torch.nn.Parameter))
            described = {
                i: describe_value(
                    args[i], budget, self.put_blob, self.parameters and isinstance(args[i], torch.nn.Parameter)
                )
                for i in order
            }
            inputs = [described[i] for i in range(len(args))]
        except Exception:  # a sample is never worth failing the job for
            inputs = None
        try:  # random operators (dropout) draw from it: runners start from the same state
            rng_state = describe_value(torch.get_rng_state(), [1 << 20], self.put_blob)
        except Exception:
            rng_state = None
        result = self._told(self.graph(*args))
        if inputs is not None:
            try:
                outputs = result if isinstance(result, (list, tuple)) else [result]
                self.record(inputs, [describe_value(o, budget, self.put_blob) for o in outputs], rng_state=rng_state)
                self._watch_backward(outputs)
            except Exception:
                pass
        return result

    def _watch_backward(self, outputs: Any) -> None:
        import torch

        nodes = {
            id(o.grad_fn): o.grad_fn
            for o in outputs
            if isinstance(o, torch.Tensor) and o.grad_fn is not None and "CompiledFunction" in o.grad_fn.name()
        }
        if len(nodes) != 1:  # no backward, or one this graph does not own alone
            return
        (node,) = nodes.values()
        handles = []

        def hook(grad_inputs: tuple, grad_outputs: tuple) -> None:
            for handle in handles:
                handle.remove()
            try:
                budget = [self.limit]
                tangents = [describe_value(g, budget, self.put_blob) for g in grad_outputs]
                self.record(tangents, [describe_value(g, budget, self.put_blob) for g in grad_inputs], backward=True)
            except Exception:  # a sample is never worth failing the job for
                pass

        # Autograd may call the hook while Dynamo is on (a backward() inside the compiled
        # function runs at a graph break, where Dynamo compiles each Python frame it enters):
        # Dynamo must not compile the recorder.
        handles.append(node.register_hook(torch.compiler.disable(hook)))

    def restore(self) -> None:
        if self.scope.get(self.name) is self.stand_in:
            self.scope[self.name] = self.graph
