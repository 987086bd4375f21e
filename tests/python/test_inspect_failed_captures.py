"""replay-inspect on stores that `verify` accepts but that no report foresaw: captures of jobs
that failed, and events whose metadata has other types than capture writes. Every subcommand
must answer (exit 0) and never abort; an event it does not understand is shown as such."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import dynamo_replay as dr

torch = pytest.importorskip("torch")

SHOW_SECTIONS = ([], ["--guards"], ["--code"], ["--graph"], ["--shapes"])
EVENT_NAMES = ("str", "dynamo_start", "compilation_metrics", "dynamo_cpp_guards_str", "dynamo_output_graph", "artifact",
               "dynamo_error", "create_symbol", "guard_added", "dynamo_replay.guards", "dynamo_replay.graph_ir",
               "dynamo_replay.sample", "dynamo_replay.dropped_guard", "dynamo_replay.not_packaged",
               "dynamo_replay.summary", "dynamo_replay.error")
ODD_METADATA = ("null", "7", '"text"', "[1, [2], {}]", '{"line": "x", "co_firstlineno": "y", "name": 3, "stack": 5, '
                '"user_stack": {"a": 1}, "guard_count": -1, "fail_type": 4, "shape": 2, "risky": "yes", "graph": []}',
                "not json at all")


def _every_report(inspect, store: Path) -> dict[str, str]:
    """Runs every subcommand and show section, text and JSON; asserts none fails or aborts.
    Returns each command's stdout."""
    outputs = {}
    runs = [["info"], ["ls"], ["ls", "--records"], ["ls", "--blobs"], ["verify"]]
    listing = inspect("ls", "--json", str(store))
    assert listing.returncode == 0, listing.stderr
    compiles = [row["compile_id"] for row in json.loads(listing.stdout).get("compiles", [])]
    runs += [["show", str(store), cid, *section] for cid in compiles for section in SHOW_SECTIONS]
    for command in runs:
        for json_flag in ([], ["--json"]):
            args = [*command, *json_flag] if command[0] == "show" else [command[0], *json_flag, *command[1:], str(store)]
            result = inspect(*args)
            assert result.returncode == 0, (args, result.stderr)
            assert "terminate" not in result.stderr and "Aborted" not in result.stderr
            if json_flag:
                json.loads(result.stdout)
            outputs[" ".join(args)] = result.stdout
    return outputs


def test_capture_of_a_job_that_raised_inside_a_compiled_call(store_path: Path, inspect) -> None:
    def step(x: torch.Tensor) -> torch.Tensor:
        y = x.sin()
        if float(y.sum()) > -1e9:  # a graph break, then the error in the resumed code
            raise ValueError("the job failed here")
        return y

    with pytest.raises(ValueError), dr.capture(store_path, precompile=False):
        torch.compile(step, backend="eager")(torch.ones(3))
    outputs = _every_report(inspect, store_path)
    assert "step" in outputs[f"ls {store_path}"]


def test_capture_of_a_fullgraph_compile_that_failed(store_path: Path, inspect) -> None:
    def broken(x: torch.Tensor) -> torch.Tensor:
        torch._dynamo.graph_break()
        return x + 1

    with pytest.raises(torch._dynamo.exc.Unsupported), dr.capture(store_path):
        torch.compile(broken, backend="eager", fullgraph=True)(torch.ones(3))
    outputs = _every_report(inspect, store_path)
    assert "broken" in outputs[f"ls {store_path}"]


def _store_of_events(path: Path, events: list[tuple[str, str]]) -> None:
    with dr.Store.create(path) as store:
        store.put(dr.Manifest(tool="test", environment={"torch.version": "0.0-test"}))
        key = store.put_blob(b"\xff\xfe not utf-8 \x80")
        for name, metadata in events:
            store.put(dr.TraceEvent(name=name, compile_id=(0, 0, 0), metadata_json=metadata, payload_key=key,
                                    payload_size=13, time=0.0))


def test_events_with_unexpected_metadata_types(store_path: Path, inspect) -> None:
    _store_of_events(store_path, [(name, odd) for name in EVENT_NAMES for odd in ODD_METADATA])
    assert inspect("verify", str(store_path)).returncode == 0
    _every_report(inspect, store_path)


def test_dropped_guards_and_frames_not_saved_are_shown(store_path: Path, inspect) -> None:
    dropped = {"kind": "CLOSURE_MATCH", "source": "G['act']", "frame": "forward (model.py:12)",
               "value": "function model.relu code 1a2b", "risky": True, "line": "model.py:14: return act(x)"}
    _store_of_events(store_path, [
        ("compilation_metrics", json.dumps({"co_name": "forward", "co_filename": "model.py", "co_firstlineno": 12})),
        ("dynamo_replay.dropped_guard", json.dumps(dropped)),
        ("dynamo_replay.not_packaged", json.dumps({"frame": "forward (model.py:12)", "reason": "loss_function is a property"})),
    ])
    listing = inspect("ls", str(store_path)).stdout
    assert "not saved for replay without Dynamo: 0/0 forward: loss_function is a property" in listing
    guards = inspect("show", str(store_path), "0/0", "--guards").stdout
    assert "CLOSURE_MATCH" in guards and "G['act']" in guards and "function model.relu code 1a2b [re-checked]" in guards
    assert "model.py:14: return act(x)" in guards
    shown = json.loads(inspect("show", "--json", str(store_path), "0/0", "--guards").stdout)
    assert shown["not_saved"] == "loss_function is a property"
    assert shown["dropped_guards"] == [{k: dropped[k] for k in ("kind", "source", "value", "line", "risky")}]
