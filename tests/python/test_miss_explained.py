"""A frame that compiles at replay after failing every saved entry is explained against the
nearest entry (_torch.install.nearest_failure): the guard that failed, as PyTorch wrote it, and
what its source reads now. One line per kind of guard text; test_replay_changes runs the real
thing (a global float changed) end to end."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("torch")

from dynamo_replay._torch.install import nearest_failure  # noqa: E402


class Config:
    scale = 0.7


FRAME_LOCALS = {"x": [0.0] * 96, "self": SimpleNamespace(training=True), "cfg": {"mode": "fast"}}
FRAME_GLOBALS = {"SCALE": 0.7, "CONFIG": Config()}

# (the failing guard's text, as PyTorch's check_verbose gives it, and what the summary says)
GUARDS = {
    "a global float": ("G['SCALE'] == 0.5", "fails G['SCALE'] == 0.5 (now G['SCALE'] is 0.7)"),
    "an attribute of a global": (
        "G['CONFIG'].scale == 0.5",
        "fails G['CONFIG'].scale == 0.5 (now G['CONFIG'].scale is 0.7)",
    ),
    "a module's mode": (
        "L['self'].training == False  # model.py:12 in forward",
        "fails L['self'].training == False (now L['self'].training is True)",
    ),
    "a dict key": ("L['cfg']['mode'] == 'slow'", "fails L['cfg']['mode'] == 'slow' (now L['cfg']['mode'] is 'fast')"),
    "a length": ("len(L['x']) == 64", "fails len(L['x']) == 64"),  # not a source: no value read
    "a size through a call": ("L['x'].__len__() == 64", "fails L['x'].__len__() == 64 (now L['x'].__len__() is 96)"),
    "a tensor check": ("check_tensor(L['x'], Tensor, ..., size=[2, 64])", "fails check_tensor(L['x'], Tensor"),
    "a source that no longer reads": ("G['GONE'] == 1", "fails G['GONE'] == 1"),
}


def manager(passes: bool, executed: int, parts: list[str]):
    info = SimpleNamespace(result=passes, num_guards_executed=executed, verbose_code_parts=parts)
    return SimpleNamespace(check_verbose=lambda f_locals: info)


@pytest.mark.parametrize("guard", GUARDS)
def test_the_failed_guard_is_named_with_its_value_now(guard: str) -> None:
    text, said = GUARDS[guard]
    found = nearest_failure([manager(False, 3, [text])], FRAME_LOCALS, FRAME_GLOBALS)
    assert found is not None and found.startswith("the nearest saved entry ") and said in found, found
    if "(now" not in said:
        assert "(now" not in found


def test_the_nearest_entry_is_the_one_that_ran_the_most_guards() -> None:
    entries = [manager(False, 2, ["G['A'] == 1"]), manager(False, 9, ["G['SCALE'] == 0.5"]), manager(False, 4, ["x"])]
    assert "G['SCALE'] == 0.5" in nearest_failure(entries, FRAME_LOCALS, FRAME_GLOBALS)


def test_nothing_is_said_when_no_entry_failed() -> None:
    assert nearest_failure([manager(True, 5, [])], FRAME_LOCALS, FRAME_GLOBALS) is None
