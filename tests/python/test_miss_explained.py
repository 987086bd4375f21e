"""A call that fails every saved entry of its frame is explained against the nearest entry:
_torch.install.nearest_failure finds the failed guard and reads its source on the call, and
replay/misses.explain says it in the user's terms with both values and the fix. One line per
kind of guard text, as PyTorch 2.13-2.15 write them; test_miss_table runs the real misses end
to end."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dynamo_replay.replay.misses import explain

HOOKS = (
    "(tuple(L['self']._forward_pre_hooks.values()) + tuple(L['self']._forward_hooks.values()) + "
    "tuple(L['self']._backward_pre_hooks.values()) + tuple(L['self']._backward_hooks.values()))"
)

# guard text, the value its source reads now (absent: none read) ->
#   (kind, subject, at capture, now, a word of the fix or None)
CASES = {
    "a new length": (
        ("tensor 'L['input_ids']' size mismatch at index 1. expected 64, actual 96",),
        ("size", "input_ids.size(1)", "64", "96", "mark_dynamic(input_ids, 1)"),
    ),
    "a new batch": (
        ("tensor 'L['kwargs']['input_ids']' size mismatch at index 0. expected 2, actual 4",),
        ("size", "input_ids.size(0)", "2", "4", "every input_ids.size(0)"),
    ),
    "a dtype": (
        ("tensor 'L['x']' dtype mismatch. expected Float, actual Double",),
        ("dtype", "x.dtype", "float32", "float64", "x.to(torch.float32)"),
    ),
    "requires_grad": (
        ("tensor 'L['x']' requires_grad mismatch. expected requires_grad=0",),
        ("requires_grad", "x.requires_grad", "False", "True", "x.detach()"),
    ),
    "a stride": (
        ("tensor 'L['x']' stride mismatch at index 0. expected 64, actual 1",),
        ("stride", "x.stride(0)", "64", "1", "x.contiguous() at job.py:9"),
    ),
    "a rank": (("tensor 'L['x']' rank mismatch. expected 2, actual 3",), ("rank", "x.dim()", "2", "3", None)),
    "train/eval": (
        ("L['self'].training == False  # return self.drop(x)  # model.py:12 in forward", True),
        ("mode", "self.training", "False", "True", "self.eval()"),
    ),
    "a submodule's mode": (
        ("L['self']._modules['drop'].training == False", True),
        ("mode", "self.drop.training", "False", "True", "self.drop.eval()"),
    ),
    "a global float": (
        ("G['SCALE'] == 0.5", 0.7),
        ("float_constant", "global SCALE", "0.5", "0.7", "torch.tensor(0.5)"),
    ),
    "a config field": (
        ("G['CONFIG'].scale == 0.5", 0.7),
        ("float_constant", "global CONFIG.scale", "0.5", "0.7", "CONFIG.scale as a tensor"),
    ),
    "an int argument": (("L['n'] == 3", 4), ("int_constant", "n", "3", "4", "dynamic=True")),
    "a dict key": (("L['cfg']['mode'] == 'slow'", "fast"), ("constant", "cfg['mode']", "'slow'", "'fast'", None)),
    "a length of a list": (("len(L['xs']) == 2", 3), ("length", "len(xs)", "2", "3", None)),
    "a baked-in lr": (
        ("L['self'].param_groups[0]['lr'] == 0.01", 0.02),
        ("float_constant", "self.param_groups[0]['lr']", "0.01", "0.02", "lr=torch.tensor(0.01)"),
    ),
    "a size below the dynamic range": (
        ("2 <= L['x'].size()[0]  # (due to 0/1 specialization in the framework)", 1),
        ("size_0_1", "x.size(0)", "2 <= x.size(0)", "1", "replay --update saves this one"),
    ),
    "a module hook added": (
        (f"dynamo-replay: {HOOKS} is tuple [] (MODULE_HOOKS dropped by PyTorch's precompile)", (print,)),
        ("hooks", "self's hooks", "no hooks", "1 hook", "capture again with the hooks self has now"),
    ),
    "a class edited": (
        (
            "dynamo-replay: type(L['self']) is class models.GPT contents 0123456789abcdef (CLASS_CONTENTS dropped "
            "by PyTorch's precompile)",
            object,
        ),
        ("class", "class models.GPT", "as captured", "changed since capture", None),
    ),
    "another object": (
        ("___check_obj_id(L['fn'], 140234)", print),
        ("object", "fn", "the object compiled for", "another object", None),
    ),
    "another type": (
        ("___check_type_id(L['x'], 9437)", 1.5),
        ("type", "type(x)", "the type compiled for", "float", None),
    ),
    "an unknown guard": (("some_new_guard(L['x'])",), ("other", "some_new_guard(L['x'])", None, None, None)),
}


@pytest.mark.parametrize("case", CASES)
def test_a_miss_is_said_with_both_values_and_the_fix(case: str) -> None:
    (text, *now), (kind, subject, at_capture, value_now, fix) = CASES[case]
    miss = explain(text, now[0] if now else None, bool(now), caller="job.py:9")
    assert (miss.kind, miss.subject, miss.at_capture, miss.now) == (kind, subject, at_capture, value_now)
    assert (fix in miss.fix) if fix else miss.fix is None, miss.fix
    said = str(miss)
    assert said.startswith(subject) and (at_capture is None or f"{at_capture} at capture" in said), said
    assert miss.as_dict()["subject"] == subject and miss.guard == text.split("  #")[0].strip()


def test_a_tensor_is_said_in_the_callers_name() -> None:
    text = "tensor 'L['args'][0]' size mismatch at index 0. expected 2, actual 1"
    miss = explain(text, caller_names={"L['args'][0]": "input_ids"})
    assert (miss.subject, miss.guard) == ("input_ids.size(0)", text)
    assert "every input_ids.size(0)" in miss.fix and "args" not in miss.fix


def test_the_user_line_pytorch_names_is_kept() -> None:
    miss = explain("L['self'].training == False  # return self.drop(x)  # model.py:12 in forward", True, True)
    assert miss.line == "model.py:12" and "(at model.py:12)" in str(miss)


torch = pytest.importorskip("torch")

from dynamo_replay._torch.install import nearest_failure  # noqa: E402
from dynamo_replay.replay.misses import reads  # noqa: E402


class Config:
    scale = 0.7


FRAME_LOCALS = {"x": [0.0] * 96, "self": SimpleNamespace(training=True), "cfg": {"mode": "fast"}}
FRAME_GLOBALS = {"SCALE": 0.7, "CONFIG": Config()}

# the failing guard's text as check_verbose gives it -> what its source reads on the call
READS = {
    "a global float": ("G['SCALE'] == 0.5", 0.7),
    "an attribute of a global": ("G['CONFIG'].scale == 0.5", 0.7),
    "a module's mode": ("L['self'].training == False  # model.py:12 in forward", True),
    "a dict key": ("L['cfg']['mode'] == 'slow'", "fast"),
    "a length": ("len(L['x']) == 64", 96),
    "a range": ("2 <= len(L['x'])", 96),
    "a tensor check": ("tensor 'L['x']' size mismatch at index 0. expected 2, actual 4", None),
    "a source that no longer reads": ("G['GONE'] == 1", None),
}


def manager(passes: bool, executed: int, parts: list[str]):
    info = SimpleNamespace(result=passes, num_guards_executed=executed, verbose_code_parts=parts)
    return SimpleNamespace(check_verbose=lambda f_locals: info)


@pytest.mark.parametrize("guard", READS)
def test_the_failed_guard_is_found_with_what_its_source_reads_now(guard: str) -> None:
    text, now = READS[guard]
    found = nearest_failure([manager(False, 3, [text])], FRAME_LOCALS, FRAME_GLOBALS, reads)
    assert found is not None and found.text == text
    assert (found.has_now, found.now) == ((True, now) if now is not None else (False, None))


def test_the_nearest_entry_is_the_one_that_ran_the_most_guards() -> None:
    entries = [manager(False, 2, ["G['A'] == 1"]), manager(False, 9, ["G['SCALE'] == 0.5"]), manager(False, 4, ["x"])]
    assert nearest_failure(entries, FRAME_LOCALS, FRAME_GLOBALS, reads).text == "G['SCALE'] == 0.5"


def test_nothing_is_said_when_no_entry_failed() -> None:
    assert nearest_failure([manager(True, 5, [])], FRAME_LOCALS, FRAME_GLOBALS, reads) is None


# The captured tree's lines of a dimension-marking guard, as PyTorch 2.15 prints them.
MARKING_TREE = [
    "DIMENSION_DYNAMIC_MARKING_GUARD: ((getattr(L['x'], '_dynamo_dynamic_indices', set()).issubset({1})) "
    "if hasattr(L['x'], '_dynamo_dynamic_indices') else True)",
    "DIMENSION_DYNAMIC_MARKING_GUARD: ((getattr(L['x'], '_dynamo_dynamic_range', None) == None) "
    "if hasattr(L['x'], '_has_dynamo_dim_marking') else True)",
    "DIMENSION_DYNAMIC_MARKING_GUARD: hasattr(L['x'], '_dynamo_static_indices') == False",
    "DIMENSION_DYNAMIC_MARKING_GUARD: ((getattr(L['kw']['ids'], '_dynamo_weak_dynamic_indices', set())"
    ".issubset({0, 1})) if hasattr(L['kw']['ids'], '_dynamo_weak_dynamic_indices') else True)",
    "DIMENSION_DYNAMIC_MARKING_GUARD: ((getattr(L['gone'], '_dynamo_dynamic_indices', set()).issubset({0})) "
    "if hasattr(L['gone'], '_dynamo_dynamic_indices') else True)",
]


def test_the_marks_pytorch_saves_without_are_put_back_as_captured() -> None:
    """PyTorch saves a frame's tensors without their dimension marks; replay puts back what the
    captured guards name, and nothing they do not (an absent mark rebuilds a stricter guard)."""
    from dynamo_replay._torch.guards import restore_dimension_marks

    scope = {"x": torch.empty(2, 8), "kw": {"ids": torch.empty(2, 8)}}
    restore_dimension_marks(scope, MARKING_TREE)
    assert scope["x"]._dynamo_dynamic_indices == {1} and scope["x"]._has_dynamo_dim_marking is True
    assert not hasattr(scope["x"], "_dynamo_dynamic_range") and not hasattr(scope["x"], "_dynamo_static_indices")
    assert scope["kw"]["ids"]._dynamo_weak_dynamic_indices == {0, 1}
