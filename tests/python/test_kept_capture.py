"""The kept captures (tests/data/capture-1.N/every-record.dynrep, see make_data.py): stores
written by each capture-schema version, the newest with every record kind and every event
capture writes. Whatever reads stores today must keep reading them: inspect, the graph rebuild
and the C++ runner."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import dynamo_replay as dr
from dynamo_replay import schema
from dynamo_replay.graphs import load_graph
from dynamo_replay.graphs.stored import compile_text, stored_graphs
from dynamo_replay.tools import runner_executable

# How far a stored float32 output may be from a rerun on another CPU (see the tests below).
FLOAT32_NOISE = 1e-6
GRAPHS = {
    "dynamo_output_graph": "dynamo",
    "aot_forward_graph": "forward",
    "aot_backward_graph": "backward",
    "aot_inference_graph": "inference",
}


@pytest.fixture
def kept(data_dir: Path) -> Path:
    return data_dir / "capture-1.5" / "every-record.dynrep"


@pytest.mark.parametrize("version", ["1.1", "1.2"])
def test_the_older_schema_still_reads(data_dir: Path, inspect, version: str) -> None:
    older = data_dir / f"capture-{version}" / "every-record.dynrep"
    listing = json.loads(inspect("ls", "--json", str(older)).stdout)
    assert [c["compile_id"] for c in listing["compiles"]][:2] == ["0/0", "0/1"]
    assert inspect("show", str(older), "0/1", "--shapes").returncode == 0
    assert inspect("why", str(older)).returncode == 0


def test_it_holds_every_record_kind_and_every_event(kept: Path, inspect) -> None:
    assert inspect("verify", str(kept)).returncode == 0
    with dr.Store.open(kept) as s:
        kinds = {type(r).__name__ for r in s.records()}
        events = {e.name for e in s.records(dr.TraceEvent)}
    assert kinds == {"Manifest", "Artifact", "TraceEvent", "CodeObject"}
    written = {value for name, value in vars(schema).items() if name.startswith("EVENT_")}
    written.discard(schema.EVENT_GENERATION)  # an update writes it, not capture (test_store_lifecycle.py)
    assert written <= events, f"events capture writes that the kept store lacks: {written - events}"


def test_inspect_reads_it(kept: Path, inspect) -> None:
    listing = json.loads(inspect("ls", "--json", str(kept)).stdout)
    assert [c["compile_id"] for c in listing["compiles"]][:2] == ["0/0", "0/1"]
    text = inspect("ls", str(kept)).stdout
    assert "generated is generated code (<string>" in text  # the frame precompile could not save
    shown = inspect("show", str(kept), "0/1", "--graph", "--json")
    assert shown.returncode == 0 and "aot_backward_graph" in json.loads(shown.stdout)["graph_ir"]


def test_every_graph_rebuilds_and_reproduces_its_samples(kept: Path) -> None:
    checked = 0
    for compile_id, event in stored_graphs(kept):
        try:
            module = load_graph(kept, compile_id, GRAPHS[event])
        except dr.GraphError as error:  # a graph that never ran inside capture still rebuilds
            assert "has no stored sample" in str(error)
            module = load_graph(kept, compile_id, GRAPHS[event], inputs=False)
        assert len(module.graph.nodes) == len(module.ir["nodes"])
        if module.expected_outputs:
            # Bitwise on the CPU that captured it; another CPU's matmul kernels may round the
            # last bit differently (2.98e-08 seen on an AMD EPYC), never more than float32 noise.
            assert module.check(FLOAT32_NOISE, FLOAT32_NOISE) == [], (compile_id, event)
            checked += 1
    assert checked >= 6  # forward, backward and Dynamo graphs of both MLP compiles at least


def test_the_runner_runs_every_aten_graph(kept: Path) -> None:
    for compile_id, event in stored_graphs(kept):
        if event == "dynamo_output_graph":
            continue
        done = subprocess.run(
            [runner_executable(), str(kept), compile_id, "--graph", event, "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        report = json.loads(done.stdout)
        if "has no stored sample" in report.get("error", ""):  # never ran inside capture
            continue
        assert done.returncode == 0 and report["ok"], report
        assert report["outputs"] and all(
            o["status"] == "bitwise" or o["max_abs_diff"] <= FLOAT32_NOISE for o in report["outputs"]
        ), report


def test_its_dynamic_compile_has_a_symbol_table(kept: Path) -> None:
    with dr.Store.open(kept) as s:
        tables = {
            compile_text(e.compile_id): json.loads(s.get_blob(e.payload_key))
            for e in s.records(dr.TraceEvent)
            if e.name == schema.EVENT_SYMBOLS
        }
    (batch,) = [entry for entry in tables["0/1"] if entry.get("source") == "L['x'].size()[0]"]
    assert re.fullmatch(r"s\d+", batch["symbol"]) and batch["hint"] == 6 and batch["range"][0] == 2


def test_its_failed_compile_keeps_the_expression_and_the_symbol_origin(kept: Path) -> None:
    with dr.Store.open(kept) as s:
        events = [(e.name, compile_text(e.compile_id), json.loads(e.metadata_json)) for e in s.records(dr.TraceEvent)]
    (failure,) = [md for name, cid, md in events if name == schema.EVENT_COMPILE_FAILURE and md["expr"]]
    assert failure["expr"] == "Eq(u0, 0)" and failure["symbols"] == ["u0"]
    assert failure["user_frame"]["code"].startswith("if count == 0:")
    origin = next(md for name, cid, md in events if name == schema.EVENT_SYMBOL_ORIGIN and md["symbol"] == "u0")
    assert origin["op"] == "aten.nonzero.default" and "torch.nonzero" in origin["user_frame"]["code"]
    asserts = [md for name, cid, md in events if name == schema.EVENT_SHAPE_GUARD and cid == "1/0"]
    assert [(a["kind"], a["expr"]) for a in asserts] == [("runtime_assert", "u0 <= 4")]
    (recompile,) = [md for name, cid, md in events if name == schema.EVENT_RECOMPILE]
    (cause,) = recompile["causes"]
    assert cause["text"] == "0/0: tensor 'x' size mismatch at index 0. expected 4, actual 6"
    assert (cause["entry"], cause["source"], cause["expected"], cause["seen"], cause["from"]) == (
        "0/0",
        "L['x'].size()[0]",
        "4",
        "6",
        "compared",
    )
    calls = {cid: md["calls"] for name, cid, md in events if name == schema.EVENT_HITS}
    assert calls["0/0"] == 1 and calls["0/1"] == 1


def test_its_run_time_failure_and_constraint_violation_are_whole(kept: Path) -> None:
    """Capture 1.5's facts: the failed assert with the value, the marked dimension the code made 8."""
    with dr.Store.open(kept) as s:
        events = [(e.name, json.loads(e.metadata_json)) for e in s.records(dr.TraceEvent)]
    (failure,) = [md for name, md in events if name == schema.EVENT_RUNTIME_FAILURE]
    assert failure["values"] == {"u0": 5} and failure["asserts"][0]["expr"] == "Eq(Mod(u0, 2), 0)"
    (violation,) = [
        md for name, md in events if name == schema.EVENT_COMPILE_FAILURE and md["kind"] == "constraint_violation"
    ]
    (marked,) = violation["constraints"]
    assert (marked["source"], marked["specialized"]) == ("L['x'].size()[0]", 8)
    assert marked["user_frame"]["code"] == "if x.size(0) == 8:  # specializes the size marked dynamic"
