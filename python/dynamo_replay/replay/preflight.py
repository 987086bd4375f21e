"""`python -m dynamo_replay check STORE|URL [script [args]]`: what a replay would do on this host,
said before the job starts and without running it.

Store level: the store is used, or refused with every difference (the same checks replay makes,
replay/checks.py). Frame level, for each saved frame: it replays (for the inputs its saved
entries were compiled for), it compiles (its source changed, PyTorch could not save it, or the
store was captured without precompile), or it depends on a value only the running job has (a
guard PyTorch's precompile dropped, which replay checks when the job reaches the frame).

Exit codes, for deploy scripts: 0 every saved frame replays (those that depend on the job's
values included: they are listed); 3 the store is used but some frames compile; 4 the store is
refused (nothing replays); 1 the check could not run (Redis unreachable); 2 bad usage.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynamo_replay import schema
from dynamo_replay._core import Store, TraceEvent
from dynamo_replay.errors import StoreError
from dynamo_replay.replay.checks import Contents, Refused, check_all, read_store, source_differences
from dynamo_replay.replay.conditions import in_words
from dynamo_replay.schema import frame_name

EXIT_ALL_REPLAY, EXIT_ERROR, EXIT_USAGE, EXIT_SOME_COMPILE, EXIT_REFUSED = 0, 1, 2, 3, 4


@dataclass
class FramePlan:
    frame: str
    outcome: str  # "replays", "compiles" or "depends"
    why: str
    inputs: list[str] = field(default_factory=list)  # per saved entry: the input shapes its guards accept
    conditions: list[str] = field(default_factory=list)  # "depends": what must hold, in words (conditions.py)
    miss: dict[str, Any] | None = None  # check --run: the call that missed, as replay says it (misses.Miss)


@dataclass
class Preflight:
    store: str
    refused: str | None = None
    differences: list[str] = field(default_factory=list)
    frames: list[FramePlan] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fleet: dict[str, Any] | None = None
    ran: bool = False  # check --run: the job ran once under replay, and its misses are in the frames

    def add_run(self, summary: Any) -> None:
        """What a run of the job under replay did (its ReplaySummary): each frame that compiled
        takes replay's reason, the words of the replay summary; a frame the store does not hold
        is a note."""
        self.ran = True
        plans = {plan.frame: plan for plan in self.frames}
        for compiled in summary.compiled:
            name = frame_name(compiled.function, compiled.filename, compiled.line)
            plan = plans.get(name)
            if plan is None:
                self.notes.append(f"the run compiled {name}, which the store does not hold: {compiled.reason}")
                continue
            if plan.outcome == "compiles" and plan.miss is None and compiled.miss is None:
                continue  # check's own reason says it already
            plan.outcome, plan.why = "compiles", compiled.reason
            if compiled.miss is not None and plan.miss is None:
                plan.miss = compiled.miss.as_dict()
        for plan in self.frames:  # a frame whose values held on this run replayed
            if plan.outcome == "depends" and summary.hits.get(plan.frame):
                plan.outcome = "replays"

    @property
    def outcome(self) -> str:
        if self.refused is not None:
            return "refused"
        return "replay" if all(plan.outcome != "compiles" for plan in self.frames) else "partial"

    @property
    def exit_code(self) -> int:
        return {"replay": EXIT_ALL_REPLAY, "partial": EXIT_SOME_COMPILE, "refused": EXIT_REFUSED}[self.outcome]

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "refused": self.refused,
            "differences": self.differences,
            "frames": [dataclasses.asdict(plan) for plan in self.frames],
            "notes": self.notes,
            "fleet": self.fleet,
            "ran": self.ran,
        }

    def render(self, verbose: bool = False) -> str:
        """One line per frame: replays, compiles (why) or replays if (the conditions in words);
        `verbose` adds the raw guards and each saved entry's inputs."""
        lines = []
        if self.fleet is not None:
            lines.append(f"fleet {self.fleet['url']}: this host's environment {self.fleet['this_host']}")
            for entry in self.fleet["entries"]:
                if entry["matches"]:
                    lines.append(f"  entry {entry['id']}: this host takes it")
                else:
                    lines.append(f"  entry {entry['id']} ({entry['environment']}): not for this host:")
                    lines += [f"    {line}" for line in entry["differences"][:10]]
        if self.refused is not None:
            lines.append(f"{self.store}: refused: {self.refused}")
            lines += [f"  {difference}" for difference in self.differences]
        else:
            counts = {o: sum(p.outcome == o for p in self.frames) for o in ("replays", "compiles", "depends")}
            lines.append(
                f"{self.store}: used: {len(self.frames)} saved frames: {counts['replays']} replay, "
                f"{counts['compiles']} compile, {counts['depends']} replay if the job's values hold"
            )
        if self.refused is not None and self.frames:
            lines.append("  each saved frame, once the store is used:")
        for plan in self.frames:
            lines.append(f"  {_said(plan)}")
            if verbose:
                if plan.outcome == "depends":
                    lines.append(f"      guards: {plan.why}")
                lines += [f"      entry {index}: {shapes}" for index, shapes in enumerate(plan.inputs) if shapes]
        lines += [f"note: {note}" for note in self.notes]
        lines.append(
            {
                "replay": "every saved frame replays, given the values listed (exit 0)",
                "partial": "some frames compile (exit 3)"
                + ("" if self.ran else "; `check --run` runs the job once to name each miss"),
                "refused": "nothing replays: the job compiles as usual (exit 4)",
            }[self.outcome]
        )
        return "\n".join(lines)


