"""`why` on failures found when compiled code runs or while it compiles, one line per case: each
job in tests/python/jobs/failures runs under `python -m dynamo_replay capture` (the job dies of
its failure, the store is still whole; a job killed on the spot by os._exit keeps the failure in
its recovered store), and `why --json` must name the failure kind, the expression, the user line
marked `# why: here`, where each symbol came from (`# why: u0`), the value it had on the run,
and the advice. `why --verify` then applies the top edit to a copy and runs the job again. About
110 s: each case is a fresh process (two at a time), Inductor's case compiles C++."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import tiers
from shared_captures import copy_of, shared

JOBS = Path(__file__).resolve().parent / "jobs" / "failures"


@dataclass(frozen=True)
class Case:
    script: str
    args: tuple[str, ...]
    kind: str  # the first problem's failure_kind, or "recompile"
    advice: str  # the first advice's kind
    expr: str = ""  # the failing expression, as PyTorch prints it
    values: dict = field(default_factory=dict)  # symbol -> its value on the run
    edit: str = ""  # a substring of the first advice's edit
    verify: str = ""  # "fixed", "not fixed" or "refused" (why --verify); "" not run
    survives: bool = False  # the job ends well (a graph break or a recompile); else it dies of the failure
    also: tuple[str, ...] = ()  # advice kinds that must follow the first

    @property
    def id(self) -> str:
        return "-".join((self.script, *self.args))


CASES = [
    # run-time asserts that real data broke (the job dies of them)
    Case(
        "pairs_view",
        ("aot_eager",),
        "runtime_assert",
        "make_valid_for_all",
        "Eq(Mod(u0, 2), 0)",
        {"u0": 9},
        "on this run u0 was 9",
        verify="not fixed",
        also=("check_where_made",),
    ),
    Case("pairs_view", ("eager",), "runtime_assert", "make_valid_for_all", "Eq(Mod(u0, 2), 0)", {"u0": 9}),
    Case("pairs_view", ("inductor",), "runtime_assert", "make_valid_for_all", "Eq(Mod(u0, 2), 0)", {"u0": 9}),
    Case("killed_pairs", (), "runtime_assert", "make_valid_for_all", "Eq(Mod(u0, 2), 0)", {"u0": 9}),
    Case("forked_pairs", (), "runtime_assert", "make_valid_for_all", "Eq(Mod(u0, 2), 0)", {"u0": 9}),
    Case("masked_rows", (), "runtime_assert", "make_valid_for_all", "Eq(Mod(u0, 3), 0)", {"u0": 7}),
    Case("unique_groups", (), "runtime_assert", "make_valid_for_all", "Eq(Mod(u0, 4), 0)", {"u0": 7}),
    Case("item_bound", (), "runtime_assert", "make_valid_for_all", "u0 <= 8", {"u0": 12}, "`n <= 8` is False"),
    # constraint violations: a dimension marked dynamic that the code does not allow
    Case(
        "marked_branch",
        (),
        "constraint_violation",
        "maybe_mark_dynamic",
        edit="maybe_mark_dynamic(x, 0)",
        verify="fixed",
    ),
    Case(
        "marked_broadcast",
        (),
        "constraint_violation",
        "maybe_mark_dynamic",
        edit="maybe_mark_dynamic(batch, 0)",
        verify="fixed",
    ),
    Case(
        "marked_range",
        (),
        "constraint_violation",
        "dim_range",
        edit="mark_dynamic(x, 0, min=6, max=16)",
        verify="fixed",
    ),
    # a data-dependent branch: the value on the run says which side happened
    Case(
        "empty_or_not",
        ("0.5",),
        "data_dependent",
        "torch_check",
        "Eq(u0, 0)",
        {"u0": 3},
        "torch._check(picked.numel() != 0)`: on this run u0 was 3",
        verify="fixed",
    ),
    Case("empty_or_not", ("0.95",), "data_dependent", "torch_cond", "Eq(u0, 0)", {"u0": 0}),
    Case("killed_branch", (), "data_dependent", "torch_check", "Eq(u0, 0)", {"u0": 3}),
    Case("tensor_branch", (), "graph_break", "torch_cond", verify="refused"),
    Case("item_break", (), "graph_break", "capture_scalar_outputs", verify="fixed", survives=True),
    # recompiles named from the graph's inputs compared with the call, in the caller's names
    Case(
        "batch_in_dict",
        (),
        "recompile",
        "mark_dynamic",
        edit="mark_dynamic(inputs['x'], 0)",
        verify="fixed",
        survives=True,
    ),
    Case("llama_longer", (), "recompile", "mark_dynamic", edit="mark_dynamic(ids, 1)", verify="fixed", survives=True),
    # kinds with no pattern are explained generically: the line (never "unknown") and PyTorch's text
    Case("recompile_limit", (), "recompile_limit", ""),
    Case("shape_mismatch", (), "fake_tensor_error", ""),
]


def marker_line(script: str, tag: str) -> int:
    lines = (JOBS / f"{script}.py").read_text().splitlines()
    (line,) = [n for n, text in enumerate(lines, 1) if re.search(rf"#\s*why:\s*{tag}\s*$", text)]
    return line


def _capture(case: Case, directory: Path) -> dict:
    """The case's capture (once a build: shared_captures), copied into directory: its store, the
    capture's exit code and its messages."""
    made = shared(f"why-failure-{case.id}", lambda folder: _run_capture(case, folder), inputs=[__file__])
    copy_of(made, directory / case.id)
    said = json.loads((directory / case.id / "capture.json").read_text())
    return {"store": directory / case.id / f"{case.id}.dynrep", **said}


