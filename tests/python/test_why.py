"""replay-inspect why: on every why-program (tests/python/jobs/why), `why --json` of the broken
variant names the failing expression, the user line, each symbol's origin operator and line and
its final range, the recompile's failed guard with expected and seen values, and first the
advice kind whose edit the fixed variant applies; the fixed variant leaves nothing to explain.
Synthetic stores cover what real captures cannot: stores from before capture's own shape events
(PyTorch's texts are read instead), a ladder of recompiles, odd metadata and bad arguments."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import dynamo_replay as dr
from why_programs import PROGRAMS, inspect_all, why

EXPECTS = {name: why.load(name).EXPECT for name in PROGRAMS}


def _why(inspect, *args: str) -> dict:
    result = inspect("why", "--json", *map(str, args))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def answers(why_stores) -> dict[str, dict[str, dict]]:
    """`why --json` of every program's broken and fixed store."""
    return inspect_all(why_stores, "why")


def _problem(answer: dict, kind: str) -> dict:
    problems = [p for c in answer["compiles"] for p in c["problems"] if p["kind"] == kind]
    assert len(problems) == 1, [p["headline"] for c in answer["compiles"] for p in c["problems"]]
    return problems[0]


@pytest.mark.parametrize("program", [p for p in PROGRAMS if EXPECTS[p]["outcome"] != "recompile"])
def test_failure_or_graph_break_is_explained(program, answers):
    expect, answer = EXPECTS[program], answers[program]["broken"]
    problem = _problem(answer, expect["outcome"])
    assert problem["advice"][0]["kind"] == expect["advice"], [a["kind"] for a in problem["advice"]]
    assert problem["advice"][0]["edit"]
    if expect["expr"] is not None:
        assert problem["expr"] == expect["expr"]
    frame = problem["user_frame"]
    assert (frame["file"], frame["line"]) == (expect["file"], expect["line"])
    assert "# why: here" in frame["code"]
    assert problem["in_library"] == (expect["advice"] == "guard_or_false")
    symbols = {s["symbol"]: s for s in problem["symbols"]}
    assert set(expect["symbols"]) <= set(symbols)
    for name, origin in expect["symbols"].items():
        found = symbols[name]
        assert re.search(origin["op"], found["origin"]["op"]), found["origin"]
        assert found["origin"]["user_frame"]["line"] == origin["line"]
        assert found["unbacked"]
        lo, hi = found["range"]  # the final range, not the range at creation
        if "nonzero" in origin["op"]:
            assert lo == 0 and isinstance(hi, int), found["range"]  # a count of rows: never negative


@pytest.mark.parametrize("program", [p for p in PROGRAMS if EXPECTS[p]["outcome"] == "recompile"])
def test_recompile_is_explained(program, answers):
    expect, answer = EXPECTS[program], answers[program]["broken"]
    (entry,) = answer["compiles"]
    recompile = entry["recompile"]
    assert recompile["from"] == "event"
    assert recompile["advice"][0]["kind"] == expect["advice"]
    for key in ("source", "expected", "seen"):  # a source as the frame names it: L['x'] or x
        found = [re.sub(r"L\['([^']+)'\]", r"\1", recompile[k]) for k in (key, "guard")]
        assert any(expect["recompile"][key] in f for f in found), (key, recompile)
    (function,) = answer["functions"]
    assert function["compiles"] == 2 and function["line"] == expect["line"]
    assert function["summary"] == f"2 compiles of {entry['function']}: {recompile['description']} (1)"
    assert function["causes"][0]["advice"]["kind"] == expect["advice"]


def test_the_stride_fix_goes_at_the_call_that_brought_the_layout(answers):
    """A stride recompile's fix is at the caller's line of the recompile, in the caller's name."""
    (entry,) = answers["stride_change"]["broken"]["compiles"]
    advice = entry["recompile"]["advice"][0]
    assert advice["line"]["code"] == "got = compiled(*args)" and advice["line"]["file"].endswith("why/__init__.py")
    assert advice["edit"].startswith(f"pass args[0].contiguous() at __init__.py:{advice['line']['line']} ")


@pytest.mark.parametrize("program", PROGRAMS)
def test_fixed_variant_leaves_nothing_to_explain(program, answers):
    assert answers[program]["fixed"]["compiles"] == [] and answers[program]["fixed"]["functions"] == []