_CONDITIONS_SHOWN = 4  # on a frame's line; --verbose gives every guard


def _said(plan: FramePlan) -> str:
    """A frame's plan in one line."""
    if plan.outcome == "compiles":
        return f"compiles   {plan.frame}: {plan.why}"
    if plan.outcome == "depends":
        shown = plan.conditions[:_CONDITIONS_SHOWN]
        more = len(plan.conditions) - len(shown)
        said = ", ".join(shown) + (f" and {more} more (--verbose)" if more > 0 else "")
        return f"replays if {said or plan.why}: {plan.frame}"
    return f"replays    {plan.frame}"


def check_store(path: str, key: str | bytes | None = None, job: list[str] | None = None) -> Preflight:
    """What replay(path) would do here. `job`: the script and arguments the job will run with."""
    from dynamo_replay import _torch

    result = Preflight(store=path)
    try:
        contents = read_store(path)
    except Refused as refusal:
        result.refused = str(refusal)
        return result
    try:
        check_all(contents, key, _torch.PRECOMPILE_SETTINGS)
    except Refused as refusal:
        result.refused, result.differences = str(refusal), refusal.differences
    events = _StoreEvents(path)
    result.frames = _frame_plans(contents, events.saved_inputs())
    if job and events.job:
        result.notes += _job_notes(events.job, job)
    return result


def _frame_plans(contents: Contents, entries: dict[str, list[str]]) -> list[FramePlan]:
    data = contents.data
    changed = source_differences(data.sources)
    dropped: dict[str, list[Any]] = {}
    for guard in data.dropped_guards:
        if guard.risky and not _imported_module(guard) and not _builtin(guard) and not _dynamo_import(guard):
            dropped.setdefault(guard.frame, []).append(guard)
    plans = []
    for frame in data.frames:
        inputs = entries.get(frame, [])
        edited = [text for text in changed if _source_of(frame, text)]
        if edited:
            plans.append(FramePlan(frame, "compiles", edited[0]))
        elif frame in data.not_saved:
            plans.append(FramePlan(frame, "compiles", f"not saved at capture: {data.not_saved[frame]}"))
        elif not data.precompiled:
            plans.append(
                FramePlan(
                    frame, "compiles", "captured with --no-precompile: Dynamo traces it, its graphs come from the store"
                )
            )
        elif any(guard.value is None for guard in dropped.get(frame, [])):
            guard = next(guard for guard in dropped[frame] if guard.value is None)
            plans.append(
                FramePlan(
                    frame,
                    "compiles",
                    f"{guard.source} ({guard.kind}) has no description that another process can compare",
                )
            )
        elif dropped.get(frame):
            which = "; ".join(f"{guard.source} is {guard.value} ({guard.kind})" for guard in dropped[frame][:3])
            words = list(dict.fromkeys(in_words(guard) for guard in dropped[frame]))
            plans.append(FramePlan(frame, "depends", f"replays if, when the job reaches it, {which}", inputs, words))
        else:
            plans.append(FramePlan(frame, "replays", "for inputs its saved entries accept", inputs))
    return plans


def _imported_module(guard: Any) -> bool:
    """Whether a dropped guard checks that a global is a module its file imports under that name
    (`import torch`, `import numpy as np`): what every process running the file gets."""
    found = re.fullmatch(r"G\['([A-Za-z_]\w*)'\]", guard.source)
    module = (guard.value or "").removeprefix("module ")
    if not found or not guard.value or not guard.value.startswith("module ") or not re.fullmatch(r"[\w.]+", module):
        return False
    name = found.group(1)
    filename = guard.frame.split(" (", 1)[-1].removesuffix(")").rpartition(":")[0]
    try:
        text = Path(filename).read_text(errors="replace")
    except OSError:
        return False
    escaped = re.escape(module)
    return bool(
        re.search(rf"^import {escaped} as {name}\s*$", text, re.M)
        if name != module.split(".")[0]
        else re.search(rf"^import {escaped}\b", text, re.M)
    )


