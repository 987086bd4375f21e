"""A call that failed every saved entry of its frame, said against the nearest entry: the guard
that failed, what it held at capture and what it holds now, in the user's terms, and the one
thing to do. The replay summary and `check --run` both say a miss through `explain`, so they
say the same words for the same miss. Imports no torch: the values come in already read."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any

from dynamo_replay.replay.conditions import hooks_owner, user_source

# The universal fix, said once per summary: a new generation holds the entry this call needs.
UPDATE_FIX = "python -m dynamo_replay replay --update STORE ... saves this entry too, so the next start replays it"

# PyTorch's TensorCheck texts (csrc/dynamo/guards.cpp, the same on 2.13-2.15):
# "tensor 'L['x']' size mismatch at index 1. expected 64, actual 96".
_TENSOR = re.compile(r"^tensor '(?P<source>.+)' (?P<what>[\w ]+?) mismatch(?: at index (?P<index>\d+))?\.(?P<rest>.*)$")
_EXPECTED_ACTUAL = re.compile(r"expected (?P<expected>.+?)(?:, actual (?P<actual>.+))?$")
# A comparison Dynamo wrote, the source on either side: "G['SCALE'] == 0.5", "2 <= L['x'].size()[0]".
_COMPARISON = re.compile(r"^(?P<left>.+?) (?P<op>==|!=|is not|is|<=|>=|<|>) (?P<right>.+)$")
# replay's own checks (_torch/guards.py): "dynamo-replay: SOURCE is VALUE (KIND dropped by ...)".
_REPLAY_CHECK = re.compile(r"^dynamo-replay: (?P<source>.+?) is (?P<value>.+) \((?P<kind>\w+) dropped by .*\)$")
_REPLAY_PINNED = re.compile(r"^dynamo-replay: (?P<source>.+) is the object compiled for$")
# A size or stride a guard reads of a tensor: `2 <= L['x'].size()[0]`.
_SIZE_OF = re.compile(r"(?P<source>[LG]\[[^ ]*?)\.(?:size|stride)\(\)\[\d+\]")
_IDENTITY = re.compile(r"^___check_(?P<which>obj|type)_id\((?P<source>.+), \d+\)$")
# An attribute read from the class at capture, now set on the object (or the reverse).
_DICT_CONTAINS = re.compile(r"^(?P<not>not )?___dict_contains\('(?P<name>\w+)', (?P<owner>.+)\.__dict__\)$")
# c10's dtype names, as TensorCheck says them, in torch's spelling.
_DTYPES = {
    "Float": "float32",
    "Double": "float64",
    "Half": "float16",
    "BFloat16": "bfloat16",
    "Long": "int64",
    "Int": "int32",
    "Short": "int16",
    "Char": "int8",
    "Byte": "uint8",
    "Bool": "bool",
}


@dataclass(frozen=True)
class Miss:
    """Why one call missed: JSON fields of the summary and of `check --run`."""

    kind: str  # size, size_0_1, stride, dtype, requires_grad, rank, mode, float_constant, int_constant,
    #            constant, length, hooks, class, object, type, other
    subject: str  # in the user's terms: input_ids.size(1), self.training, global SCALE
    at_capture: str | None  # what the nearest saved entry was compiled for
    now: str | None  # what this call brought
    fix: str | None  # the one thing to change in the job so it stops missing, where there is one
    guard: str  # the failed guard as PyTorch (or replay) wrote it
    line: str | None = None  # the user line PyTorch names for the guard, or the caller's line

    def __str__(self) -> str:
        values = ", ".join(
            part
            for part in (
                f"{self.at_capture} at capture" if self.at_capture is not None else None,
                f"{self.now} now" if self.now is not None else None,
            )
            if part
        )
        said = f"{self.subject}: {values}" if values else self.subject
        if self.line:
            said += f" (at {self.line})"
        return said + (f"; fix: {self.fix}" if self.fix else "")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def explain(
    guard: str,
    now: Any = None,
    has_now: bool = False,
    caller: str | None = None,
    library_line: bool = False,
    caller_names: dict[str, str] | None = None,
) -> Miss:
    """The miss one failed guard makes. `now`: what the guard's source reads on this call (when
    `has_now`); `caller`: "file:line" of the user's call that missed, for fixes that go there and
    for guards PyTorch names no user line for, or one in library code (`library_line`);
    `caller_names`: the caller's own name for a source the guard reads (`L['args'][0]` -> `ids`)."""
    text, _, comment = guard.partition("  #")
    text = text.strip()
    if caller_names:  # said in the caller's names; the guard is kept as PyTorch wrote it
        source, name = next(iter(caller_names.items()))
        return _renamed(explain(guard, now, has_now, caller, library_line), user_source(source), name)
    line = None if library_line else _user_line(comment)
    line = line or caller
    found = _TENSOR.match(text)
    if found:
        return _tensor_miss(found, text, caller)
    found = _REPLAY_CHECK.match(text)
    if found:
        return _dropped_miss(found, text, now if has_now else None, has_now, line)
    found = _REPLAY_PINNED.match(text)
    if found:
        who = user_source(found.group("source"))
        return Miss("object", who, "the object compiled for", "another object", None, text, line)
    found = _IDENTITY.match(text)
    if found:
        who = user_source(found.group("source"))
        if found.group("which") == "type":
            type_now = type(now).__qualname__ if has_now else None
            return Miss("type", f"type({who})", "the type compiled for", type_now, None, text, line)
        return Miss("object", who, "the object compiled for", "another object", None, text, line)
    found = _DICT_CONTAINS.match(text)
    if found:
        who = f"{user_source(found.group('owner'))}.{found.group('name')}"
        on_object, on_class = "set on the object", "its class's (not set on the object)"
        captured, current = (on_class, on_object) if found.group("not") else (on_object, on_class)
        return Miss("attribute", who, captured, current, None, text, line)
    found = _COMPARISON.match(text)
    if found:
        return _compared_miss(found, text, now, has_now, line)
    return Miss("other", text, None, None, None, text, line)


