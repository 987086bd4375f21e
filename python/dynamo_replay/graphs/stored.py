"""A compile's graph IRs and samples, read from a store (no PyTorch needed to read them)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from dynamo_replay import schema
from dynamo_replay._core import Store, TraceEvent
from dynamo_replay.errors import GraphError

# `graph=` names -> the structured-trace events they may be stored as, first match wins.
GRAPH_EVENTS = {
    "forward": ("aot_forward_graph", "aot_inference_graph"),
    "inference": ("aot_inference_graph",),
    "backward": ("aot_backward_graph",),
    "dynamo": ("dynamo_output_graph",),
}


@dataclass
class StoredCompile:
    compile_id: str
    irs: dict[str, dict[str, Any]] = field(default_factory=dict)  # event name -> IR
    samples: dict[str, dict[str, Any]] = field(default_factory=dict)  # "forward"/"backward" -> sample event
    symbols: list[dict[str, Any]] = field(default_factory=list)
    blobs: dict[str, bytes] = field(default_factory=dict)  # blob key -> bytes, for the tensors asked for

    def ir(self, graph: str) -> tuple[str, dict[str, Any]]:
        events = GRAPH_EVENTS.get(graph, (graph,))
        for event in events:
            if event in self.irs:
                return event, self.irs[event]
        have = ", ".join(sorted(self.irs)) or "none"
        raise GraphError(f"compile {self.compile_id} has no {graph} graph (it has: {have})")


def compile_text(compile_id: tuple[int, int, int]) -> str:
    """(0, 1, 2) -> "0/1_2", as PyTorch and replay-inspect print a compile id."""
    frame, compile_, attempt = compile_id
    return f"{frame}/{compile_}" + (f"_{attempt}" if attempt else "")


def stored_graphs(path: str | os.PathLike[str]) -> list[tuple[str, str]]:
    """(compile id, graph event) of every graph the store holds, in compile order."""
    with Store.open(path) as store:
        found = {
            (e.compile_id, json.loads(e.metadata_json)["graph"])
            for e in store.records(TraceEvent)
            if e.name == schema.EVENT_GRAPH_IR
        }
    return [(compile_text(compile_id), event) for compile_id, event in sorted(found)]


def compile_ids(path: str | os.PathLike[str]) -> list[str]:
    return list(dict.fromkeys(compile_id for compile_id, _ in stored_graphs(path)))


def read_compile(path: str | os.PathLike[str], compile_id: str) -> StoredCompile:
    """Everything the graph rebuild needs from one compile: IRs, samples (with their tensor
    bytes) and the symbol table."""
    stored = StoredCompile(compile_id)
    with Store.open(path) as store:
        for event in store.records(TraceEvent):
            if compile_text(event.compile_id) != compile_id:
                continue
            if event.name == schema.EVENT_GRAPH_IR:
                stored.irs[json.loads(event.metadata_json)["graph"]] = json.loads(store.get_blob(event.payload_key))
            elif event.name == schema.EVENT_SAMPLE:
                sample = json.loads(event.metadata_json)
                stored.samples.setdefault(sample.get("pass", "forward"), sample)
            elif event.name == schema.EVENT_SYMBOLS and event.payload_key:
                stored.symbols = json.loads(store.get_blob(event.payload_key))
        if not stored.irs:
            known = ", ".join(compile_ids(path)) or "none"
            raise GraphError(f"no graphs for compile {compile_id} (compiles with graphs: {known})")
        keys = {
            entry["blob"]
            for ir in stored.irs.values()
            for entry in (ir.get("constants") or {}).values()
            if "blob" in entry
        }
        keys |= {
            entry["blob"]
            for sample in stored.samples.values()
            for entry in sample.get("inputs", []) + sample.get("outputs", []) + [sample.get("rng_state")]
            if isinstance(entry, dict) and "blob" in entry
        }
        stored.blobs = {key: store.get_blob(key) for key in keys}
    return stored
