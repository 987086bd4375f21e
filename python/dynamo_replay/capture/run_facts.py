"""What compiled code did when it ran under capture: the real values of its unbacked symbols, and
a failure of the compiled code itself (a deferred runtime assert that did not hold on real data,
or any other exception), with the assert's expression, its symbols' values and the user line
that demanded it. Formats: docs/capture-schema.md, "Capture's own events".

Costs nothing on a call that succeeds past the first: values are read from the first call's
outputs (only for graphs that make unbacked symbols), and from the frames an exception leaves.
A compile that fails on a data-dependent question gets its symbols' values by running the graph
Dynamo had traced so far on the frame's real inputs (capture/partial_graph_run.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dynamo_replay import schema
from dynamo_replay._torch import shapes as _torch_shapes
from dynamo_replay.capture.partial_graph_run import partial_graph_values

PutEvent = Callable[[str, tuple[int, int, int], Any, Any], None]


def _unbacked(symbol: str) -> bool:
    return symbol.startswith(("u", "zuf"))


class RunFacts:
    def __init__(
        self, put_event: PutEvent, shape_envs: dict[tuple[int, int, int], Any], write_now: Callable[[], None]
    ) -> None:
        self.put_event = put_event
        self.write_now = write_now  # see ShapeEvents.write_now
        self.shape_envs = shape_envs  # compile id -> ShapeEnv (ShapeEvents keeps them)
        self.assert_frames: dict[tuple[tuple[int, int, int], str], Any] = {}  # (compile id, expr) -> user line
        self.output_fakes: dict[tuple[int, int, int], list[Any]] = {}  # compile id -> Dynamo graph outputs
        self.partial_graphs: dict[tuple[int, int, int], Any] = {}  # compile id -> _torch_shapes.PartialGraph

    def unbacked_symbol_made(self, compile_id: tuple[int, int, int], phase: str) -> None:
        """Keeps the graph Dynamo is tracing and its real inputs, should the compile fail on the
        new symbol (PyTorch forgets them when the compile ends). A copy of the graph's nodes,
        references to the inputs; they go when the compile ends."""
        if phase == "dynamo":
            kept = _torch_shapes.live_partial_graph()
            if kept is not None:
                self.partial_graphs[compile_id] = kept

    def graph_outputs(self, compile_id: tuple[int, int, int], module: Any) -> None:
        """Keeps the fake outputs of a Dynamo graph that makes unbacked symbols, to read their
        values from the first call's real outputs."""
        for node in module.graph.nodes:
            fake = _torch_shapes.node_fake_value(node)
            if node.op != "output" and any(_unbacked(s) for s in _torch_shapes.free_symbols_of(fake)):
                break
        else:
            return
        output = next((n for n in module.graph.nodes if n.op == "output"), None)
        if output is not None and output.args:
            values = output.args[0] if isinstance(output.args[0], (list, tuple)) else [output.args[0]]
            self.output_fakes[compile_id] = [
                _torch_shapes.node_fake_value(v) if hasattr(v, "meta") else v for v in values
            ]

    def outputs_seen(self, compile_id: tuple[int, int, int], graph: str, outputs: list[Any]) -> None:
        fakes = self.output_fakes.get(compile_id)
        if fakes is None or len(fakes) != len(outputs):
            return
        values = {s: v for s, v in _torch_shapes.values_from_fake(list(fakes), list(outputs)).items() if _unbacked(s)}
        if values:
            self.put_event(
                schema.EVENT_SYMBOL_VALUES,
                compile_id,
                {"graph": graph, "call": 1, "from": "outputs", "values": values},
                None,
            )

    def call_failed(self, compile_id: tuple[int, int, int], graph: str, call: int, error: BaseException) -> None:
        """Records a compiled graph's call that raised: once per exception, as it propagates."""
        # Nested compiled graphs see the same exception go by: the innermost call records it. The mark
        # is on the exception itself (an id could be reused once a recorded one is freed).
        if getattr(error, "_dynamo_replay_recorded", False):
            return
        try:
            error._dynamo_replay_recorded = True  # type: ignore[attr-defined]
        except AttributeError:  # an exception type with __slots__: recorded each time it passes
            pass
        values = _torch_shapes.symbol_values_at_failure(error.__traceback__)
        failing = []
        for ra in _torch_shapes.runtime_asserts(self.shape_envs.get(compile_id)):
            if _torch_shapes.false_under(ra.expr, values):
                expr = str(ra.expr)
                failing.append(
                    {
                        "expr": expr,
                        "symbols": _torch_shapes.free_symbols(ra.expr),
                        "message": str(getattr(ra, "msg", "") or ""),
                        "user_frame": self.assert_frames.get((compile_id, expr)),
                    }
                )
        message = str(error).strip().splitlines()
        self.put_event(
            schema.EVENT_RUNTIME_FAILURE,
            compile_id,
            {
                "graph": graph,
                "call": call,
                "type": type(error).__qualname__,
                "message": message[0] if message else "",
                "values": values,
                "asserts": failing,
            },
            None,
        )
        self.write_now()  # the job may die of it on the spot

    def compile_failed(self, compile_id: tuple[int, int, int], error: BaseException, facts: dict[str, Any]) -> None:
        """The values of the unbacked symbols a failed compile could not decide, on its real inputs."""
        wanted = {s for s in facts.get("symbols", []) if _unbacked(s)}
        if not wanted or facts.get("kind") not in ("data_dependent", "data_dependent_int"):
            return
        values = partial_graph_values(error, wanted, self.partial_graphs.pop(compile_id, None))
        if values:
            self.put_event(
                schema.EVENT_SYMBOL_VALUES,
                compile_id,
                {"graph": "dynamo_output_graph", "call": 0, "from": "partial_graph", "values": values},
                None,
            )
