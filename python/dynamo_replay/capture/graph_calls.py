"""The calls of each compiled graph while capture runs: a recorder stands in for each graph a
compile installed (tensor_samples.CallRecorder), counts its calls, samples the first and tells
run_facts what the compiled code did; one hits event per compile at the end."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dynamo_replay import schema
from dynamo_replay.capture import tensor_samples

if TYPE_CHECKING:
    from dynamo_replay.capture.recording import Recording

CompileId = tuple[int, int, int]


class GraphCalls:
    def __init__(self, session: Recording) -> None:
        self._session = session
        self.recorders: list[tuple[CompileId, tensor_samples.CallRecorder]] = []  # compile id, recorder

    def record(self, compile_id: CompileId) -> None:
        """Counts the calls of each graph this compile installed, and samples the first."""
        session = self._session
        found = tensor_samples.compiled_graph_globals(depth=3)  # from the bytecode hook (Session.bytecode_hook)
        if found is None:
            session.note_failure("call counts and samples: could not find the compiled graphs")
            return
        scope, names = found
        taken = {id(r.stand_in) for _, r in self.recorders}
        for name in names:
            if id(scope.get(name)) in taken:
                continue

            def record(
                inputs: list, outputs: list, backward: bool = False, rng_state: Any = None, name: str = name
            ) -> None:
                sample = {
                    "graph": name,
                    "inputs": inputs,
                    "outputs": outputs,
                    "pass": "backward" if backward else "forward",
                }
                if rng_state is not None:
                    sample["rng_state"] = rng_state
                session.put_event(schema.EVENT_SAMPLE, compile_id, sample, None)

            def failed(error: BaseException, call: int, name: str = name) -> None:
                try:
                    session.shapes.run_facts.call_failed(compile_id, name, call, error)
                except Exception:  # the job's own exception goes on as it is
                    session.note_failure("run-time failure")

            def outputs(values: list, name: str = name) -> None:
                try:
                    session.shapes.run_facts.outputs_seen(compile_id, name, values)
                except Exception:
                    session.note_failure("symbol values")

            recorder = tensor_samples.CallRecorder(
                scope, name, session.sample_limit, session.store.put_blob, record, session.parameters, failed, outputs
            )
            recorder.install()
            self.recorders.append((compile_id, recorder))

    def restore(self) -> None:
        """Puts each compiled graph back in place of its recorder."""
        for _, recorder in self.recorders:
            recorder.restore()

    def save(self) -> None:
        """One hits event per compile: how many times its code ran (its graphs' most-called)."""
        calls: dict[CompileId, int] = {}
        for compile_id, recorder in self.recorders:
            calls[compile_id] = max(calls.get(compile_id, 0), recorder.calls)
        for compile_id, count in sorted(calls.items()):
            self._session.put_event(schema.EVENT_HITS, compile_id, {"calls": count}, None)
