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
EVENT_NAMES = (
    "str",
    "dynamo_start",
    "compilation_metrics",
    "dynamo_cpp_guards_str",
    "dynamo_output_graph",
    "artifact",
    "dynamo_error",
    "create_symbol",
    "guard_added",
    "dynamo_replay.guards",
    "dynamo_replay.graph_ir",
    "dynamo_replay.sample",
    "dynamo_replay.dropped_guard",
    "dynamo_replay.not_packaged",
    "dynamo_replay.summary",
    "dynamo_replay.error",
)
ODD_METADATA = (
    "null",
    "7",
    '"text"',
    "[1, [2], {}]",
    '{"line": "x", "co_firstlineno": "y", "name": 3, "stack": 5, '
    '"user_stack": {"a": 1}, "guard_count": -1, "fail_type": 4, "shape": 2, "risky": "yes", "graph": [], '
    '"inputs": 5, "outputs": {"a": 1}, "kind": [], "reason": {}}',
    '{"co_firstlineno": 1e300, "guard_count": 1.5, "stack": [{"line": -1e300, "filename": 1e300}], '
    '"user_stack": [{"line": 1e300}], "risky": 1e300, "inputs": [{"bytes": 1e300}]}',
    "not json at all",
)
# Artifacts the report reads by name; their payload (not UTF-8, not JSON) is what is odd.
ODD_ARTIFACTS = [
    ("artifact", json.dumps({"name": name}))
    for name in ("precompile_cache_bypass", "recompile_reasons", "dynamo_graph_break_reason")
]


def _every_report(inspect, store: Path) -> dict[str, str]:
    """Runs every subcommand and show section, text and JSON, for every compile `ls --json`
    lists; asserts none fails or aborts. Returns each command's stdout by its arguments."""
    outputs = {}
    runs = [["info"], ["ls"], ["ls", "--records"], ["ls", "--blobs"], ["verify"]]
    listing = inspect("ls", "--json", str(store))
    assert listing.returncode == 0, listing.stderr
    assert "terminate" not in listing.stderr and "Aborted" not in listing.stderr
    compiles = [row["compile_id"] for row in json.loads(listing.stdout).get("compiles", [])]
    runs += [["show", str(store), cid, *section] for cid in compiles for section in SHOW_SECTIONS]
    for command in runs:
        for json_flag in ([], ["--json"]):
            args = (
                [*command, *json_flag] if command[0] == "show" else [command[0], *json_flag, *command[1:], str(store)]
            )
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

    with pytest.raises(ValueError), dr.capture(store_path):
        torch.compile(step, backend="eager")(torch.ones(3))
    outputs = _every_report(inspect, store_path)
    assert "step" in outputs[f"ls {store_path}"]
    assert not any("unreadable metadata" in text for text in outputs.values())  # PyTorch's events all read
    # float() on a global builtin: PyTorch's precompile drops that guard; the report lists it.
    guards = [text for args, text in outputs.items() if args.endswith(" --guards")]
    assert any("dropped by PyTorch's precompile" in text and "['float']" in text for text in guards)


def test_capture_of_a_fullgraph_compile_that_failed(store_path: Path, inspect) -> None:
    def broken(x: torch.Tensor) -> torch.Tensor:
        torch._dynamo.graph_break()
        return x + 1

    with pytest.raises(torch._dynamo.exc.Unsupported), dr.capture(store_path):
        torch.compile(broken, backend="eager", fullgraph=True)(torch.ones(3))
    outputs = _every_report(inspect, store_path)
    assert "broken" in outputs[f"ls {store_path}"]
    assert not any("unreadable metadata" in text for text in outputs.values())


def _store_of_events(path: Path, events: list[tuple[str, str]], compile_id=(0, 0, 0)) -> None:
    """A store of `events` (name, metadata JSON), each with the same odd payload (not UTF-8, not JSON)."""
    payload = b"\xff\xfe not utf-8 \x80"
    with dr.Store.create(path) as store:
        store.put(dr.Manifest(tool="test", environment={"torch.version": "0.0-test"}))
        key = store.put_blob(payload)
        for name, metadata in events:
            store.put(
                dr.TraceEvent(
                    name=name,
                    compile_id=compile_id,
                    metadata_json=metadata,
                    payload_key=key,
                    payload_size=len(payload),
                    time=0.0,
                )
            )


def test_events_with_unexpected_metadata_types(store_path: Path, inspect) -> None:
    _store_of_events(store_path, [(name, odd) for name in EVENT_NAMES for odd in ODD_METADATA] + ODD_ARTIFACTS)
    assert inspect("verify", str(store_path)).returncode == 0
    outputs = _every_report(inspect, store_path)
    shown = outputs[f"show {store_path} 0/0"]
    for name in (
        "compilation_metrics",
        "dynamo_start",
        "dynamo_replay.dropped_guard",
        "dynamo_replay.not_packaged",
        "dynamo_replay.sample",
        "create_symbol",
        "artifact",
    ):
        assert f"{name} x" in shown.split("(unreadable metadata: ", 1)[1].split(")")[0], name
    assert "(unreadable metadata: " in outputs[f"ls {store_path}"]
    unreadable = json.loads(outputs[f"show {store_path} 0/0 --json"])["unreadable_events"]
    assert unreadable["compilation_metrics"] == len(ODD_METADATA)
    assert "dynamo_cpp_guards_str" not in unreadable  # its metadata is not read: nothing to be odd