def test_text_gives_the_answer_first(why_stores, inspect, answers):
    text = inspect("why", str(why_stores["empty_selection"]["broken"])).stdout
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0].startswith(
        "0/0 top_scores did not compile: PyTorch could not decide Eq(u0, 0) at empty_selection.py:"
    )
    assert "if picked.numel() == 0:" in lines[1]
    assert lines[2].strip() == "fix, most likely first:" and "torch_check" in lines[3]
    assert "torch._check(picked.numel() != 0)" in lines[3]
    (u0,) = _problem(answers["empty_selection"]["broken"], "failure")["symbols"]
    lo, hi = u0["range"]
    assert f"u0 (picked.shape[0])  unbacked, final range [{lo}, {hi}]" in text


def test_symbol_option_limits_provenance(why_stores, inspect):
    store = why_stores["empty_selection"]["broken"]
    answer = _why(inspect, store, "0/0", "--symbol", "u0")
    (entry,) = answer["compiles"]
    assert [s["symbol"] for s in entry["symbols"]] == ["u0"]
    assert entry["symbols"][0]["origin"]["op"] == "aten.nonzero.default"
    missing = inspect("why", str(store), "--symbol", "u7")
    assert missing.returncode == 1 and "no compile knows symbol u7" in missing.stderr


def _step(x, scale):
    return x * scale + 1


def test_recompile_ladder_captured(tmp_path, inspect):
    """The issue's ladder, captured: a float that changes, a size that goes dynamic, then a
    size of 1 outside the dynamic range; one cause per recompile, with capture's seen values."""
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()
    store = tmp_path / "ladder.dynrep"
    with dr.capture(store):
        step = torch.compile(_step, backend="aot_eager")
        for n, scale in ((8, 0.5), (8, 0.7), (16, 0.7), (1, 0.7)):
            step(torch.ones(n), scale)
    torch._dynamo.reset()
    answer = _why(inspect, store)
    (function,) = answer["functions"]
    assert function["summary"] == (
        "4 compiles of _step: scale changed, a float constant (1); x.size(0) went dynamic (1); "
        "x.size(0) == 1 outside the dynamic range (1)"
    )
    details = [c["recompile"]["detail"] for c in answer["compiles"]]
    assert details[0] == "scale changed, a float constant (0.5, then 0.7)"
    assert details[1] == "x.size(0) went dynamic (8, then 16)"
    assert [c["recompile"]["advice"][0]["kind"] for c in answer["compiles"]] == [
        "float_constant",
        "mark_dynamic",
        "mark_unbacked",
    ]
    text = inspect("why", str(store)).stdout
    assert text.startswith("test_why.py:") and function["summary"] in text.splitlines()[0]


# --- synthetic stores ---


def _store(path: Path, events: list[tuple[tuple[int, int, int], str, dict, bytes]]) -> Path:
    with dr.Store.create(path, overwrite=True) as store:
        store.put(dr.Manifest(tool="test", environment={"torch.version": "0.0-test"}))
        for compile_id, name, metadata, payload in events:
            key = store.put_blob(payload) if payload else ""
            store.put(
                dr.TraceEvent(
                    name=name,
                    compile_id=compile_id,
                    metadata_json=json.dumps(metadata),
                    payload_key=key,
                    payload_size=len(payload),
                    time=0.0,
                )
            )
    return path


def _metrics(function: str, **more) -> dict:
    return {"co_name": function, "co_filename": "/job/step.py", "co_firstlineno": 4, "guard_count": 3, **more}


STATUS = (
    "Consider annotating your code using torch._check*(). Could not guard on data-dependent expression "
    "Eq(u0, 0) (unhinted: Eq(u0, 0)).  (Size-like symbols: u0)\n\nCaused by: if n.numel() == 0:  # job/step.py:6 "
    "in f (_dynamo/variables/tensor.py:2606 in evaluate_expr)\n\nUser Stack (most recent call last):\n"
    '  File "/job/step.py", line 6, in f\n    if n.numel() == 0:\n'
)