def reads(guard: str) -> tuple[str | None, str | None]:
    """(the frame source a guard compares, the tensor it checks), either None: what
    _torch.install.nearest_failure reads on the call, so that `explain` can say the value now
    and the caller's name for the tensor."""
    text = guard.split("  #")[0].strip()
    source = None
    for pattern in (_REPLAY_CHECK, _IDENTITY):
        found = pattern.match(text)
        if found:
            source = found.group("source")
            break
    else:
        found = _COMPARISON.match(text)
        if found and not text.startswith("dynamo-replay: "):
            source = next((side for side in (found.group("left"), found.group("right")) if _reads_frame(side)), None)
    tensor = _TENSOR.match(text) or _SIZE_OF.search(text)
    return source, tensor.group("source") if tensor else None


def _renamed(miss: Miss, frame_name: str, caller_name: str) -> Miss:
    """The miss with the frame's name for a tensor replaced by the caller's, in the subject and fix."""

    def swap(text: str | None) -> str | None:
        return re.sub(rf"(?<![\w.\]]){re.escape(frame_name)}(?![\w\[])", caller_name, text) if text else text

    return replace(miss, subject=swap(miss.subject), fix=swap(miss.fix))


def _user_line(comment: str) -> str | None:
    """The "file:line in function" PyTorch appends to a guard's verbose text, if any."""
    found = re.search(r"# ([^#]+?:\d+) in \w+", comment)
    return found.group(1).strip() if found else None


