"""The OpInfo corpus over PyTorch's Core ATen opset (issue 23): each core operator's OpInfo
samples compiled with aot_eager into a store, one store per (OpInfo, dtype, static/dynamic) and
one compile per sample, then lower-checked graph by graph. tests/python/test_mlir_opinfo.py runs
a sample of it, benchmarks/mlir_opinfo.py all of it.

Mapping (core operator -> OpInfo): every OpInfo's first samples are traced as aot_eager would
(make_fx over the functionalized call: CompositeImplicit ops decomposed, no mutations); an
OpInfo is a candidate for each core operator its trace calls, and each operator takes its best
candidate: one named after it (name or aten_name, leading underscores ignored), else one whose
last dotted name part is, else the narrowest trace. Which core operators a stored graph really
holds is read from the store afterwards; only those graphs count for an operator.
"""

from __future__ import annotations

import itertools
import re
import sys
import time
import types
import unittest
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import torch

import dynamo_replay as dr
from dynamo_replay import mlir
from dynamo_replay.errors import GraphError
from dynamo_replay.graphs.stored import read_compile

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}
SCAN = 12  # samples looked at per case to find those that reach its operators
DEFAULT_CAP = 4  # samples compiled per case


def _import_op_db() -> list[Any]:
    # common_utils imports expecttest (a test-only dependency the venv may lack) for a TestCase
    # base class only; the OpInfos themselves never use it.
    if "expecttest" not in sys.modules:
        try:
            import expecttest  # noqa: F401
        except ImportError:
            stub = types.ModuleType("expecttest")
            stub.TestCase = unittest.TestCase  # type: ignore[attr-defined]
            sys.modules["expecttest"] = stub
    from torch.testing._internal.common_methods_invocations import op_db

    return op_db