def test_store_without_capture_shape_events_is_read_from_pytorch_text(tmp_path, inspect):
    """A store from before capture recorded failures and origins: the status text and PyTorch's
    own create_unbacked_symbol event still give the expression, line, origin line and advice."""
    store = _store(
        tmp_path / "old.dynrep",
        [
            (
                (0, 0, 0),
                "create_unbacked_symbol",
                {
                    "symbol": "u0",
                    "vr": "[-int_oo, int_oo]",
                    "user_stack": [
                        {"filename": "/job/step.py", "line": 5, "name": "f", "loc": "n = torch.nonzero(x > 0.5)"}
                    ],
                },
                b"",
            ),
            ((0, 0, 0), "compilation_metrics", _metrics("f", fail_type="UserError", fail_reason=STATUS), b""),
        ],
    )
    (entry,) = _why(inspect, store)["compiles"]
    (problem,) = entry["problems"]
    assert problem["expr"] == "Eq(u0, 0)" and problem["user_frame"]["line"] == 6
    assert problem["advice"][0]["kind"] == "torch_check"
    assert "torch._check(n.numel() != 0)" in problem["advice"][0]["edit"]
    (u0,) = problem["symbols"]
    assert u0["origin"]["user_frame"]["line"] == 5 and u0["origin"]["attributed"] == "pytorch_user_stack"
    assert u0["range"] is None  # no final table in such a store: said, not invented
    assert "u0  unbacked, final range not recorded" in inspect("why", str(store)).stdout


LADDER = [
    "0/0: L['scale'] == 0.5  # return x * scale + 1  # job/step.py:5 in step",
    "0/1: tensor 'x' size mismatch at index 0. expected 8, actual 16\n0/0: L['scale'] == 0.5",
    "0/2: 2 <= L['x'].size()[0]  # return x * scale + 1  # job/step.py:5 in step (user code shown is first use of "
    "this value--the guard itself is not due user code but due to 0/1 specialization in the framework; to avoid "
    "specialization try torch._dynamo.decorators.mark_unbacked(tensor, dim))\n"
    "0/1: tensor 'x' size mismatch at index 0. expected 8, actual 1\n0/0: L['scale'] == 0.5",
]


def test_recompile_ladder_from_reason_texts(tmp_path, inspect):
    """PyTorch's reason lines alone (no dynamo_replay.recompile event): one cause per recompile,
    the one a previous recompile did not already explain, and the per-function summary."""
    events = [((0, 0, 0), "compilation_metrics", _metrics("step"), b"")]
    for n, reasons in enumerate(LADDER, 1):
        events += [
            (
                (0, n, 0),
                "artifact",
                {"name": "recompile_reasons", "encoding": "json"},
                json.dumps(reasons.split("\n")).encode(),
            ),
            ((0, n, 0), "compilation_metrics", _metrics("step"), b""),
        ]
    events.append(
        (
            (0, 2, 0),
            "dynamo_replay.symbols",
            {"count": 1},
            json.dumps(
                [{"symbol": "s0", "unbacked": False, "range": [2, "int_oo"], "source": "L['x'].size()[0]"}]
            ).encode(),
        )
    )
    answer = _why(inspect, _store(tmp_path / "ladder.dynrep", events))
    (function,) = answer["functions"]
    assert function["summary"] == (
        "4 compiles of step: scale changed, a float constant (1); x.size(0) went dynamic (1); "
        "x.size(0) == 1 outside the dynamic range (1)"
    )
    kinds = [c["recompile"]["advice"][0]["kind"] for c in answer["compiles"]]
    assert kinds == ["float_constant", "mark_dynamic", "mark_unbacked"]
    assert all(c["recompile"]["from"] == "reason_text" for c in answer["compiles"])
    third = answer["compiles"][2]["recompile"]
    assert third["entry"] == "0/2" and third["seen"] == "1"
    assert [c["primary"] for c in third["causes"]] == [True, False, False]


