"""PyTorch's private API is touched in one place, dynamo_replay._torch: no other module of the
package names `torch._...`, `sys._getframe` or a frame's `f_locals`, reads a private attribute
of a PyTorch object (`op._schema`, `config._get_dict`: any underscore name PyTorch's own Python
defines and this package does not, through a dot or getattr) or a private operator
(`aten._foo`). An AST scan, so the `torch._check(...)` lines `why` writes as text do not count.
And each of _torch's readers of PyTorch's own stack frames finds what it reads in a real capture
of this PyTorch: a PyTorch that renames a local fails here, by name, instead of quietly leaving
facts out of stores. About 15 s (the scan reads PyTorch's sources once)."""

from __future__ import annotations

import ast
import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import dynamo_replay
from dynamo_replay import schema
from dynamo_replay.capture.graph_text import _dotted  # the dotted name of an attribute chain

PACKAGE = Path(dynamo_replay.__file__).resolve().parent
DOOR = PACKAGE / "_torch"


# A private name a file defines: `def _x(`, `self._x =`, `_x = ` or `_x: T` at the start of a line.
_DEFINED = re.compile(r"(?:\bdef\s+|\bself\.|^[ \t]*)(_[A-Za-z]\w*)\s*(?:\(|=(?!=)|:)", re.M)


def _defined_names(folder: Path, pattern: str) -> frozenset[str]:
    return frozenset(n for p in folder.rglob(pattern) for n in _DEFINED.findall(p.read_text(errors="replace")))


@functools.cache
def torch_private_names() -> frozenset[str]:
    """The underscore names PyTorch's Python (and its stubs of the C extension) defines that this
    package does not define itself: reading one off an object is reading PyTorch's private API."""
    import torch

    folder = Path(torch.__file__).parent
    defined = _defined_names(folder, "*.py") | _defined_names(folder, "*.pyi")
    return defined - _defined_names(PACKAGE, "*.py") - _NAMEDTUPLE_API


# A named tuple's public API, spelled with an underscore so as not to clash with field names.
_NAMEDTUPLE_API = frozenset({"_fields", "_field_defaults", "_asdict", "_replace", "_make"})