@cache
def opinfos() -> dict[str, Any]:
    """OpInfo key ("name" or "name.variant") -> OpInfo, for those with a dtype of DTYPES on CPU."""
    out = {}
    for info in _import_op_db():
        if dtypes_of(info):
            out[info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")] = info
    return out


def dtypes_of(info: Any) -> list[str]:
    supported = info.supported_dtypes("cpu")
    return [name for name, dtype in DTYPES.items() if dtype in supported]


@cache
def core_ops() -> tuple[str, ...]:
    """The Core ATen opset: every aten overload tagged `core`, as "aten::add.Tensor" (the IR's
    spelling). torch.ops.aten creates packets lazily, so the registered schemas are walked."""
    found = set()
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        overload = schema.overload_name or "default"
        op = getattr(getattr(torch.ops.aten, schema.name[6:]), overload)
        if torch.Tag.core in op.tags:
            found.add(f"{schema.name}.{overload}")
    return tuple(sorted(found))


# Operators outside the Core ATen opset that real graphs still carry (issue 36's held-out tail):
# covered the same way wherever an OpInfo's samples reach them.
HELD_OUT_OPS = (
    "aten::eye.default",
    "aten::eye.m",
    "aten::adaptive_max_pool2d.default",
    "aten::adaptive_max_pool3d.default",
    "aten::_trilinear.default",
    "aten::bitwise_left_shift.Tensor",
    "aten::bitwise_right_shift.Tensor",
    "aten::_fft_c2c.default",
    "aten::masked_select.default",
    "aten::fake_quantize_per_tensor_affine_cachemask.default",
    "aten::fake_quantize_per_channel_affine_cachemask.default",
)


def covered_ops() -> tuple[str, ...]:
    """What the corpus covers: the Core ATen opset and HELD_OUT_OPS."""
    return tuple(sorted(set(core_ops()) | set(HELD_OUT_OPS)))


def seed_of(key: str) -> int:
    """A case's seed, from its key alone: samples do not depend on the order cases run in."""
    return zlib.crc32(key.encode())


# -- samples ------------------------------------------------------------------------------


def _tensors_out(value: Any) -> tuple[Any, list[torch.Tensor]]:
    """(structure with each tensor replaced by its index, the tensors)."""
    tensors: list[torch.Tensor] = []

    def walk(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            tensors.append(v)
            return _Slot(len(tensors) - 1)
        if isinstance(v, (list, tuple)):
            return type(v)(walk(x) for x in v)
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        return v

    return walk(value), tensors


@dataclass(frozen=True)
class _Slot:
    index: int


def _fill(structure: Any, tensors: tuple[torch.Tensor, ...]) -> Any:
    if isinstance(structure, _Slot):
        return tensors[structure.index]
    if isinstance(structure, (list, tuple)):
        return type(structure)(_fill(x, tensors) for x in structure)
    if isinstance(structure, dict):
        return {k: _fill(x, tensors) for k, x in structure.items()}
    return structure


def sample_function(op: Callable[..., Any], sample: Any, name: str) -> tuple[Callable[..., Any], list[torch.Tensor]]:
    """A function of the sample's tensors that calls op on the whole sample (its other
    arguments are constants), with a code object of its own named `name`: each sample is a
    frame, and compile, of its own, and no automatic-dynamic state is shared between them."""
    structure, tensors = _tensors_out((sample.input, sample.args, sample.kwargs))

    def call(*tensors: torch.Tensor) -> Any:
        first, args, kwargs = _fill(structure, tensors)
        return op(first, *args, **kwargs)

    fn = types.FunctionType(call.__code__.replace(co_name=name), call.__globals__, name, None, call.__closure__)
    return fn, tensors


def _only_tensors(value: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.layout == torch.strided
    if isinstance(value, (list, tuple)):
        return len(value) > 0 and all(_only_tensors(v) for v in value)
    return False


def traced_ops(op: Callable[..., Any], sample: Any) -> set[str] | None:
    """The aten overloads aot_eager's graph would call for the sample (make_fx over the
    functionalized call), or None when it does not trace."""
    from torch.fx.experimental.proxy_tensor import make_fx

    fn, tensors = sample_function(op, sample, "opinfo_trace")
    try:
        graph = make_fx(torch.func.functionalize(fn, remove="mutations"), tracing_mode="real")(*tensors)
    except Exception:  # noqa: BLE001 - any failure only means: not a candidate
        return None
    return {_op_name(n.target) for n in graph.graph.nodes if n.op == "call_function" and hasattr(n.target, "_schema")}


def _op_name(target: Any) -> str:
    return f"{target._schema.name}.{target._overloadname}"


def _first_samples(info: Any, dtype: str, count: int, seed: int) -> list[Any]:
    torch.manual_seed(seed)
    return list(itertools.islice(info.sample_inputs("cpu", DTYPES[dtype]), count))


# -- mapping ------------------------------------------------------------------------------


def _name_tier(info: Any, op: str) -> int:
    """0: the OpInfo is named after the operator (leading underscores ignored), 1: its last
    dotted part is ("nn.functional.gelu"), 2: neither."""
    name = op.split("::")[1].split(".")[0].lstrip("_")
    if name in {info.name.lstrip("_"), (info.aten_name or "").lstrip("_")}:
        return 0
    return 1 if info.name.split(".")[-1].lstrip("_") == name else 2


def opinfo_map(progress: Callable[[str], None] | None = None) -> dict[str, list[str]]:
    """core operator -> [OpInfo key] (empty when no OpInfo's samples reach it); see the
    module docstring for the method."""
    core = set(covered_ops())
    reach: dict[str, dict[str, int]] = {}  # core op -> {OpInfo key: distinct ops in its trace}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n, (key, info) in enumerate(opinfos().items()):
            if progress and n % 100 == 0:
                progress(f"mapping: {n}/{len(opinfos())} OpInfos traced")
            dtype = "float32" if "float32" in dtypes_of(info) else dtypes_of(info)[0]
            try:
                samples = _first_samples(info, dtype, SCAN, seed_of(key))
            except Exception:  # noqa: BLE001 - an OpInfo whose samples cannot be made maps to nothing
                continue
            for sample in samples:
                ops = traced_ops(info.op, sample) or set()
                for op in ops & core:
                    best = reach.setdefault(op, {})
                    best[key] = min(best.get(key, 1 << 30), len(ops))
    out = {}
    for op in sorted(core):
        found = reach.get(op, {})
        ranked = sorted(found, key=lambda k: (_name_tier(opinfos()[k], op), found[k], k))
        out[op] = ranked[:1]
    return out


# -- cases --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    opinfo: str
    dtype: str
    dynamic: bool
    targets: tuple[str, ...]  # the core operators this OpInfo stands for

    @property
    def key(self) -> str:
        return f"{self.opinfo}|{self.dtype}|{'dynamic' if self.dynamic else 'static'}"


def cases_for(mapping: dict[str, list[str]], dynamic: tuple[bool, ...] = (False, True)) -> list[Case]:
    by_opinfo: dict[str, list[str]] = {}
    for op, keys in mapping.items():
        for key in keys:
            by_opinfo.setdefault(key, []).append(op)
    return [
        Case(key, dtype, dyn, tuple(sorted(ops)))
        for key, ops in sorted(by_opinfo.items())
        for dtype in dtypes_of(opinfos()[key])
        for dyn in dynamic
    ]


def choose_samples(case: Case, cap: int) -> tuple[list[tuple[int, Any]], list[dict[str, Any]]]:
    """Up to `cap` of the first SCAN samples, taken in turn for each target operator among those
    whose trace reaches it (else the first that run); and a record for each sample left out
    for a reason (fails in eager, output not all tensors)."""
    info = opinfos()[case.opinfo]
    skipped: list[dict[str, Any]] = []
    try:
        samples = _first_samples(info, case.dtype, SCAN, seed_of(f"{case.opinfo}|{case.dtype}"))
    except Exception as e:  # noqa: BLE001
        return [], [{"sample": None, "status": "skipped", "reason": f"samples not made: {_reason(e)}"}]
    usable, reaching = [], {op: [] for op in case.targets}
    for index, sample in enumerate(samples):
        structure, tensors = _tensors_out((sample.input, sample.args, sample.kwargs))
        if any(t.layout != torch.strided or t.is_complex() for t in tensors):
            skipped.append({"sample": index, "status": "skipped", "reason": "non-strided or complex input"})
            continue
        try:
            first, args, kwargs = _fill(structure, tuple(t.clone() for t in tensors))
            out = info.op(first, *args, **kwargs)
        except Exception as e:  # noqa: BLE001
            skipped.append({"sample": index, "status": "skipped", "reason": f"fails in eager: {_reason(e)}"})
            continue
        if not _only_tensors(out):
            skipped.append(
                {"sample": index, "status": "skipped", "reason": f"non-tensor output ({type(out).__name__})"}
            )
            continue
        usable.append(index)
        for op in (traced_ops(info.op, sample) or set()) & set(case.targets):
            reaching[op].append(index)
    chosen: list[int] = []
    queues = [q for q in reaching.values() if q] or [usable]
    while len(chosen) < cap and any(queues):
        for q in queues:
            while q and q[0] in chosen:
                q.pop(0)
            if q and len(chosen) < cap:
                chosen.append(q.pop(0))
    return [(i, samples[i]) for i in sorted(chosen)], skipped


def _reason(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


# -- running a case ---------------------------------------------------------------------


def run_case(case: Case, directory: Path, cap: int = DEFAULT_CAP) -> dict[str, Any]:
    """Captures the case's samples into directory/job.dynrep, one compile each, lower-checks the
    store and returns {"case", "samples": [per sample: status, reason], "graphs": [per graph:
    sample, stage, error, issue ops, core ops it holds], "seconds"}."""
    start = time.perf_counter()
    info = opinfos()[case.opinfo]
    store = directory / "job.dynrep"
    directory.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        chosen, records = choose_samples(case, cap)
        frames: dict[int, int] = {}  # Dynamo frame id -> sample index
        torch._dynamo.reset()  # compile ids restart at 0/0 in each store
        torch.manual_seed(seed_of(case.key))
        with dr.capture(store, precompile=False):
            for index, sample in chosen:
                name = f"opinfo_sample_{index}"
                fn, tensors = sample_function(info.op, sample, name)
                frames[_next_frame()] = index
                try:
                    # The sample's other arguments (kernel size, padding, alpha) are the operator's
                    # configuration, constants in a model (module attributes): dynamic=True makes
                    # the tensors' dims symbolic, not them.
                    with torch._dynamo.config.patch(specialize_int=True, specialize_float=True):
                        torch.compile(fn, backend="aot_eager", dynamic=case.dynamic, fullgraph=True)(*tensors)
                    records.append({"sample": index, "status": "compiled"})
                except Exception as e:  # noqa: BLE001 - a compile failure is a result, not a lowering failure
                    records.append({"sample": index, "status": "compile failed", "reason": _reason(e)})
        captured = time.perf_counter()
    graphs = []
    if any(r["status"] == "compiled" for r in records):
        try:
            report = mlir.lower_check(store)
        except GraphError as e:  # no replay-mlir (a rebuild under way): the case is lost, not failed
            for r in records:
                if r["status"] == "compiled":
                    r.update(status="not checked", reason=_reason(e))
            report = {"graphs": []}
        held = {}
        for g in final_attempts(report["graphs"]):
            if g["compile"] not in held:
                held[g["compile"]] = _graph_ops(store, g["compile"], g["graph"])
            graphs.append(
                {
                    "sample": frames.get(int(g["compile"].split("/")[0])),
                    "compile": g["compile"],
                    "graph": g["graph"],
                    "stage": g["stage"],
                    "matched": bool(g["matched"]),
                    "error": g.get("error", ""),
                    "issues": [_issue(i) for i in g.get("issues", [])],
                    "outputs": [o for o in g.get("outputs", []) if o.get("status") not in ("bitwise", "close")],
                    # "core_aten" when lower-check fell back to the graph's Core ATen decomposition
                    "opset": g.get("opset", "aten"),
                    "opset_reason": g.get("opset_reason", ""),
                    "core_ops": sorted(held[g["compile"]] & set(covered_ops())),
                    "symbolic": _symbolic(store, g["compile"]),
                }
            )
        _stored.cache_clear()  # the store's sample bytes are not needed again
        # A sample whose compiled call failed in PyTorch itself (a runtime assert on an unbacked
        # size) has nothing to be compared with: it is named in its record, not counted.
        failed = {r["sample"] for r in records if r["status"] == "compile failed"}
        graphs = [g for g in graphs if g["sample"] not in failed]
        for r in records:  # a sample that compiled to no graph (nothing for aot_eager to do)
            if r["status"] == "compiled" and not any(g["sample"] == r["sample"] for g in graphs):
                r.update(status="no graph", reason="the compile produced no aten graph")
    return {
        "case": {"opinfo": case.opinfo, "dtype": case.dtype, "dynamic": case.dynamic, "targets": list(case.targets)},
        "samples": sorted(records, key=lambda r: (r["sample"] is None, r["sample"] or 0)),
        "graphs": graphs,
        "seconds": {"capture": round(captured - start, 3), "total": round(time.perf_counter() - start, 3)},
    }


def final_attempts(graphs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A compile Dynamo restarted is stored once per attempt ("0/0", "0/0_1"): the last one is
    what ran."""

    def attempt(g: dict[str, Any]) -> tuple[str, int]:
        compile_id, _, n = g["compile"].partition("_")
        return compile_id, int(n or 0)

    last: dict[tuple[str, str], int] = {}
    for g in graphs:
        compile_id, n = attempt(g)
        last[compile_id, g["graph"]] = max(n, last.get((compile_id, g["graph"]), 0))
    return [g for g in graphs if attempt(g)[1] == last[attempt(g)[0], g["graph"]]]


def _next_frame() -> int:
    from torch._dynamo import convert_frame

    return convert_frame.FRAME_COUNTER


def _issue(issue: dict[str, Any]) -> dict[str, str]:
    return {"op": issue.get("op", ""), "message": issue.get("message", "")}


@cache
def _stored(store: Path, compile_id: str) -> Any:
    """One read of a compile for both questions asked of it (run_case clears this)."""
    return read_compile(store, compile_id)


def _graph_ops(store: Path, compile_id: str, graph: str) -> set[str]:
    stored = _stored(store, compile_id)
    ir = stored.irs.get(graph) or stored.ir("forward")[1]
    return {n["target"] for n in ir.get("nodes", []) if n.get("op") == "call_function"}


def _symbolic(store: Path, compile_id: str) -> bool:
    """Whether the compile has a size symbol (a dynamic compile whose sizes all specialized has none)."""
    return bool(_stored(store, compile_id).symbols)


def failure_reason(graph: dict[str, Any]) -> str:
    """One line naming why a graph did not match: its first issue (with the operator), the
    outputs that differ, else its stage and error. Numbers that vary by sample are left out,
    so equal reasons group."""
    if graph["issues"]:
        first = graph["issues"][0]
        message = _one_line(first["message"]) or "not lowered"
        return f"{graph['stage']}: {message}" + ("" if first["op"] in message else f" ({first['op']})")
    if graph["stage"] == "differs" and graph.get("outputs"):
        shape = any(o["status"] in ("shape differs", "dtype differs") for o in graph["outputs"])
        return "differs: output shape or dtype" if shape else "differs: values beyond tolerance"
    return f"{graph['stage']}: {_one_line(graph['error'])}".rstrip(": ")


def _one_line(message: str) -> str:
    """An MLIR diagnostic's first error, without its location (the corpus's own source line)."""
    if "error: " in message:
        message = message.split("error: ", 1)[1]
    message = re.sub(r"loc\([^)]*\)", "", message.splitlines()[0] if message.strip() else "")
    return " ".join(message.split())[:160]