def _tensor_miss(found: re.Match[str], text: str, caller: str | None) -> Miss:
    tensor = user_source(found.group("source"))
    what, index = found.group("what"), found.group("index")
    values = _EXPECTED_ACTUAL.search(found.group("rest").strip())
    expected = values.group("expected") if values else None
    actual = values.group("actual") if values else None
    where = f" at {caller}" if caller else ""
    if what in ("size", "stride") and index is not None:
        subject = f"{tensor}.{what}({index})"
        if what == "stride":
            fix = f"pass {tensor}.contiguous(){where}, as at capture (or capture with this layout)"
            return Miss("stride", subject, expected, actual, fix, text, caller)
        fix = (
            f"torch._dynamo.mark_dynamic({tensor}, {index}) before the first call (or dynamic=True in "
            f"torch.compile), then capture again: one entry for every {tensor}.size({index})"
        )
        return Miss("size", subject, expected, actual, fix, text, caller)
    if what == "dtype":
        captured = _DTYPES.get(expected or "", expected)
        now = _DTYPES.get(actual or "", actual)
        fix = f"convert before the call so every call brings one dtype: {tensor}.to(torch.{captured})"
        return Miss("dtype", f"{tensor}.dtype", captured, now, fix, text, caller)
    if what == "requires_grad":
        flag = re.search(r"requires_grad=(\d)", found.group("rest"))
        captured = (flag.group(1) == "1") if flag else None
        fix = (
            f"call with {tensor}.detach() (or under torch.no_grad()), as at capture"
            if captured is False
            else f"call with {tensor}.requires_grad_(), as at capture"
        )
        return Miss(
            "requires_grad",
            f"{tensor}.requires_grad",
            None if captured is None else str(captured),
            None if captured is None else str(not captured),
            fix,
            text,
            caller,
        )
    if what == "rank":
        return Miss("rank", f"{tensor}.dim()", expected, actual, None, text, caller)
    return Miss("other", f"{tensor}: {what}", expected, actual, None, text, caller)


def _compared_miss(found: re.Match[str], text: str, now: Any, has_now: bool, line: str | None) -> Miss:
    left, op, right = found.group("left"), found.group("op"), found.group("right")
    source, value = (left, right) if _reads_frame(left) else (right, left)
    who = user_source(source)
    said_now = _said(now) if has_now else None
    if op not in ("==", "is"):  # a range a dynamic size was compiled for: "2 <= L['x'].size()[0]"
        at_capture = f"{text.replace(source, who)}"
        if re.fullmatch(r"2", value) and ".size()" in source and op in ("<=", ">="):
            fix = f"{who} of 0 or 1 gets a graph of its own: replay --update saves this one too"
            return Miss("size_0_1", who, at_capture, said_now, fix, text, line)
        return Miss("size", who, at_capture, said_now, None, text, line)
    if who.endswith(".training"):
        module = who.removesuffix(".training")
        fix = f"call {module}.{'eval' if value == 'False' else 'train'}() before the call, as at capture"
        return Miss("mode", who, value, said_now, fix, text, line)
    if source.startswith("len("):
        return Miss("length", who, value, said_now, None, text, line)
    if re.search(r"\['lr'\]$", source):
        fix = f"give the optimizer a tensor lr (lr=torch.tensor({value})): an input, never compiled in"
        return Miss("float_constant", who, value, said_now, fix, text, line)
    if re.fullmatch(r"-?(\d+\.\d*|\.\d+|\d+(\.\d*)?e[-+]?\d+|inf|nan)", value):
        fix = f"pass {who.removeprefix('global ')} as a tensor (torch.tensor({value})): an input, not a constant"
        return Miss("float_constant", who, value, said_now, fix, text, line)
    if re.fullmatch(r"-?\d+", value):
        fix = f"dynamic=True in torch.compile, or pass {who.removeprefix('global ')} as a tensor"
        return Miss("int_constant", who, value, said_now, fix, text, line)
    return Miss("constant", who, value, said_now, None, text, line)


def _dropped_miss(found: re.Match[str], text: str, now: Any, has_now: bool, line: str | None) -> Miss:
    """A guard PyTorch's precompile dropped that replay checks on every call (_torch/guards.py)."""
    source, value, kind = found.group("source"), found.group("value"), found.group("kind")
    who = user_source(source)
    value = re.sub(r" (code|contents) [0-9a-f]{8,}", "", value)
    if kind == "MODULE_HOOKS":
        name = hooks_owner(source)
        captured = "no hooks" if value == "tuple []" else "the hooks it had"
        count = (
            f"{len(now)} hook{'' if len(now) == 1 else 's'}" if has_now and isinstance(now, tuple) else "other hooks"
        )
        fix = f"capture again with the hooks {name} has now, registered before its first compiled call"
        return Miss("hooks", f"{name}'s hooks", captured, count, fix, text, line)
    if kind == "CLASS_CONTENTS":
        return Miss("class", value, "as captured", "changed since capture", None, text, line)
    return Miss("object", who, value, "another value" if not has_now else _said(now), None, text, line)


def _reads_frame(side: str) -> bool:
    return "L[" in side or "G[" in side


def _said(value: Any) -> str:
    """A value read now, as the guard text writes values."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