@pytest.mark.parametrize(
    "metadata", ODD_METADATA, ids=["null", "number", "string", "array", "odd-fields", "huge-numbers", "not-json"]
)
def test_one_unreadable_event_leaves_the_rest_of_the_report(store_path: Path, inspect, metadata: str) -> None:
    _store_of_events(
        store_path,
        [
            (
                "compilation_metrics",
                json.dumps({"co_name": "forward", "co_filename": "model.py", "co_firstlineno": 12, "guard_count": 3}),
            ),
            ("dynamo_replay.dropped_guard", metadata),
            ("dynamo_replay.not_packaged", json.dumps({"frame": "forward (model.py:12)", "reason": "a property"})),
        ],
    )
    shown = inspect("show", str(store_path), "0/0")
    assert shown.returncode == 0, shown.stderr
    assert "compile 0/0: forward at model.py:12" in shown.stdout and "guards:  3" in shown.stdout
    assert "saved:   no, replay traces it with Dynamo: a property" in shown.stdout
    assert "(unreadable metadata: dynamo_replay.dropped_guard)" in shown.stdout


def test_dropped_guards_and_frames_not_saved_are_shown(tmp_path: Path, store_path: Path, inspect) -> None:
    dropped = {
        "kind": "CLOSURE_MATCH",
        "source": "G['act']",
        "frame": "forward (model.py:12)",
        "value": "function model.relu code 1a2b",
        "risky": True,
        "line": "model.py:14: return act(x)",
    }
    pinned = {
        "kind": "ID_MATCH",
        "source": "G['torch'].nn.functional",
        "frame": "forward (model.py:12)",
        "value": "module torch.nn.functional",
        "risky": False,
        "line": "model.py:15: F.gelu(x)",
    }
    _store_of_events(
        store_path,
        [
            (
                "compilation_metrics",
                json.dumps({"co_name": "forward", "co_filename": "model.py", "co_firstlineno": 12}),
            ),
            ("dynamo_replay.dropped_guard", json.dumps(dropped)),
            ("dynamo_replay.dropped_guard", json.dumps(pinned)),
            (
                "dynamo_replay.not_packaged",
                json.dumps({"frame": "forward (model.py:12)", "reason": "loss_function is a property\nof the model"}),
            ),
        ],
    )
    listing = inspect("ls", str(store_path)).stdout
    assert "not saved for replay without Dynamo: 0/0 forward: loss_function is a property\n" in listing
    guards = inspect("show", str(store_path), "0/0", "--guards").stdout
    assert "dropped by PyTorch's precompile (2, 1 re-checked at replay):" in guards
    lines = guards.splitlines()
    risky_line = next(line for line in lines if "G['act']" in line)
    assert risky_line.split()[0] == "CLOSURE_MATCH"
    assert "function model.relu code 1a2b [risky]" in risky_line and risky_line.endswith("model.py:14: return act(x)")
    pinned_line = next(line for line in lines if "G['torch'].nn.functional" in line)
    assert pinned_line.split()[0] == "ID_MATCH"
    assert "module torch.nn.functional [pinned by the torch build]" in pinned_line
    assert "saved:   no, replay traces it with Dynamo: loss_function is a property\n" in guards
    assert "unreadable metadata" not in guards
    shown = json.loads(inspect("show", "--json", str(store_path), "0/0", "--guards").stdout)
    assert shown["not_saved"] == "loss_function is a property\nof the model"
    assert shown["unreadable_events"] == {}
    assert shown["dropped_guards"] == [
        {k: g[k] for k in ("kind", "source", "value", "line", "risky")} for g in (dropped, pinned)
    ]
    row = json.loads(inspect("ls", "--json", str(store_path)).stdout)["compiles"][0]
    assert (row["not_saved"], row["dropped_guards"]) == ("loss_function is a property\nof the model", 2)


def test_pytorchs_own_precompile_bypass_reads_as_not_saved(store_path: Path, inspect) -> None:
    with dr.Store.create(store_path) as store:
        store.put(dr.Manifest(tool="test", environment={}))
        key = store.put_blob(json.dumps({"_reason": "a guard on a local class"}).encode())
        for name, metadata, payload in (
            ("compilation_metrics", {"co_name": "step", "co_filename": "job.py", "co_firstlineno": 3}, ""),
            ("artifact", {"name": "precompile_cache_bypass", "encoding": "json"}, key),
        ):
            store.put(
                dr.TraceEvent(
                    name=name,
                    compile_id=(0, 0, 0),
                    metadata_json=json.dumps(metadata),
                    payload_key=payload,
                    payload_size=0,
                    time=0.0,
                )
            )
    listing = inspect("ls", str(store_path))
    assert "not saved for replay without Dynamo: 0/0 step: a guard on a local class" in listing.stdout
    assert (
        json.loads(inspect("show", "--json", str(store_path), "0/0").stdout)["not_saved"] == "a guard on a local class"
    )
