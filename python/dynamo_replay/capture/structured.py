"""The structured events capture derives from what PyTorch logs: each graph's IR (read from the
graph module while PyTorch logs it, else parsed from the text), each aten graph decomposed to
Core ATen, each compile's guard list and symbol table. Formats: docs/capture-schema.md."""

from __future__ import annotations

import gc
import json
from typing import TYPE_CHECKING, Any

from dynamo_replay import _torch, schema
from dynamo_replay.capture import core_aten, graph_feeds, graph_ir, graph_text, guards, symbols

if TYPE_CHECKING:
    from dynamo_replay.capture.recording import Recording

CompileId = tuple[int, int, int]


class StructuredEvents:
    def __init__(self, session: Recording, decompose: bool) -> None:
        self._session = session
        self.decompose = decompose  # store each aten graph decomposed to Core ATen as well
        self.ir_texts: list[tuple[CompileId, str, str]] = []  # compile id, event, text
        self.irs: dict[tuple[CompileId, str], dict[str, Any]] = {}  # (compile id, event) -> IR
        self.guard_trees: list[tuple[CompileId, str]] = []  # compile id, text
        self.snapshots: list[tuple[CompileId, str, Any]] = []  # compile id, event, graph_snapshot

    def logged(self, name: str, compile_id: CompileId, payload: Any) -> None:
        """A structured-trace record: a graph is read now, a guard tree kept for the end."""
        if name in graph_ir.IR_GRAPHS and isinstance(payload, str):
            self.graph_logged(compile_id, name, payload)
        elif name == "dynamo_cpp_guards_str" and isinstance(payload, str):
            self.guard_trees.append((compile_id, payload))

    def graph_logged(self, compile_id: CompileId, event: str, text: str) -> None:
        """Reads the graph PyTorch is logging while its module is at hand (see graph_ir)."""
        found = graph_ir.graph_being_logged(event)
        if found is None:
            self.ir_texts.append((compile_id, event, text))
            return
        try:
            self.read_graph(compile_id, event, *found)
        except Exception:  # the text still says what the graph was
            self._session.note_failure(f"graph IR of {event}")
            self.ir_texts.append((compile_id, event, text))

    def read_graph(self, compile_id: CompileId, event: str, module: Any, scope: dict[str, Any]) -> None:
        session = self._session
        forward = self.irs.get((compile_id, "aot_forward_graph"))
        ir = graph_ir.graph_ir(
            event,
            module,
            session.store.put_blob,
            session.sample_limit,
            graph_ir.scope_by_seq_nr(forward) if forward else None,
        )
        if event == "dynamo_output_graph":
            graph_feeds.link_dynamo(ir)
            session.shapes.keep_shape_env(compile_id, _torch.tracing_shape_env())
            session.shapes.graph_inputs(compile_id, module)
            session.shapes.run_facts.graph_outputs(compile_id, module)
        elif event == "aot_backward_graph":
            graph_feeds.link_backward(ir, forward, scope.get("fw_metadata"))
        else:
            graph_feeds.link_forward(ir, self.irs.get((compile_id, "dynamo_output_graph")), scope.get("fw_metadata"))
        self.irs[(compile_id, event)] = ir
        if self.decompose and event != "dynamo_output_graph":
            try:
                self.snapshots.append((compile_id, event, _torch.graph_snapshot(module)))
            except Exception:  # the graph itself is kept; only its decomposition is lost
                session.note_failure(f"snapshot of {event}")

    def save(self) -> None:
        """Adds the structured forms of what the trace gave as text: each graph's IR and
        each compile's guard list. Parsed after the job, so as not to slow its compiles.
        The parse makes many small objects in a process that holds millions (torch, sympy,
        Dynamo's caches): with the collector on, full collections cost ten times the parse."""
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._save()
        finally:
            if enabled:
                gc.enable()

    def _save(self) -> None:
        session = self._session
        self.save_graph_irs()
        for compile_id, text in self.guard_trees:
            try:
                parsed = guards.parse_guard_tree(text)
                session.put_event(schema.EVENT_GUARDS, compile_id, {"count": len(parsed)}, json.dumps(parsed))
            except Exception:
                session.note_failure("guard list")

    def save_graph_irs(self) -> None:
        session = self._session
        irs = list(self.irs.items())
        for compile_id, name, text in self.ir_texts:
            try:
                irs.append(((compile_id, name), graph_text.graph_ir(text)))
            except Exception:
                session.note_failure(f"graph IR of {name}")
        for (compile_id, name), ir in irs:
            session.put_event(
                schema.EVENT_GRAPH_IR,
                compile_id,
                {"graph": name, "nodes": len(ir["nodes"]), "format": ir["format"]},
                json.dumps(ir),
            )
        self.save_core_aten_irs()
        for compile_id, shape_env in session.shapes.shape_envs.items():
            try:
                table = symbols.symbol_table(shape_env)
                session.put_event(schema.EVENT_SYMBOLS, compile_id, {"count": len(table)}, json.dumps(table))
            except Exception:
                session.note_failure("symbol table")

    def save_core_aten_irs(self) -> None:
        """Each aten graph decomposed to Core ATen (capture/core_aten.py); where PyTorch cannot
        retrace one, the event says why and the original graph is all there is."""
        session = self._session
        snapshots, self.snapshots = self.snapshots, []
        for compile_id, event, snapshot in snapshots:
            original = self.irs[(compile_id, event)]
            forward = self.irs.get((compile_id, "aot_forward_graph"))
            try:
                ir = core_aten.core_aten_ir(
                    snapshot,
                    original,
                    session.store.put_blob,
                    session.sample_limit,
                    graph_ir.scope_by_seq_nr(forward) if forward else None,
                )
            except Exception as e:  # noqa: BLE001 - any failure of the retrace only loses this graph's decomposition
                session.put_event(
                    schema.EVENT_CORE_ATEN_GRAPH_IR,
                    compile_id,
                    {"graph": event, "error": f"{type(e).__name__}: {e}"[:400]},
                    None,
                )
                continue
            session.put_event(
                schema.EVENT_CORE_ATEN_GRAPH_IR,
                compile_id,
                {"graph": event, "nodes": len(ir["nodes"]), "format": ir["format"]},
                json.dumps(ir),
            )