def _run_capture(case: Case, folder: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dynamo_replay",
            "capture",
            "-o",
            str(folder / f"{case.id}.dynrep"),
            str(JOBS / f"{case.script}.py"),
            *case.args,
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    (folder / "capture.json").write_text(json.dumps({"returncode": done.returncode, "stderr": done.stderr}))


@pytest.fixture(scope="module")
def captured(request, tmp_path_factory):
    directory = tmp_path_factory.mktemp("why-failures")
    cases = tiers.selected(request, "case")
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda c: _capture(c, directory), cases))
    return {case.id: run for case, run in zip(cases, runs)}


def _inspect(*args: str) -> subprocess.CompletedProcess:
    from dynamo_replay.tools import inspect_executable

    return subprocess.run([inspect_executable(), *args], capture_output=True, text=True, timeout=120)


def _first(answer: dict, case: Case) -> tuple[dict, dict]:
    """(compile entry, problem or recompile) that answers the case."""
    for entry in answer["compiles"]:
        if case.kind == "recompile" and "recompile" in entry:
            return entry, entry["recompile"]
        if entry["problems"]:
            return entry, entry["problems"][0]
    raise AssertionError(f"nothing explained: {answer}")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_why_names_the_failure(case, captured):
    run = captured[case.id]
    assert (run["returncode"] == 0) == case.survives, run["stderr"][-2000:]
    answer = json.loads(_inspect("why", "--json", str(run["store"])).stdout)
    entry, found = _first(answer, case)
    assert [a["kind"] for a in found["advice"][:1]] == ([case.advice] if case.advice else []), found["advice"]
    assert not case.edit or case.edit in found["advice"][0]["edit"]
    assert set(case.also) <= {a["kind"] for a in found["advice"][1:]}
    if case.kind == "recompile":
        assert found["from"] == "event" and any(c.get("from") == "compared" for c in [found, *found["causes"]])
        return
    assert found["failure_kind"] == case.kind
    assert found["user_frame"]["line"] == marker_line(case.script, "here"), found["user_frame"]
    assert found["expr"] == case.expr
    for symbol in found["symbols"]:
        if symbol["symbol"] in case.values:
            assert symbol["value_on_run"]["value"] == case.values[symbol["symbol"]]
            assert symbol["origin"]["user_frame"]["line"] == marker_line(case.script, symbol["symbol"])
    assert {s["symbol"] for s in found["symbols"]} >= set(case.values)
    if case.kind == "runtime_assert":  # the job's own error goes on unchanged, and ls marks the compile
        assert found["kind"] == "runtime_failure"
        assert "RuntimeError" in run["stderr"] or case.script == "killed_pairs"  # that job exits on the spot
        listed = json.loads(_inspect("ls", "--json", str(run["store"])).stdout)
        assert [c["runtime_failures"] for c in listed["compiles"]] == [1]
        assert re.search(
            rf"{entry['compile_id']} +{entry['function']} .* run failed ", _inspect("ls", str(run["store"])).stdout
        )


def _verify(store: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dynamo_replay", "why", "--verify", "--json", str(store), *extra],
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="module")
def verified(request, captured):
    cases = [c for c in tiers.selected(request, "case") if c.verify and c.id in captured]
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda c: _verify(captured[c.id]["store"]), cases))
    return {case.id: run for case, run in zip(cases, runs)}