def test_graph_break_and_failure_events_together(tmp_path, inspect):
    """Capture's own events come first: a failure event's expression and frame, origins with
    their op and phase, shape guards in order, the final range from the symbol table."""
    frame = {"file": "/job/step.py", "line": 9, "function": "f", "code": "for i in range(steps):"}
    origin = {
        "symbol": "u0",
        "unbacked": True,
        "phase": "aot",
        "op": "aten._local_scalar_dense.default",
        "node": "item",
        "source": "",
        "value": None,
        "attributed": "graph_node",
        "user_frame": {"file": "/job/step.py", "line": 8, "function": "f", "code": "steps = valid.sum().item()"},
    }
    store = _store(
        tmp_path / "events.dynrep",
        [
            ((0, 0, 0), "dynamo_replay.symbol_origin", origin, b""),
            (
                (0, 0, 0),
                "dynamo_replay.shape_guard",
                {"expr": "u0 >= 0", "kind": "runtime_assert", "symbols": ["u0"], "user_frame": origin["user_frame"]},
                b"",
            ),
            (
                (0, 0, 0),
                "dynamo_replay.shape_guard",
                {"expr": "u0 <= 8", "kind": "runtime_assert", "symbols": ["u0"], "user_frame": None},
                b"",
            ),
            (
                (0, 0, 0),
                "dynamo_replay.symbols",
                {"count": 1},
                json.dumps([{"symbol": "u0", "unbacked": True, "range": [0, 8]}]).encode(),
            ),
            (
                (0, 0, 0),
                "dynamo_replay.compile_failure",
                {
                    "type": "UserError",
                    "chain": ["UserError", "GuardOnDataDependentSymNode"],
                    "expr": "u0",
                    "symbols": ["u0"],
                    "user_frame": frame,
                    "message": "Could not extract specialized integer from data-dependent expression u0 (unhinted: u0).",
                },
                b"",
            ),
            ((0, 0, 0), "compilation_metrics", _metrics("f", fail_type="UserError", fail_reason="(text lost)"), b""),
        ],
    )
    (problem,) = _why(inspect, store)["compiles"][0]["problems"]
    assert problem["integer"] and problem["advice"][0]["kind"] == "data_dependent_loop"
    assert "i < steps" in problem["advice"][0]["edit"]
    (u0,) = problem["symbols"]
    assert u0["range"] == [0, 8] and u0["user_name"] == "steps" and u0["origin"]["phase"] == "aot"
    assert [g["python"] for g in u0["guards"]] == ["u0 >= 0", "u0 <= 8"]


def test_odd_metadata_and_bad_arguments(tmp_path, inspect):
    odd = [
        ((0, 0, 0), name, metadata, b"\xff not utf-8")
        for name in (
            "dynamo_replay.symbol_origin",
            "dynamo_replay.shape_guard",
            "dynamo_replay.compile_failure",
            "dynamo_replay.recompile",
            "compilation_metrics",
            "artifact",
        )
        for metadata in (
            {"symbol": 3, "user_frame": 5, "causes": [1, {"entry": []}], "chain": "x"},
            {"name": "recompile_reasons"},
            {"name": "dynamo_graph_break_reason"},
        )
    ]
    odd.append(((0, 1, 0), "dynamo_replay.recompile", {"causes": [{"entry": "0/0", "guard": None, "text": 7}]}, b""))
    # Megabyte texts (a status, a graph-break reason, a guard) with no line breaks in them.
    huge = "Could not guard on data-dependent expression " + "u0 + " * 200_000 + "1 (unhinted: x)"
    odd.append(((1, 0, 0), "compilation_metrics", _metrics("g", fail_type="UserError", fail_reason=huge), b""))
    odd.append(((1, 0, 0), "artifact", {"name": "dynamo_graph_break_reason"}, ("Graph Break Reason: " + huge).encode()))
    odd.append(
        ((1, 1, 0), "dynamo_replay.recompile", {"causes": [{"entry": "1/0", "guard": "2 <= " + "x" * 10**6}]}, b"")
    )
    store = _store(tmp_path / "odd.dynrep", odd)
    for args in ([], ["--json"], ["0/1"], ["--symbol", "u0"]):
        result = inspect("why", str(store), *args)
        assert result.returncode in (0, 1) and "terminate" not in result.stderr, (args, result.stderr)
    unknown = inspect("why", str(store), "9/9")
    assert unknown.returncode == 1 and "no compile 9/9" in unknown.stderr
    missing = inspect("why", str(tmp_path / "missing.dynrep"))
    assert missing.returncode == 1 and "missing.dynrep" in missing.stderr
