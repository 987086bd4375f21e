"""Every kind of miss, end to end, one line each: jobs/misses_job.py captured once, then run
with every case changed. For each case `check --run` names the miss, the replay does it, and
both say the same guard with both values and the fix; the fixes are then run: `replay --update`
makes the next start replay every case, and a fix that is a change of the call (a dtype, a
layout, requires_grad, the module's mode) makes that frame replay from the original store."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")

from replay_workloads import capture_script, job_env, run  # noqa: E402
from shared_captures import copy_of, shared  # noqa: E402

JOB = Path(__file__).parent / "jobs" / "misses_job.py"

# case -> (the compiled function, kind, subject, at capture, now, a word of the fix or None). A
# tensor is said in the caller's name for it (the job passes inputs[case]), not the frame's (x).
CASES = {
    "length": ("length", "size", "inputs['length'].size(1)", "64", "96", "mark_dynamic(inputs['length'], 1)"),
    "batch": ("batch", "size", "inputs['batch'].size(0)", "2", "4", "every inputs['batch'].size(0)"),
    "dtype": ("dtype", "dtype", "inputs['dtype'].dtype", "float32", "float64", "inputs['dtype'].to(torch.float32)"),
    "requires_grad": (
        "requires_grad",
        "requires_grad",
        "inputs['requires_grad'].requires_grad",
        "False",
        "True",
        "inputs['requires_grad'].detach()",
    ),
    "stride": ("stride", "stride", "inputs['stride'].stride(0)", "64", "1", "inputs['stride'].contiguous() at "),
    "global": ("scaled_by_global", "float_constant", "global SCALE", "0.5", "0.7", "torch.tensor(0.5)"),
    "config_field": ("scaled_by_config", "float_constant", "global CONFIG.scale", "0.5", "0.7", "CONFIG.scale"),
    "train_eval": ("Block.forward", "mode", "self.dropout.training", "False", "True", "self.dropout.eval()"),
}
# Refused when the frame is installed (a guard PyTorch's precompile dropped): said the same way.
INSTALL_CASES = {"hook": ("Outer.forward", "self.inner's hooks: no hooks at capture, 1 hook now")}
# The fixes that are a change of the call, which the job applies with --fix.
CALL_FIXES = ["dtype", "requires_grad", "stride", "train_eval"]
CHANGED = ",".join([*CASES, *INSTALL_CASES])


def frame_of(qualname: str) -> str:
    """The frame name replay and check give a function of the job: `fn (JOB:first line)`."""
    tree = ast.parse(JOB.read_text())
    for node in ast.walk(tree):
        for child in getattr(node, "body", []):
            if isinstance(child, ast.FunctionDef):
                owner = node.name + "." if isinstance(node, ast.ClassDef) else ""
                if owner + child.name == qualname:
                    return f"{child.name} ({JOB}:{child.lineno})"
    raise AssertionError(f"{qualname} is not in {JOB}")


def _capture(folder: Path) -> None:
    result = capture_script(folder / "job.dynrep", JOB, cache=folder / "cache")
    assert result.returncode == 0, result.stderr[-3000:]
    shutil.rmtree(folder / "cache", ignore_errors=True)


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("misses")
    copy_of(shared("misses job", _capture, inputs=[JOB]), root)
    return root


def replay_job(store: Path, cache: Path, *options: str, job_args: tuple[str, ...] = ()) -> tuple[dict, str]:
    """(the replay summary as JSON, stderr) of the job under `replay OPTIONS`."""
    summary = cache.with_suffix(".json")
    result = run(
        "-m",
        "dynamo_replay",
        "replay",
        *options,
        "--summary-json",
        str(summary),
        str(store),
        str(JOB),
        *job_args,
        env=job_env(cache, compiler=True),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(summary.read_text()), result.stderr


@pytest.fixture(scope="module")
def predicted(captured: Path) -> dict:
    """`check --run --json` with every case changed."""
    result = run(
        "-m",
        "dynamo_replay",
        "check",
        "--run",
        "--json",
        str(captured / "job.dynrep"),
        str(JOB),
        "--change",
        CHANGED,
        env=job_env(captured / "check-cache", compiler=True),
    )
    assert result.returncode == 3, result.stdout[-2000:] + result.stderr[-3000:]
    return {plan["frame"]: plan for plan in json.loads(result.stdout)["frames"]}


@pytest.fixture(scope="module")
def replayed(captured: Path) -> tuple[dict, str, Path]:
    """The replay with every case changed, as `replay --update` (its store a copy): the summary,
    stderr, and the grown store."""
    store = captured / "updated.dynrep"
    shutil.copy(captured / "job.dynrep", store)
    summary, stderr = replay_job(store, captured / "update-cache", "--update", job_args=("--change", CHANGED))
    return summary, stderr, store


@pytest.mark.parametrize("case", CASES)
def test_check_and_replay_name_the_same_miss_with_both_values_and_the_fix(
    case: str, predicted: dict, replayed: tuple[dict, str, Path]
) -> None:
    function, kind, subject, at_capture, now, fix = CASES[case]
    frame = frame_of(function)
    compiled = {f"{c['function']} ({c['filename']}:{c['line']})": c for c in replayed[0]["compiled"]}
    miss = compiled[frame]["miss"]
    assert miss is not None, compiled[frame]["reason"]
    assert (miss["kind"], miss["subject"], miss["at_capture"], miss["now"]) == (kind, subject, at_capture, now)
    assert fix in miss["fix"], miss["fix"]
    plan = predicted[frame]
    assert plan["outcome"] == "compiles" and plan["miss"] == miss, plan
    assert plan["why"] == compiled[frame]["reason"]
    assert f"{subject}: {at_capture} at capture, {now} now" in replayed[1]


@pytest.mark.parametrize("case", INSTALL_CASES)
def test_a_dropped_guard_refused_at_install_is_said_the_same_way(
    case: str, predicted: dict, replayed: tuple[dict, str, Path]
) -> None:
    function, said = INSTALL_CASES[case]
    frame = frame_of(function)
    compiled = {f"{c['function']} ({c['filename']}:{c['line']})": c for c in replayed[0]["compiled"]}
    assert said in compiled[frame]["reason"] and said in predicted[frame]["why"]


def test_the_stride_fix_names_the_callers_line(replayed: tuple[dict, str, Path]) -> None:
    (stride,) = [c for c in replayed[0]["compiled"] if c["function"] == "stride"]
    line = next(n for n, text in enumerate(JOB.read_text().splitlines(), 1) if "the line a stride fix names" in text)
    fix = stride["miss"]["fix"]  # the caller's file as the job names it: relative to its directory, or whole
    assert fix.startswith("pass inputs['stride'].contiguous() at ") and f"{JOB.name}:{line}," in fix, fix


def test_replay_update_makes_the_next_start_replay_every_case(captured: Path, replayed: tuple[dict, str, Path]) -> None:
    assert "replay --update" in replayed[1]  # the summary says the fix
    summary, _ = replay_job(replayed[2], captured / "after-update-cache", job_args=("--change", CHANGED))
    assert summary["compiled"] == [], [c["reason"] for c in summary["compiled"]]


def test_the_call_fixes_make_their_frames_replay_from_the_store(captured: Path) -> None:
    fixes = ",".join(CALL_FIXES)
    summary, _ = replay_job(
        captured / "job.dynrep", captured / "fixed-cache", job_args=("--change", fixes, "--fix", fixes)
    )
    assert summary["compiled"] == [], [c["reason"] for c in summary["compiled"]]
    assert all(summary["hits"].get(frame_of(CASES[case][0])) for case in CALL_FIXES), summary["hits"]


def test_the_size_fix_captured_makes_a_new_length_replay(tmp_path: Path) -> None:
    """The fixes a new length gets, each applied and proved: the job captured with mark_dynamic
    (whose marks PyTorch's precompile saves without, and replay puts back), or with dynamic=True,
    replays the length it missed on."""
    for fix in ("--mark-dynamic", "--dynamic"):
        store = tmp_path / f"{fix[2:]}.dynrep"
        assert capture_script(store, JOB, fix, cache=tmp_path / f"{fix[2:]}-cache").returncode == 0
        summary, _ = replay_job(store, tmp_path / f"{fix[2:]}-replay", job_args=("--change", "length", fix))
        assert summary["compiled"] == [], [c["reason"] for c in summary["compiled"]]
        assert summary["hits"].get(frame_of("length")), summary["hits"]
