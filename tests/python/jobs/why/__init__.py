"""Programs that prove the advice of `replay-inspect why`: each is a small job shaped like the
reports users file against PyTorch's dynamic shapes, in a BROKEN variant (it fails to compile
under fullgraph=True, breaks the graph, or recompiles) and a FIXED variant that applies exactly
the advised edit and then compiles once, with no error and no graph break, giving what eager gives.

Interface of every program module (listed in PROGRAMS):

    run(variant: str) -> dict
        variant is "broken" or "fixed". Resets Dynamo, compiles with backend="aot_eager" and
        makes the program's calls. Never raises for a compile failure: it returns
        {"error": "Type: first line" or None, "matches_eager": bool, "calls": int}, where
        matches_eager says every call that ran gave what the BROKEN program gives in eager (so a
        fix must keep the program's meaning), on the same arguments.

    EXPECT: dict, the why-answer for the BROKEN variant:
        advice   one of ADVICE
        outcome  "failure" (fullgraph=True compile error), "graph_break" or "recompile"
        failure  outcome == "failure"
        expr     the failing expression as PyTorch prints it ("Eq(u0, 0)"), or None
        file     the file where the failure or guard originates (a library file for
                 guard_or_false; this program's file otherwise)
        line     the line in `file` marked `# why: here`: the failing line; for a graph break,
                 the line that breaks; for a recompile, the compiled function's `def` line (the
                 failing guard is on an input)
        symbols  {"u0": {"op": regex matching the operator that made it ("nonzero",
                 "item|_local_scalar_dense"), "line": its line in this program, marked
                 `# why: u0`}}, or {} (graph breaks and recompiles)
        recompile  for a recompile, the cause of the second compile as capture records it
                 (dynamo_replay.recompile): {"source": "x.size()[0]", "expected": "8",
                 "seen": "16"}, each a substring of that field; None otherwise
        compiles {"broken": compile entries the broken variant's store holds, "fixed": 1}.
                 A failure is 1; a recompile 2; a graph break 3 (the first attempt, restarted;
                 its retry up to the break; the resume function after it)

Lines are found from the markers (marker_line), so editing a program never leaves EXPECT stale.
The stores: tests/python/why_programs.py (why_stores; the session fixture of the same name).
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

# Every advice kind of `replay-inspect why`; each has at least one program below.
ADVICE = (
    "torch_check",
    "torch_cond",
    "guard_or_false",
    "data_dependent_loop",
    "capture_scalar_outputs",
    "capture_dynamic_output_shape_ops",
    "mark_unbacked",
    "float_constant",
    "mark_dynamic",
    "dtype_change",
    "requires_grad_change",
    "contiguous",
)

PROGRAMS = (
    "empty_selection",
    "clamp_length",
    "negative_length",
    "branch_on_count",
    "tensor_predicate",
    "library_padding",
    "loop_over_count",
    "loop_over_tolist",
    "item_scale",
    "tolist_split",
    "nonzero_rows",
    "masked_select_mean",
    "batch_of_one",
    "scale_factor",
    "growing_sequence",
    "dtype_change",
    "requires_grad_change",
    "stride_change",
)

VARIANTS = ("broken", "fixed")


@functools.cache
def _source_lines(file: str) -> tuple[str, ...]:
    return tuple(Path(file).read_text().splitlines())


def marker_line(file: str, tag: str = "here") -> int:
    """The 1-based line of `file` that ends with the comment `# why: <tag>`."""
    pattern = re.compile(rf"#\s*why:\s*{re.escape(tag)}\s*$")
    hits = [n for n, text in enumerate(_source_lines(file), 1) if pattern.search(text)]
    if len(hits) != 1:
        raise ValueError(f"{file}: {len(hits)} lines marked '# why: {tag}', expected one")
    return hits[0]


def load(name: str) -> ModuleType:
    return importlib.import_module(f"{__name__}.{name}")


def _same(a: Any, b: Any) -> bool:
    import torch

    if isinstance(a, torch.Tensor):
        return (
            isinstance(b, torch.Tensor)
            and a.shape == b.shape
            and a.dtype == b.dtype
            and torch.allclose(a.detach(), b.detach(), equal_nan=True)
        )
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


def compile_and_compare(
    fn: Callable[..., Any],
    calls: Iterable[Callable[[], tuple]],
    *,
    eager: Callable[..., Any] | None = None,
    fullgraph: bool = False,
    config: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Compiles fn (aot_eager, after a Dynamo reset) and makes each call, args from calls' makers
    (fresh each time, so mark_dynamic and friends mark the tensors that go in); each result is
    compared with `eager` (the broken program; fn by default) run on the same arguments. Eager
    runs the original, not fn: torch.cond run eagerly compiles, and would add a compile to the
    store. A compile error ends the calls and is returned."""
    import torch

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="aot_eager", fullgraph=fullgraph)
    result: dict[str, Any] = {"error": None, "matches_eager": True, "calls": 0}
    with torch._dynamo.config.patch(**(config or {})):
        for make in calls:
            args = make()
            expected = (eager or fn)(*args)
            try:
                got = compiled(*args)
            except Exception as error:  # the broken variant's compile failure is the point
                first = (str(error).strip().splitlines() or [""])[0]
                result["error"] = f"{type(error).__name__}: {first}"
                break
            result["calls"] += 1
            result["matches_eager"] = result["matches_eager"] and _same(got, expected)
    return result


def expect(
    file: str,
    *,
    advice: str,
    outcome: str,
    expr: str | None,
    broken_compiles: int,
    symbols: dict[str, str] | None = None,
    recompile: dict[str, str] | None = None,
    origin_file: str | None = None,
) -> dict[str, Any]:
    """EXPECT for the program in `file`: lines from its markers; symbols maps each symbol to the
    regex of the operator that made it (its line is marked `# why: <symbol>` in `file`)."""
    assert advice in ADVICE, advice
    assert outcome in ("failure", "graph_break", "recompile"), outcome
    origin = origin_file or file
    return {
        "advice": advice,
        "outcome": outcome,
        "failure": outcome == "failure",
        "expr": expr,
        "file": origin,
        "line": marker_line(origin),
        "symbols": {name: {"op": op, "line": marker_line(file, name)} for name, op in (symbols or {}).items()},
        "recompile": recompile,
        "compiles": {"broken": broken_compiles, "fixed": 1},
    }
