"""Training steps start warm: each row of tests/python/training_cases.py (an optimizer, a way of
compiling its step, one change) captured once, in one process with every other row, and
replayed in one fresh process, first as captured and then with each row's change.

As captured, every step replays from the store (no frame traced) and gives the losses and
trained parameters of a plain torch.compile, bitwise. With the change, each row gives what a
plain torch.compile gives with it, bitwise: replayed where the change is a value the step reads
as an input (a tensor lr, a scheduler), compiled where it changes the code (a float baked in,
another class, another flag). About 90 s on a 2-core machine (Inductor compiles the steps)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from job_environment import job_environment  # noqa: E402
from training_cases import CASES, REPLAYS, write_cases  # noqa: E402

JOB = Path(__file__).parent / "jobs" / "train_steps.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, dict]:
    root = tmp_path_factory.mktemp("training")
    write_cases(root / "cases")
    store, out = root / "steps.dynrep", root / "out"
    for action in ("capture", "replay"):
        env = job_environment(root / f"{action}-cache")  # replay's cache starts empty
        result = subprocess.run(
            [sys.executable, str(JOB), str(root / "cases"), str(out), action, str(store)],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
        )
        assert result.returncode == 0, result.stderr[-4000:]
    summary = result.stderr[result.stderr.rindex(f"dynamo-replay: {store}") :]  # replay's summary, printed last
    results = {name: torch.load(out / f"{name}.pt") for name in ("captured", "plain", "plain_changed")}
    results.update({name: torch.load(out / f"{name}.pt") for name in ("replayed", "replayed_changed")})
    results["traced"] = json.loads((out / "traced.json").read_text())
    results["compiler"] = json.loads((out / "compiler.json").read_text())
    results["summary"] = summary
    return results


def assert_bitwise_equal(expected: list, actual: list) -> None:
    assert len(expected) == len(actual)
    for want, got in zip(expected, actual):
        assert want.dtype == got.dtype and want.shape == got.shape
        assert torch.equal(want, got), (want, got)


@pytest.mark.parametrize("case", CASES)
def test_capture_trains_as_a_plain_compile_does(runs: dict, case: str) -> None:
    """The optimizer's tensors are graph inputs under capture, not graph constants: the same
    numbers."""
    assert_bitwise_equal(runs["plain"][case], runs["captured"][case])


@pytest.mark.parametrize("case", CASES)
def test_replay_traces_nothing_and_trains_as_captured(runs: dict, case: str) -> None:
    assert runs["traced"]["unchanged"][case] == []
    assert_bitwise_equal(runs["captured"][case], runs["replayed"][case])


@pytest.mark.parametrize("case", CASES)
def test_a_change_replays_or_compiles_and_is_never_stale(runs: dict, case: str) -> None:
    assert_bitwise_equal(runs["plain_changed"][case], runs["replayed_changed"][case])
    traced = runs["traced"]["changed"][case]
    assert (traced == []) == (CASES[case][3] == REPLAYS), traced


def test_replay_imports_the_compiler_only_once_a_frame_compiles(runs: dict) -> None:
    """Inductor's compiler (compile_fx, the lowerings, GraphLowering) stays unimported through
    every run whose frames all came from the store, forward, backward and optimizer steps alike,
    and is imported by the first frame that compiles (the stores' graphs are then run by the
    same code as before: the other tests here compare every number)."""
    order = runs["compiler"]
    assert order and not order[0][1], "the first run must replay"
    for run, traced_so_far, imported in order:
        if not traced_so_far:
            assert imported == [], f"{run}: imported {imported} with every frame from the store"
    compiled = [imported for _, traced_so_far, imported in order if traced_so_far]
    assert compiled and "torch._inductor.compile_fx" in compiled[-1], compiled


def test_the_summary_splits_the_start_into_its_parts(runs: dict) -> None:
    """The summary's first lines: replay's own start, the sum of its parts; what torch.compile
    imports anyway; and whether the compiler was imported (a frame compiled here: it was)."""
    lines = runs["summary"].splitlines()
    start = re.fullmatch(r"  start: ([\d.]+) s of replay's own work: (.*)", lines[1])
    assert start, lines[:3]
    parts = {what: float(seconds) for what, seconds in (p.rsplit(" ", 2)[:2] for p in start.group(2).split(", "))}
    assert list(parts) == [
        "store read and checked",
        "artifacts put in place",
        "saved frames' guards built and checked",
        "compiled graphs and kernels loaded",
        "checks on first calls",
    ]
    assert all(seconds >= 0 for seconds in parts.values()) and parts["compiled graphs and kernels loaded"] > 0
    assert abs(sum(parts.values()) - float(start.group(1))) <= 0.02  # each part rounded to 0.01 s
    assert re.fullmatch(
        r"    and [\d.]+ s importing Dynamo and Inductor's runtime, as torch.compile does; Inductor's compiler "
        r"imported when first needed \(.*torch\._inductor\.graph.*\)",
        lines[2],
    ), lines[2]
