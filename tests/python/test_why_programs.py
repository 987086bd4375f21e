"""The why-programs (tests/python/jobs/why) do what their EXPECT says, read back from their
stores with `replay-inspect ls --json`: each broken variant fails, breaks the graph or
recompiles; each fixed variant (the advised edit applied) compiles once, ok, with no graph break,
and gives what the original program gives in eager. The stores are captured once a session
(conftest's why_stores fixture), which test_why reuses."""

from __future__ import annotations

from pathlib import Path

import pytest

import why_programs
from why_programs import PROGRAMS, inspect_all, why

EXPECTS = {name: why.load(name).EXPECT for name in PROGRAMS}


@pytest.fixture(scope="module")
def listed(why_stores):
    """`ls --json` of every store: {program: {variant: listing}}."""
    return inspect_all(why_stores, "ls")


def test_every_advice_has_a_program():
    assert len(PROGRAMS) >= 12
    assert {e["advice"] for e in EXPECTS.values()} == set(why.ADVICE)


@pytest.mark.parametrize("program", PROGRAMS)
def test_expect_points_at_real_lines(program):
    expect = EXPECTS[program]
    lines = Path(expect["file"]).read_text().splitlines()
    assert "# why: here" in lines[expect["line"] - 1]
    program_lines = Path(why.load(program).__file__).read_text().splitlines()
    for symbol, origin in expect["symbols"].items():
        assert f"# why: {symbol}" in program_lines[origin["line"] - 1]
    assert expect["failure"] == (expect["outcome"] == "failure")
    assert (expect["outcome"] == "recompile") == (expect["recompile"] is not None)


@pytest.mark.parametrize("program", PROGRAMS)
def test_broken_variant_goes_wrong_as_expected(program, listed, why_stores):
    expect, job = EXPECTS[program], listed[program]["broken"]
    run = why_programs.program_runs(why_stores[program])["broken"]
    compiles = job["compiles"]
    assert len(compiles) == expect["compiles"]["broken"], [c["compile_id"] for c in compiles]
    where = f"{expect['file']}:{expect['line']}"
    if expect["outcome"] == "failure":
        (failed,) = compiles
        assert failed["status"] != "ok" and run["error"] and run["calls"] == 0
        assert failed["status"].split(":")[0] == run["error"].split(":")[0]
        assert expect["expr"] is None or f"expression {expect['expr']} " in failed["status"]
        assert f'File "{expect["file"]}", line {expect["line"]}' in failed["status"]
    elif expect["outcome"] == "graph_break":
        breaks = [text for c in compiles for text in c["graph_breaks"]]
        assert len(breaks) == 1 and f"Graph break in user code at {where}\n" in breaks[0]
        assert run["error"] is None and run["matches_eager"]
        assert job["recompiles"] == 0
    else:
        assert job["recompiles"] == 1 and all(c["status"] == "ok" and not c["graph_breaks"] for c in compiles)
        assert {c["line"] for c in compiles} == {expect["line"]}  # the compiled function's def line
        assert compiles[-1]["reason"].startswith("0/0: ")
        assert run["error"] is None and run["matches_eager"]


@pytest.mark.parametrize("program", PROGRAMS)
def test_fixed_variant_compiles_once(program, listed, why_stores):
    job = listed[program]["fixed"]
    runs = why_programs.program_runs(why_stores[program])
    (only,) = job["compiles"]
    assert only["status"] == "ok" and only["graph_breaks"] == [] and job["recompiles"] == 0
    assert runs["fixed"]["error"] is None and runs["fixed"]["matches_eager"]
    assert runs["fixed"]["calls"] >= max(runs["broken"]["calls"], 2)  # every call ran on the one graph