def _dynamo_import(guard: Any) -> bool:
    """Whether a dropped guard checks a module global Dynamo installed itself for a frame
    (`__import_transformers_dot_activation`): replay installs it again from the saved frame."""
    return bool(
        re.fullmatch(r"G\['__import_\w+'\](\.\w+)*", guard.source) and (guard.value or "").startswith("module ")
    )


def _builtin(guard: Any) -> bool:
    """Whether a dropped guard checks a builtin through the frame's builtins (the same object in
    every process of the captured Python, which the fingerprint pins)."""
    return bool(
        re.fullmatch(r"G\['__builtins_dict___\d+'\]\['\w+'\]", guard.source)
        and (guard.value or "").startswith(("callable builtins.", "class builtins."))
    )


def _source_of(frame: str, difference: str) -> bool:
    """Whether a source difference (checks.source_differences) is about this frame's code."""
    location = frame.split(" (", 1)[-1].removesuffix(")")  # names have no " (", paths may
    filename, _, line = location.rpartition(":")
    found = difference.split(" (", 1)[-1].rsplit(") changed", 1)[0]  # FILE:FIRST-LAST
    file_part, _, lines = found.rpartition(":")
    first, _, last = lines.partition("-")
    return (
        file_part == filename
        and line.isdigit()
        and first.isdigit()
        and last.isdigit()
        and int(first) <= int(line) <= int(last)
    )


class _StoreEvents:
    """What `check` reads of the store's events, in one pass: each compile's frame and guard
    list (replay-inspect's records: advisory, not part of any replay decision), and the job."""

    def __init__(self, path: str) -> None:
        self.names: dict[tuple[int, int, int], str] = {}
        self.guards: dict[tuple[int, int, int], list[dict[str, Any]]] = {}
        self.job: dict[str, Any] | None = None
        try:
            with Store.open(path) as store:
                for event in store.records(TraceEvent):
                    if event.name == "compilation_metrics":
                        metrics = json.loads(event.metadata_json) or {}
                        if metrics.get("co_name") and not metrics.get("fail_type"):
                            self.names[tuple(event.compile_id)] = schema.frame_name(
                                metrics["co_name"], metrics.get("co_filename"), metrics.get("co_firstlineno")
                            )
                    elif event.name == schema.EVENT_GUARDS and event.payload_key:
                        self.guards[tuple(event.compile_id)] = json.loads(store.get_blob(event.payload_key))
                    elif event.name == schema.EVENT_JOB and self.job is None:
                        self.job = json.loads(event.metadata_json) or None
        except (StoreError, ValueError):
            pass  # an unreadable event loses these notes, never the check

    def saved_inputs(self) -> dict[str, list[str]]:
        """frame -> for each compile of it, the tensor arguments its guards accept ("L['x']
        float32 [8]"), from the guard lists capture stored (replay-inspect show --guards)."""
        found: dict[str, list[str]] = {}
        for compile_id, frame in sorted(self.names.items()):
            found.setdefault(frame, []).append(", ".join(_argument_shapes(self.guards.get(compile_id, []))))
        return found


def _argument_shapes(guards: list[dict[str, Any]]) -> list[str]:
    """The tensor arguments a guard list accepts; parameters and buffers left out."""
    shapes = []
    for guard in guards:
        source = guard.get("source", "")
        if (
            guard.get("kind") != "TENSOR_MATCH"
            or not source.startswith("L[")
            or any(part in source for part in ("._parameters[", "._buffers[", "._modules["))
        ):
            continue
        dtype = re.search(r"torch\.\w+", guard.get("code", ""))
        size = re.search(r"size=(\[[^\]]*\])", guard.get("code", ""))
        shapes.append(f"{source} {dtype.group(0)[6:] if dtype else '?'} {size.group(1) if size else '(dynamic)'}")
    return shapes


def _job_notes(facts: dict[str, Any], job: list[str]) -> list[str]:
    """How the job about to start compares with the one captured (`dynamo_replay.job`): its
    script and arguments."""
    notes = []
    script = os.path.abspath(job[0])
    captured = facts.get("script") or ""
    if os.path.isfile(script) and captured:
        digest = hashlib.sha256(Path(script).read_bytes()).hexdigest()
        if script != captured:
            notes.append(
                f"the store was captured from {captured}, this job runs {script}: frames it does not reach stay unused"
            )
        elif digest != facts.get("script_sha256"):
            notes.append(f"{script} changed since capture (the frames above say which compiled code it touches)")
    elif not os.path.exists(script):
        notes.append(f"{job[0]}: no such file")
    captured_args = list(facts.get("argv") or [])[1:]
    if job[1:] != captured_args:
        notes.append(
            f"captured with arguments {captured_args}, this job passes {job[1:]}: where they change the "
            "inputs' shapes or the code taken, those frames compile (each entry above lists the inputs it "
            "accepts)"
        )
    return notes