def _private_attribute(node: ast.AST) -> str:
    """The private PyTorch attribute a node reads (`x._schema`, `getattr(x, "_schema")`,
    `getattr(x, f"_is_{n}")`, `aten._foo`), or ""."""
    if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
        base = _dotted(node.value) or ""
        if base in ("self", "cls"):
            return ""
        if base == "aten" or base.startswith("torch.ops") or node.attr in torch_private_names():
            return ast.unparse(node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
        name = node.args[1] if len(node.args) >= 2 else None
        if isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value in torch_private_names():
            return f"{node.func.id}(..., {name.value!r})"
        if isinstance(name, ast.JoinedStr) and name.values:  # a private name made at run time
            first = name.values[0]
            if isinstance(first, ast.Constant) and str(first.value).startswith("_"):
                return f"{node.func.id}(..., {ast.unparse(name)})"
    return ""


def touchpoints(path: Path, root: Path = PACKAGE) -> list[str]:
    """`file:line: what` for each private PyTorch name or frame read in a Python file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        what = _private_attribute(node)
        if isinstance(node, ast.Attribute):
            name = _dotted(node) or ""
            if re.match(r"torch\._[A-Za-z]", name) or node.attr in ("_getframe", "f_locals", "f_back"):
                what = name or node.attr
        elif isinstance(node, ast.ImportFrom) and re.match(r"torch\._[A-Za-z]", node.module or ""):
            what = f"from {node.module} import"
        elif isinstance(node, ast.Import):
            what = next((f"import {a.name}" for a in node.names if re.match(r"torch\._[A-Za-z]", a.name)), "")
        if what:
            found.append((node.lineno, what))
    # One line per place: the longest name found on a line (torch._dynamo.config, not torch._dynamo too).
    longest: dict[int, str] = {}
    for line, what in found:
        if len(what) > len(longest.get(line, "")):
            longest[line] = what
    return [f"{path.relative_to(root)}:{line}: {what}" for line, what in sorted(longest.items())]


def test_no_private_touchpoint_outside_the_door():
    outside = [p for p in PACKAGE.rglob("*.py") if DOOR not in p.parents]
    assert outside, PACKAGE
    found = [hit for path in sorted(outside) for hit in touchpoints(path)]
    assert found == [], "private PyTorch names outside dynamo_replay._torch:\n" + "\n".join(found)


def test_the_scan_sees_a_touchpoint(tmp_path):
    """The test above can fail: each form it looks for is found in a file that has it."""
    sample = tmp_path / "sample.py"
    lines = [
        "import sys",
        "import torch._dynamo",
        "from torch._guards import TracingContext",
        "x = torch._dynamo.config.verbose",
        "f = sys._getframe(1)",
        "y = f.f_locals",
        "s = 'torch._check(n)'",
        "schema = op._schema",
        "values = module._get_dict(ignored_keys=[])",
        "supported = getattr(torch.cpu, f'_is_{name}_supported')",
        "op = aten._scaled_dot_product_flash_attention_for_cpu_backward.default",
        "mine = self._stores",
    ]
    sample.write_text("\n".join(lines) + "\n")
    hits = [h.split(": ", 1)[1] for h in touchpoints(sample, tmp_path)]
    assert set(hits) >= {
        "import torch._dynamo",
        "from torch._guards import",
        "torch._dynamo.config.verbose",
        "sys._getframe",
        "f.f_locals",
        "op._schema",
        "module._get_dict",
        "getattr(..., f'_is_{name}_supported')",
        "aten._scaled_dot_product_flash_attention_for_cpu_backward",
    }
    assert not any("torch._check" in h or "_stores" in h for h in hits)


@pytest.fixture(scope="module")
def fresh_capture(tmp_path_factory) -> dict[str, list[dict]]:
    """every_record_job.py captured with this PyTorch: {event name: [metadata, ...]}."""
    store = tmp_path_factory.mktemp("touchpoints") / "job.dynrep"
    job = Path(__file__).resolve().parents[1] / "data" / "every_record_job.py"
    subprocess.run([sys.executable, str(job), str(store)], check=True, capture_output=True, timeout=300)
    events: dict[str, list[dict]] = {}
    with dynamo_replay.Store.open(store) as s:
        for e in s.records(dynamo_replay.TraceEvent):
            events.setdefault(e.name, []).append(json.loads(e.metadata_json or "null"))
    return events


# Each reader of PyTorch's frames in dynamo_replay._torch, and the fact of a capture it provides.
FRAME_READERS = {
    "graph_ir.graph_being_logged (the graph module and its scope while PyTorch logs it)": lambda ev: any(
        m.get("format") == 2 for m in ev[schema.EVENT_GRAPH_IR]
    ),
    "tensor_samples.compiled_graph_globals (the compiled graph globals of the compile)": lambda ev: (
        len(ev.get(schema.EVENT_SAMPLE, [])) > 0 and any(m["calls"] > 0 for m in ev[schema.EVENT_HITS])
    ),
    "shapes.creation_context (the operator and node that made a symbol)": lambda ev: any(
        m["unbacked"] and m["op"] and m["node"] for m in ev[schema.EVENT_SYMBOL_ORIGIN]
    ),
    "shapes.guard_context (a runtime assert's kind)": lambda ev: any(
        m["kind"] == "runtime_assert" for m in ev[schema.EVENT_SHAPE_GUARD]
    ),
    "shapes.recompiling_frame (the call's values at a recompile)": lambda ev: any(
        (c["expected"], c["seen"]) == ("4", "6") for m in ev[schema.EVENT_RECOMPILE] for c in m["causes"]
    ),
    "shapes.compiling_frame_locals and calling_user_frame (the caller's names)": lambda ev: any(
        m["arguments"].get("L['x']") == "marked" for m in ev[schema.EVENT_CALL_SITE]
    ),
    "shapes.live_partial_graph and _failing_graph (a failed compile's partial graph)": lambda ev: any(
        m["from"] == "partial_graph" and 0 <= m["values"].get("u0", -1) <= 8
        for m in ev.get(schema.EVENT_SYMBOL_VALUES, [])
    ),
    "shapes.symbol_values_at_failure (values where compiled code raised)": lambda ev: any(
        m["values"] == {"u0": 5} and m["asserts"][0]["expr"] == "Eq(Mod(u0, 2), 0)"
        for m in ev.get(schema.EVENT_RUNTIME_FAILURE, [])
    ),
    "shapes.constraint_facts (a constraint violation's marked dimensions)": lambda ev: any(
        k["specialized"] == 8 for m in ev[schema.EVENT_COMPILE_FAILURE] for k in m.get("constraints", [])
    ),
    "shapes.failure_facts (a graph break's type from its exception)": lambda ev: any(
        m["gb_type"] for m in ev.get(schema.EVENT_GRAPH_BREAK, [])
    ),
}


@pytest.mark.parametrize("reader", sorted(FRAME_READERS))
def test_frame_reader_finds_what_it_reads(reader, fresh_capture):
    assert FRAME_READERS[reader](fresh_capture), f"{reader} found nothing in this PyTorch's frames"
