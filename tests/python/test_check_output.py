"""`check` as its user reads it: one line per saved frame, a "replays if" frame's conditions in
words (replay/conditions.py), a count line that adds up, the raw guards only under --verbose,
and the JSON carrying both."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dynamo_replay.replay.conditions import in_words
from dynamo_replay.replay.preflight import FramePlan, Preflight, _builtin, _dynamo_import

HOOKS = (
    "(tuple(L['self']._forward_pre_hooks.values()) + tuple(L['self']._forward_hooks.values()) + "
    "tuple(L['self']._backward_pre_hooks.values()) + tuple(L['self']._backward_hooks.values()))"
)

# (kind, source, value as capture described it, the condition in words)
GUARDS = {
    "no hooks": ("MODULE_HOOKS", HOOKS, "tuple []", "self has no hooks"),
    "hooks": (
        "MODULE_HOOKS",
        HOOKS,
        "tuple [function m.log code 0123456789abcdef]",
        "self has the hooks it had at capture",
    ),
    "a class": (
        "CLASS_CONTENTS",
        "type(L['self'])",
        "class models.TinyGPT contents 3bb485f1e8b4c4ac",
        "class TinyGPT (models) unchanged",
    ),
    "a global function": (
        "ID_MATCH",
        "G['ACT']",
        "function torch.nn.functional.relu code 0123456789abcdef",
        "global ACT is function torch.nn.functional.relu",
    ),
    "a closure": (
        "CLOSURE_MATCH",
        "L['func']",
        "function m.f code 0c29ea99607247b8; defaults constant None",
        "func is function m.f",
    ),
    "a global float": ("EQUALS_MATCH", "G['SCALE']", "float 0.5", "global SCALE is float 0.5"),
    "an attribute": ("EQUALS_MATCH", "L['self'].config.use_cache", "bool True", "self.config.use_cache is bool True"),
    "through Dynamo's import": (
        "ID_MATCH",
        "G['__import_transformers_dot_masking_utils'].sdpa_mask",
        "function transformers.masking_utils.sdpa_mask code abcdef0123456789",
        "transformers.masking_utils.sdpa_mask is function transformers.masking_utils.sdpa_mask",
    ),
    "no description": ("ID_MATCH", "L['x']", None, "x is as at capture"),
}


@pytest.mark.parametrize("guard", GUARDS)
def test_a_guard_is_said_in_the_user_s_words(guard: str) -> None:
    kind, source, value, words = GUARDS[guard]
    assert in_words(SimpleNamespace(kind=kind, source=source, value=value)) == words


# (source, value, whether check leaves it out: the same in every process of this build)
PINNED = {
    "a builtin function": ("G['__builtins_dict___2']['iter']", "callable builtins.iter", True),
    "a builtin class": ("G['__builtins_dict___2']['float']", "class builtins.float", True),
    "Dynamo's import of a module": (
        "G['__import_transformers_dot_activations']",
        "module transformers.activations",
        True,
    ),
    "a module through Dynamo's import": ("G['__import_transformers_dot_activations'].math", "module math", True),
    "a function through Dynamo's import": (
        "G['__import_transformers_dot_masking_utils'].sdpa_mask",
        "function transformers.masking_utils.sdpa_mask code 1a2b3c4d5e6f7a8b",
        False,
    ),
    "a user's global": ("G['ACT']", "function torch.nn.functional.relu code 1a2b3c4d5e6f7a8b", False),
}


@pytest.mark.parametrize("case", PINNED)
def test_check_leaves_out_what_every_process_has(case: str) -> None:
    source, value, pinned = PINNED[case]
    guard = SimpleNamespace(source=source, value=value)
    assert (_builtin(guard) or _dynamo_import(guard)) == pinned


def _preflight() -> Preflight:
    return Preflight(
        store="job.dynrep",
        frames=[
            FramePlan(
                "step (train.py:10)", "replays", "for inputs its saved entries accept", ["L['x'] float32 [8, 4]"]
            ),
            FramePlan("loss (train.py:20)", "compiles", "not saved at capture: a reason"),
            FramePlan(
                "forward (model.py:58)",
                "depends",
                "replays if, when the job reaches it, type(L['self']) is class models.GPT contents 3bb4 (CLASS_CONTENTS)",
                ["L['idx'] int64 [None, None]"],
                ["self has no hooks", "class GPT (models) unchanged", "a", "b", "c"],
            ),
        ],
    )


def test_check_says_one_line_per_frame_and_counts_that_add_up() -> None:
    lines = _preflight().render().splitlines()
    assert lines[0] == "job.dynrep: used: 3 saved frames: 1 replay, 1 compile, 1 replay if the job's values hold"
    assert lines[1:4] == [
        "  replays    step (train.py:10)",
        "  compiles   loss (train.py:20): not saved at capture: a reason",
        "  replays if self has no hooks, class GPT (models) unchanged, a, b and 1 more (--verbose): forward (model.py:58)",
    ]
    assert not any("CLASS_CONTENTS" in line or "entry 0" in line for line in lines)


def test_check_verbose_adds_the_raw_guards_and_the_entries() -> None:
    lines = _preflight().render(verbose=True).splitlines()
    assert "      guards: replays if, when the job reaches it, type(L['self']) is class models.GPT" in "\n".join(lines)
    assert "      entry 0: L['x'] float32 [8, 4]" in lines and "      entry 0: L['idx'] int64 [None, None]" in lines


def test_check_json_keeps_the_raw_guards_and_adds_the_words() -> None:
    (_, _, depends) = _preflight().to_json()["frames"]
    assert depends["why"].startswith("replays if, when the job reaches it, type(L['self'])")
    assert depends["conditions"][:2] == ["self has no hooks", "class GPT (models) unchanged"]


def test_check_run_takes_each_frame_s_words_from_the_replay() -> None:
    """check --run: a frame that compiled takes the replay's reason and miss, one whose values
    held replays, and one the store does not hold is a note; the counts still add up."""
    from dynamo_replay.replay.misses import explain
    from dynamo_replay.replay.summary import CompiledFrame, ReplaySummary

    miss = explain("tensor 'L['x']' size mismatch at index 0. expected 8, actual 16")
    summary = ReplaySummary(store="job.dynrep", hits={"forward (model.py:58)": 2})
    summary.compiled = [
        CompiledFrame("step", "train.py", 10, f"the call failed the guards of every saved entry: {miss}", 1.0, miss),
        CompiledFrame("other", "train.py", 90, "this frame was not compiled during capture", 0.5),
    ]
    result = _preflight()
    result.add_run(summary)
    said = result.to_json()
    step, loss, forward = said["frames"]
    assert (step["outcome"], step["miss"]) == ("compiles", miss.as_dict()) and str(miss) in step["why"]
    assert loss["outcome"] == "compiles" and loss["miss"] is None  # check's own reason stays
    assert forward["outcome"] == "replays" and said["ran"]
    assert "the run compiled other (train.py:90), which the store does not hold" in said["notes"][-1]
    lines = result.render().splitlines()
    assert lines[0] == "job.dynrep: used: 3 saved frames: 1 replay, 2 compile, 0 replay if the job's values hold"
    assert lines[-1] == "some frames compile (exit 3)"


@pytest.mark.parametrize("store", ["job.dynrep", "redis://127.0.0.1:1/0?name=job"])
def test_check_run_needs_the_job_and_a_store_file(store: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "dynamo_replay", "check", "--run", store], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "check --run runs the job's script against a store file" in done.stderr