@pytest.mark.parametrize("case", [c for c in CASES if c.verify], ids=lambda c: c.id)
def test_verify_proves_the_edit(case, verified):
    done = verified[case.id]
    if case.verify == "refused":
        assert done.returncode == 2 and "no advice is an edit" in done.stderr and "torch_cond" in done.stderr
        return
    verdict = json.loads(done.stdout)
    added = [line for line in verdict["diff"].splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert len(added) == (2 if verdict["advice"]["apply"]["action"] == "config" else 1), verdict["diff"]
    assert verdict["before"]["problems"], verdict  # the failure as captured, again
    if case.verify == "fixed":
        assert done.returncode == 0 and verdict["fixed"] and verdict["after"]["problems"] == []
        assert verdict["same_outputs"] is True
    else:
        assert done.returncode == 1 and not verdict["fixed"] and verdict["after"]["problems"]


def test_verify_refuses_a_changed_script(tmp_path):
    script = tmp_path / "job.py"
    shutil.copy(JOBS / "marked_branch.py", script)
    store = tmp_path / "job.dynrep"
    subprocess.run(
        [sys.executable, "-m", "dynamo_replay", "capture", "-o", str(store), str(script)],
        cwd=tmp_path,
        capture_output=True,
        timeout=300,
    )
    script.write_text(script.read_text().replace("y + 1", "y + 2"))
    done = _verify(store)
    assert done.returncode == 2 and f"{script} changed since the capture" in done.stderr
    assert "y + 2" in script.read_text()  # the user's file as they left it


def test_verify_refuses_a_store_without_a_command_line(tmp_path):
    """A store from before the job event (capture format 1.2, kept in tests/data) cannot be re-run."""
    kept = Path(__file__).resolve().parents[1] / "data" / "capture-1.2" / "every-record.dynrep"
    done = _verify(kept)
    assert done.returncode == 2 and "records no command line" in done.stderr, done.stderr


def _table_kinds(section: str) -> set[str]:
    """The first-column `ids` of a table under `## section` of docs/why.md."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "why.md").read_text()
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z_0-9]+)` \|", body, re.M))


def test_every_failure_kind_has_a_row():
    """Each kind capture can name (from the exception classes, plus the run-time ones) is in
    docs/why.md's table, and the table names nothing capture does not."""
    from dynamo_replay._torch import shapes as _torch_shapes

    kinds = {kind for _, kind in _torch_shapes._KINDS} | {
        "data_dependent_int",
        "other",
        "runtime_assert",
        "runtime_error",
    }
    assert _table_kinds("Failure kinds") == kinds


def test_every_advice_kind_has_a_program():
    """Each advice of docs/why.md is proven by a why-program (test_why_programs) or a case here."""
    sys.path.append(str(Path(__file__).resolve().parent / "jobs"))
    import why

    proven = {c.advice for c in CASES if c.advice} | {kind for c in CASES for kind in c.also}
    assert _table_kinds("Advice patterns") == set(why.ADVICE) | proven


def _failed_call(events) -> None:
    try:
        raise RuntimeError("Runtime assertion failed for expression Eq(Mod(u0, 2), 0)")
    except RuntimeError as error:
        events.run_facts.call_failed((0, 0, 0), "__compiled_fn_1", 1, error)


# What capture writes to the file before the job goes on (killed_pairs and killed_branch show it on
# real jobs; killed_branch's compile leaves the writer idle, so only this table is sure to fail
# without the write): (what happens, the events it puts, whether the job may die of it).
WRITTEN_AT_ONCE = [
    ("compiled code fails", _failed_call, ["dynamo_replay.runtime_failure"], True),
    (
        "a compile fails",
        lambda events: events.logged(
            "compilation_metrics", (0, 0, 0), {"fail_type": "UserError", "fail_reason": "Eq(u0, 0)"}, None
        ),
        ["dynamo_replay.compile_failure"],
        True,
    ),
    (
        "a compile ends",
        lambda events: events.logged("compilation_metrics", (0, 0, 0), {"fail_type": None}, None),
        [],
        False,
    ),
    (
        "a guard is added",
        lambda events: events.logged("guard_added_fast", (0, 0, 0), {"expr": "s0 > 1"}, None),
        ["dynamo_replay.shape_guard"],
        False,
    ),
]


@pytest.mark.parametrize(
    "happen, puts, written", [row[1:] for row in WRITTEN_AT_ONCE], ids=[row[0] for row in WRITTEN_AT_ONCE]
)
def test_a_failure_the_job_may_die_of_is_written_before_the_job_goes_on(happen, puts, written) -> None:
    from dynamo_replay.capture.shape_events import ShapeEvents

    done: list[str] = []
    events = ShapeEvents(lambda name, compile_id, metadata, payload: done.append(name), lambda: done.append("write"))
    happen(events)
    assert done == puts + (["write"] if written else [])
