"""replay-inspect export: the TORCH_TRACE log, read by the real tlparse (the same compiles,
graphs and guards as `ls`, and line for line what PyTorch's own TORCH_TRACE handler wrote
during the same run), and the Perfetto timeline, checked against the Chrome trace-event format."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from dynamo_replay._core import Store, TraceEvent

DATA = Path(__file__).parent.parent / "data"


@pytest.fixture(scope="module")
def gpt2(gpt2_recompile_break) -> tuple[Path, Path]:
    """GPT-2 with a recompile and a graph break (conftest): (store, PyTorch's own log of the run)."""
    return gpt2_recompile_break


def tlparse_executable() -> str:
    found = shutil.which("tlparse") or str(Path(sys.executable).with_name("tlparse"))
    if not Path(found).exists():
        pytest.skip("tlparse is not installed (make test installs it: pip install tlparse)")
    return found


def tlparse(log: Path, out: Path) -> dict:
    """Runs tlparse --strict (any unparsable line, bad JSON or payload MD5 mismatch fails it);
    returns its compile_directory.json."""
    done = subprocess.run(
        [tlparse_executable(), str(log), "-o", str(out), "--overwrite", "--no-browser", "--strict"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((out / "compile_directory.json").read_text())


def log_events(path: Path) -> list[tuple[str, str | None]]:
    """A TORCH_TRACE log as (metadata JSON text, payload or None), prefixes dropped."""
    events: list[tuple[str, str | None]] = []
    lines = path.read_text().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line or line.startswith("\t"):
            continue
        assert re.match(r"[VIWEC]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} \d+ [^:]+:\d+\] \{", line), line[:200]
        metadata = line.split("] ", 1)[1]
        payload = []
        while i < len(lines) and lines[i].startswith("\t"):
            payload.append(lines[i][1:])
            i += 1
        events.append((metadata, "\n".join(payload) if '"has_payload"' in metadata else None))
    return events


def export_trace(inspect, store: Path, out: Path, *flags: str) -> Path:
    done = inspect("export", "--torch-trace", str(out), str(store), "--json", *flags)
    assert done.returncode == 0, done.stderr
    return Path(json.loads(done.stdout)["file"])


def compiles(inspect, store: Path) -> list[dict]:
    done = inspect("ls", "--json", str(store))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["compiles"]


def artifact_names(directory: dict, key: str) -> list[str]:
    """tlparse's files for one compile, without the running number it adds."""
    return [re.sub(r"_\d+(\.\w+)$", r"\1", a["name"]) for a in directory.get(key, {}).get("artifacts", [])]


def test_pytorch_lines_are_the_ones_pytorch_wrote(gpt2, inspect, tmp_path):
    store, pytorch_log = gpt2
    ours = [e for e in log_events(export_trace(inspect, store, tmp_path)) if '"dynamo_replay.' not in e[0][:80]]
    theirs = log_events(pytorch_log)
    assert len(ours) > 300
    for metadata, payload in ours:  # tlparse --strict checks these too; here with the line at hand
        if payload is not None:
            md5 = json.loads(metadata)["has_payload"]
            assert hashlib.md5(payload.encode()).hexdigest() == md5, metadata[:200]
    missing_from_pytorch = Counter(ours) - Counter(theirs)
    assert not missing_from_pytorch, list(missing_from_pytorch)[:3]
    # What PyTorch logged and the export lacks came after capture ended: artifacts of no
    # compile (its Mega-Cache save at exit), never a compile's event or an interned string.
    for metadata, _ in Counter(theirs) - Counter(ours):
        md = json.loads(metadata)
        assert "artifact" in md and "frame_id" not in md, metadata[:200]
    assert [m for m, _ in ours if m.startswith('{"str"')] == [m for m, _ in theirs if m.startswith('{"str"')]


def test_tlparse_lists_the_compiles_graphs_and_guards_of_ls(gpt2, inspect, tmp_path):
    store, pytorch_log = gpt2
    listed = compiles(inspect, store)
    assert {c["compile_id"] for c in listed} >= {"0/0", "0/1", "1/0", "1/0_1", "2/0", "2/1"}
    assert any(c["graph_breaks"] for c in listed) and any(c["reason"].startswith("0/0:") for c in listed)
    directory = tlparse(export_trace(inspect, store, tmp_path / "log"), tmp_path / "tl")
    assert set(directory) - {"[-/-]"} == {f"[{c['compile_id']}]" for c in listed}
    index = (tmp_path / "tl" / "index.html").read_text()
    restarts = (tmp_path / "tl" / "failures_and_restarts.html").read_text()
    for c in listed:
        key = f"[{c['compile_id']}]"
        files = artifact_names(directory, key)
        for graph in c["graphs"]:
            assert f"{graph}.txt" in files, (key, graph, files)
        if c["compile_id"].endswith(("/0", "/1")):  # attempts hang off their compile in the stack trie
            assert f"href='#{key}'" in index, key
        if c["graph_breaks"]:
            assert "dynamo_graph_break_reason.txt" in files, key
            # tlparse lists the restart under the attempt that followed, with Dynamo's reason
            assert f"[{c['compile_id']}_1]" in restarts and "Failed to trace builtin operator" in restarts, key
        if not c["guards"]:
            continue
        shown = json.loads(inspect("show", "--json", "--guards", str(store), c["compile_id"]).stdout)
        [guards_file] = [a["url"] for a in directory[key]["artifacts"] if "dynamo_cpp_guards_str" in a["name"]]
        tree = (tmp_path / "tl" / guards_file).read_text()
        assert tree.strip() == shown["guards"].strip()
        assert all(g["code"] in tree for g in shown["guard_list"])
        assert "dynamo_replay.guards.json" in files  # capture's parsed list rides along as an artifact
        [metrics] = [a["url"] for a in directory[key]["artifacts"] if "compilation_metrics" in a["name"]]
        assert f"<p>Guard Count: {c['guards']}</p>" in (tmp_path / "tl" / metrics).read_text()
    # tlparse makes of the export what it makes of PyTorch's own log of the same run.
    theirs = tlparse(pytorch_log, tmp_path / "tl_pytorch")
    for key in set(theirs) - {"[-/-]"}:
        ours = [n for n in artifact_names(directory, key) if not n.startswith("dynamo_replay.")]
        assert sorted(ours) == sorted(artifact_names(theirs, key)), key


def test_capture_events_are_artifacts_unless_left_out(gpt2, inspect, tmp_path):
    store, _ = gpt2
    log = export_trace(inspect, store, tmp_path / "all")
    artifacts = [json.loads(m) for m, _ in log_events(log) if '"dynamo_replay.' in m[:80]]
    assert artifacts and all(a["artifact"]["encoding"] == "json" for a in artifacts)
    # One artifact per event name and compile, whatever the number of events.
    keys = [(a["artifact"]["name"], a.get("frame_id"), a.get("frame_compile_id"), a.get("attempt")) for a in artifacts]
    assert len(keys) == len(set(keys))
    only = export_trace(inspect, store, tmp_path / "only", "--pytorch-only")
    assert "dynamo_replay." not in only.read_text()
    tlparse(only, tmp_path / "tl")


def test_a_damaged_event_is_left_out_with_a_warning(inspect, tmp_path):
    store = Store.create(str(tmp_path / "damaged.dynrep"), level=3, overwrite=True)
    graph = store.put_blob(b"def forward(self, x):\n    return x + '<&>'\n")
    for name, metadata, key in (
        ("dynamo_output_graph", "{}", graph),
        ("compilation_metrics", "{not json", ""),
        ("artifact", json.dumps({"name": "gone", "encoding": "string"}), "ab" * 16),
    ):
        store.put(
            TraceEvent(
                name=name, compile_id=(0, 0, 0), metadata_json=metadata, payload_key=key, payload_size=1, time=1.7e9
            )
        )
    store.close()
    done = inspect("export", "--torch-trace", str(tmp_path / "out"), str(tmp_path / "damaged.dynrep"))
    assert done.returncode == 1
    assert "record 1 (compilation_metrics 0/0): metadata is not JSON; left out" in done.stderr
    assert "abababababababababababababababab unreadable" in done.stderr
    directory = tlparse(next((tmp_path / "out").glob("*.log")), tmp_path / "tl")  # what is written still parses
    assert artifact_names(directory, "[0/0]") == ["dynamo_output_graph.txt", "gone.txt"]  # gone: empty


def test_bad_input_is_an_error_not_a_crash(inspect, tmp_path):
    done = inspect("export", "--torch-trace", str(tmp_path), str(DATA / "malformed" / "empty.dynrep"))
    assert done.returncode == 1 and done.stderr.startswith("error: ") and "empty file" in done.stderr
    done = inspect("export", str(DATA / "capture-1.2" / "every-record.dynrep"))
    assert done.returncode == 2 and "--torch-trace or --perfetto" in done.stderr


# --- Perfetto ---


def perfetto(inspect, store: Path, out: Path) -> dict:
    done = inspect("export", "--perfetto", str(out), str(store))
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def check_trace_event_format(trace: dict) -> list[dict]:
    """The Chrome trace-event format's rules that Perfetto's JSON importer relies on; returns
    the events that are not metadata."""
    assert isinstance(trace, dict) and isinstance(trace["traceEvents"], list)
    assert trace.get("displayTimeUnit", "ms") in ("ms", "ns")
    timed: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for e in trace["traceEvents"]:
        assert isinstance(e["name"], str) and e["name"], e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        assert e["ph"] in ("X", "B", "E", "i", "M"), e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "process_sort_index", "thread_name", "thread_sort_index"), e
            assert isinstance(e["args"], dict) and ("name" in e["args"] or "sort_index" in e["args"]), e
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        assert isinstance(e.get("args", {}), dict), e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        if e["ph"] == "i":
            assert e.get("s", "t") in ("g", "p", "t"), e
        timed[(e["pid"], e["tid"])].append(e)
    for track, events in timed.items():
        assert [e["ts"] for e in events] == sorted(e["ts"] for e in events), f"ts not monotone on {track}"
        assert sum(e["ph"] == "B" for e in events) == sum(e["ph"] == "E" for e in events), track
        # Complete events on one track nest: each lies inside, or wholly after, the ones before.
        open_ends: list[float] = []
        for e in (e for e in events if e["ph"] == "X"):
            while open_ends and e["ts"] >= open_ends[-1]:
                open_ends.pop()
            end = e["ts"] + e["dur"]
            assert not open_ends or end <= open_ends[-1] + 1e-3, f"{e['name']} overlaps its parent on {track}"
            open_ends.append(end)
    return [e for events in timed.values() for e in events]


def test_perfetto_trace_has_every_compile_with_its_phases(gpt2, inspect, tmp_path):
    store, pytorch_log = gpt2
    trace = perfetto(inspect, store, tmp_path / "trace.json")
    events = check_trace_event_format(trace)
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    for c in compiles(inspect, store):
        frame, compile_ = (int(n) for n in c["compile_id"].split("_")[0].split("/"))
        track = (frame + 1, compile_ + 1)
        assert names[track] == f"compile {frame}/{compile_}"
        [whole] = [e for e in events if (e["pid"], e["tid"]) == track and e["cat"] == "compile"]
        assert whole["name"] == f"compile {frame}/{compile_} {c['function']}"
        phases = {e["name"] for e in events if (e["pid"], e["tid"]) == track and e["cat"] == "dynamo_timed"}
        assert {"dynamo", "entire_frame_compile", "bytecode_tracing"} <= phases, (c["compile_id"], phases)
        if c["compile_id"].endswith("_1") or c["status"] == "ok" and not c["graph_breaks"]:
            assert {"backend_compile", "build_guards"} <= phases, (c["compile_id"], phases)
    # Real times: the first compile's "dynamo" span starts when PyTorch logged its begin.
    first_begin = next(
        json.loads(p)
        for m, p in log_events(pytorch_log)
        if m.startswith('{"chromium_event"') and '"name": "dynamo"' in p
    )
    starts = [e["ts"] for e in events if e["name"] == "dynamo" and (e["pid"], e["tid"]) == (1, 1)]
    assert first_begin["ts"] in starts, (first_begin["ts"], starts)


def test_perfetto_from_old_and_damaged_stores(inspect, tmp_path):
    for store in (DATA / "capture-1.1" / "every-record.dynrep", DATA / "v1.0" / "sample.dynrep"):
        check_trace_event_format(perfetto(inspect, store, tmp_path / f"{store.parent.name}.json"))
    store = Store.create(str(tmp_path / "half.dynrep"), level=3, overwrite=True)
    for ph, ts in (("B", 1.0e15), ("B", 1.0e15 + 10), ("E", 1.0e15 + 20), ("E", 1.0e15 + 30)):
        name = "outer" if ts in (1.0e15, 1.0e15 + 30) else "never_begun" if ph == "E" else "inner"
        key = store.put_blob(json.dumps({"name": name, "ts": ts, "ph": ph, "args": {}, "pid": 0, "tid": 0}).encode())
        store.put(
            TraceEvent(
                name="chromium_event",
                compile_id=(0, 0, 0),
                metadata_json="{}",
                payload_key=key,
                payload_size=1,
                time=1.0e9,
            )
        )
    store.close()
    events = check_trace_event_format(perfetto(inspect, tmp_path / "half.dynrep", tmp_path / "half.json"))
    by_name = {e["name"]: e for e in events}
    # An end without its begin nests in the span open at the time; a begin without its end
    # ends with its enclosing span.
    assert by_name["outer"]["dur"] == 30
    assert by_name["inner"]["args"]["end_not_recorded"] and by_name["inner"]["dur"] == 20
    assert by_name["never_begun"]["args"]["begin_not_recorded"]
    assert (by_name["never_begun"]["ts"], by_name["never_begun"]["dur"]) == (by_name["inner"]["ts"], 10)
