"""MLIR lowering on a held-out corpus: torch-mlir's end-to-end test suite.

torch-mlir (https://github.com/llvm/torch-mlir) keeps some 1,800 small tests, each an nn.Module and
the calls that exercise it, in projects/pt1/python/torch_mlir_e2e_test/test_suite/. None was written
for this project, so they measure the lowering on programs it was not tuned on. For each test, in
each of two modes, static and dynamic (torch.compile's dynamic=True), this runs the module eagerly
as torch-mlir's golden trace does, then compiles it with torch.compile(backend="aot_eager") inside
dynamo_replay.capture(precompile=False), on the same inputs (and runs the backward where an output
needs a gradient, as tests/python/compiled_capture.py does), and lower-checks the store: every aten
graph lowered to MLIR, JIT-compiled, run on the stored inputs and compared with PyTorch's outputs.

Each (test, mode) is one of:
  matched         every graph matched
  differs         a graph ran and an output differs from PyTorch's: a lowering bug, the serious one
  not lowered     a graph has nodes with no lowering (the operators are listed)
  refused         a graph stopped at another stage (unsupported value, not verified, not compiled...)
  timed out       lower-check ran past CASE_TIMEOUT_S; crashed: its worker process died in lower-check
  no graph        the compile stored no aten graph (Dynamo ran it eagerly, or had nothing to compile)
  capture failed  the eager call, torch.compile or the backward raised, hung or crashed
The pass rate is matched / counted, counted being the cases that stored a graph; "no graph" and
"capture failed" are not counted, as torch-mlir does not count its xfails.

The suite is not copied here: get it, then pass its folder with --suite.

    git clone --depth 1 https://github.com/llvm/torch-mlir /tmp/torch-mlir
    nice .venv-2.15.0/bin/python benchmarks/mlir_e2e.py \\
        --suite /tmp/torch-mlir/projects/pt1/python/torch_mlir_e2e_test --json /tmp/e2e.json

(From a bare copy of the repository: `git --git-dir=REPO archive HEAD
projects/pt1/python/torch_mlir_e2e_test | tar -x -C DIR`.) Only test_suite/*.py is imported, not
torch-mlir: what those files import from its framework (framework.TestUtils,
registry.register_test_case, annotations.export and annotate_args) is stood in for below, so
torch-mlir need not be built. A test module that does not import (torchvision not installed,
torch-mlir's custom-op library) is skipped and named.

--every K runs every K-th test (registration order) and --only NAME,... the tests named; --jobs
sets the worker processes (2 at most on a small machine). Cases run in workers, so a case that
hangs or crashes is recorded and its worker restarted.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import torch
from torch.utils._pytree import tree_leaves, tree_map

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
from opinfo_corpus import final_attempts  # noqa: E402  (the last attempt of a restarted compile)

MODES = ("static", "dynamic")
CASE_TIMEOUT_S = 60  # one (test, mode): eager call, capture and lower-check
STARTUP_TIMEOUT_S = 300  # a worker importing torch and the suite
RECYCLE_AFTER = 200  # cases per worker process: Dynamo's and the allocator's state only grow
COUNTED = ("matched", "differs", "not lowered", "refused", "timed out", "crashed")
CLASSES = (*COUNTED, "no graph", "capture failed")


def first_line(text: str, limit: int = 200) -> str:
    lines = text.strip().splitlines()
    return " ".join(lines[0].split())[:limit] if lines else ""


def one_line(text: str, limit: int = 200) -> str:
    """An MLIR diagnostic's first error, without its location: short enough for a table, and for grouping."""
    if "error: " in text:
        text = text.split("error: ", 1)[1]
    return first_line(re.sub(r"loc\([^)]*\)", "", text), limit)


def exception_line(e: BaseException) -> str:
    """The exception's first line, and its cause's where it wraps one (BackendCompilerFailed's
    first line is only "backend='aot_eager' raised:")."""
    line = first_line(f"{type(e).__name__}: {e}")
    cause = getattr(e, "inner_exception", None) or e.__cause__
    return line if cause is None else first_line(f"{line} {type(cause).__name__}: {cause}", 300)


# -- stand-ins for torch_mlir_e2e_test's framework, registry and annotations ------------------------


class TestUtils:
    """framework.TestUtils: the inputs a test draws. Making one seeds torch's generator, as
    torch-mlir's does, so every run draws the same inputs."""

    def __init__(self) -> None:
        torch.manual_seed(0)

    def rand(self, *sizes: int, low: float = 0.0, high: float = 1.0) -> torch.Tensor:
        return torch.empty(sizes).uniform_(low, high)

    def randint(self, *sizes: int, low: int = 0, high: int = 10, dtype: torch.dtype = torch.int64) -> torch.Tensor:
        return torch.randint(low, high, sizes, dtype=dtype)

    def nans(self, *sizes: int) -> torch.Tensor:
        return torch.full(sizes, torch.nan)


def export(fn: Callable) -> Callable:
    """annotations.export: marks the method torch-mlir compiles."""
    fn._torch_mlir_export = True
    return fn


def annotate_args(annotations: list) -> Callable[[Callable], Callable]:
    """annotations.annotate_args: per argument (self first) None or (shape, dtype, value semantics),
    -1 for a dynamic dim. Kept with each result: dynamic=True makes every dim symbolic (but sizes 0
    and 1, which Dynamo specializes), whatever the annotations say."""

    def decorator(fn: Callable) -> Callable:
        fn._torch_mlir_arg_annotations = annotations
        return fn

    return decorator


@dataclass
class Test:
    name: str
    factory: Callable[[], torch.nn.Module]
    invoker: Callable[[Any, TestUtils], None]
    file: str


REGISTRY: dict[str, Test] = {}
_importing = ""  # the test_suite file being imported: each test is named with its file


def register_test_case(module_factory: Callable[[], torch.nn.Module], timeout_seconds: int = 120) -> Callable:
    """registry.register_test_case: the decorated function is the test, named after itself.
    timeout_seconds is torch-mlir's; CASE_TIMEOUT_S applies here."""

    def decorator(f: Callable) -> Callable:
        if f.__name__ in REGISTRY:  # as torch-mlir's registry: a name is a test's identity
            raise Exception(f"Duplicate test name: '{f.__name__}'")
        REGISTRY[f.__name__] = Test(f.__name__, module_factory, f, _importing)
        return f

    return decorator


def install_framework() -> None:
    """Puts the stand-ins where the test files import them from (sys.modules), under torch-mlir's names."""
    package = types.ModuleType("torch_mlir_e2e_test")
    package.__path__ = []  # a package: its submodules are the ones registered here
    parts = {
        "framework": {"TestUtils": TestUtils},
        "registry": {"register_test_case": register_test_case},
        "annotations": {"export": export, "annotate_args": annotate_args},
        "test_suite": {"__path__": []},
    }
    sys.modules[package.__name__] = package
    for name, attributes in parts.items():
        module = types.ModuleType(f"{package.__name__}.{name}")
        module.__dict__.update(attributes)
        sys.modules[module.__name__] = module
        setattr(package, name, module)


def suite_folder(path: Path) -> Path:
    """test_suite/, given it, the torch_mlir_e2e_test folder above it, or a torch-mlir checkout."""
    for candidate in (path, path / "test_suite", path / "projects/pt1/python/torch_mlir_e2e_test/test_suite"):
        if candidate.name == "test_suite" and candidate.is_dir():
            return candidate
    raise SystemExit(f"{path}: no test_suite folder (pass projects/pt1/python/torch_mlir_e2e_test)")


def load_suite(suite: Path) -> dict[str, str]:
    """Imports every test module, registering its tests; returns the ones that did not import (file
    -> error). __init__.py is left out: its xfail lists and register_all_tests need torch_mlir."""
    global _importing
    install_framework()
    skipped = {}
    for path in sorted(suite_folder(suite).glob("*.py")):
        if path.name == "__init__.py":
            continue
        name = f"torch_mlir_e2e_test.test_suite.{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        _importing, before = path.name, set(REGISTRY)
        try:
            spec.loader.exec_module(module)
        except Exception as e:  # noqa: BLE001 - a module that does not import is skipped, and named
            dropped = set(REGISTRY) - before  # the tests it registered before failing go with it
            for test in dropped:
                del REGISTRY[test]
            del sys.modules[name]
            skipped[path.name] = exception_line(e) + (
                f" ({len(dropped)} tests registered before it, dropped)" if dropped else ""
            )
    return skipped


# -- one case -----------------------------------------------------------------------------------------


def clone(value: Any) -> Any:
    return tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, value)


@dataclass
class Call:
    method: str
    args: tuple
    kwargs: dict


class Recorder:
    """Stands where torch-mlir's tracer does: `module.forward(*args)` (any method) runs the module
    eagerly and records the call, its inputs cloned first (a call may change them in place)."""

    def __init__(self, module: torch.nn.Module) -> None:
        self.module, self.calls = module, []

    def __getattr__(self, method: str) -> Callable:
        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(Call(method, clone(args), clone(kwargs)))
            return getattr(self.module, method)(*args, **kwargs)

        return call


def annotations_of(module: torch.nn.Module, method: str) -> list | None:
    """The method's annotate_args list as JSON (shapes, "torch.float32", value semantics), whatever its form."""
    found = getattr(getattr(module, method, None), "_torch_mlir_arg_annotations", None)
    return json.loads(json.dumps(found, default=str))


def compile_and_capture(test: Test, calls: list[Call], store: Path, dynamic: bool, step: Callable[[str], None]) -> None:
    """The recorded calls through torch.compile(aot_eager) inside a capture, each output's backward
    run where it needs a gradient (a module with parameters), so the store holds both graphs."""
    import dynamo_replay as dr

    torch._dynamo.reset()  # compile ids restart at 0/0 in each store
    torch.manual_seed(0)
    module = test.factory()  # seeded as the eager one was: the same parameters, untouched by its call
    with dr.capture(store, precompile=False):
        compiled = torch.compile(module, backend="aot_eager", dynamic=dynamic)
        for call in calls:
            fn = compiled
            if call.method != "forward":
                fn = torch.compile(getattr(module, call.method), backend="aot_eager", dynamic=dynamic)
            step("compile")
            out = fn(*clone(call.args), **clone(call.kwargs))
            needs_grad = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor) and t.requires_grad]
            if needs_grad:
                step("backward")
                sum(t.sum() for t in needs_grad).backward()


def graph_operators(store: Path, compile_id: str, graph: str) -> list[str]:
    """The operators a stored graph calls (said beside a graph that differs)."""
    from dynamo_replay.graphs.stored import read_compile

    stored = read_compile(store, compile_id)
    ir = stored.irs.get(graph) or stored.ir("forward")[1]
    return sorted({n["target"] for n in ir.get("nodes", []) if n.get("op") == "call_function"})


def classify(report: dict[str, Any], store: Path) -> dict[str, Any]:
    """The case's class and one-line reason from lower-check's report, with each graph's result."""
    graphs = []
    for g in final_attempts(report["graphs"]):
        graph = {
            "compile": g["compile"],
            "graph": g["graph"],
            "stage": g["stage"],
            "matched": bool(g["matched"]),
            "opset": g.get("opset", "aten"),
            "error": one_line(g.get("error", "")),
            # placeholder and output issues are values the lowering cannot take, not operators
            "not_lowered": sorted({i["op"] for i in g.get("issues", []) if i["op"] not in ("placeholder", "output")}),
            "issues": [f"{i['op']}: {one_line(i.get('message', ''))}" for i in g.get("issues", [])],
            "outputs": [o for o in g.get("outputs", []) if o.get("status") not in ("bitwise", "close")],
        }
        if graph["stage"] == "differs":
            graph["operators"] = graph_operators(store, g["compile"], g["graph"])
        graphs.append(graph)
    stages = {g["stage"] for g in graphs}
    if all(g["matched"] for g in graphs):
        return {"class": "matched", "reason": "", "graphs": graphs}
    if "differs" in stages:
        parts = []
        for g in graphs:
            if g["stage"] == "differs":
                worst = max((o.get("max_abs_diff", 0) for o in g["outputs"]), default=0)
                kinds = ", ".join(sorted({o["status"] for o in g["outputs"]}))
                ops = ", ".join(op.removeprefix("aten::") for op in g["operators"])
                parts.append(
                    f"{g['graph']} {g['compile']}: output {', '.join(str(o['position']) for o in g['outputs'])} "
                    f"{kinds}, max |diff| {worst:.3g} [{ops}]"
                )
        return {"class": "differs", "reason": "; ".join(parts), "graphs": graphs}
    if "not lowered" in stages:
        ops = sorted({op for g in graphs for op in g["not_lowered"]})
        why = ", ".join(ops) or next(i for g in graphs for i in g["issues"])
        return {"class": "not lowered", "reason": why, "graphs": graphs}
    g = next(g for g in graphs if not g["matched"])
    why = g["error"] or (g["issues"][0] if g["issues"] else "")
    return {"class": "refused", "reason": f"{g['stage']}: {why}".rstrip(": "), "graphs": graphs}


def run_case(test: Test, mode: str, work: Path, phase: Callable[[str], None], keep_store: bool) -> dict[str, Any]:
    """One test in one mode: eager call, compile (and backward) under capture, lower-check. `phase`
    is told each step, so a worker that dies or hangs can be said to have done so in it."""
    from dynamo_replay import mlir
    from dynamo_replay.errors import GraphError
    from dynamo_replay.graphs.stored import GRAPH_EVENTS, stored_graphs

    start = time.perf_counter()
    result: dict[str, Any] = {"case": test.name, "file": test.file, "mode": mode}
    store = work / "stores" / f"{test.name}.{mode}.dynrep"
    store.parent.mkdir(parents=True, exist_ok=True)
    store.unlink(missing_ok=True)

    def done(cls: str, reason: str, **more: Any) -> dict[str, Any]:
        if not keep_store:
            store.unlink(missing_ok=True)
        seconds = round(time.perf_counter() - start, 3)
        return {**result, "class": cls, "counted": cls in COUNTED, "reason": reason, **more, "seconds": seconds}

    steps = []

    def step(name: str) -> None:
        steps.append(name)
        phase(name)

    step("eager")
    try:
        torch.manual_seed(0)
        recorder = Recorder(test.factory())
        test.invoker(recorder, TestUtils())
    except Exception as e:  # noqa: BLE001 - a test that fails in PyTorch is not the lowering's
        return done("capture failed", f"eager: {exception_line(e)}")
    result["calls"] = len(recorder.calls)
    result["annotations"] = annotations_of(recorder.module, recorder.calls[0].method) if recorder.calls else None
    try:
        compile_and_capture(test, recorder.calls, store, mode == "dynamic", step)
    except Exception as e:  # noqa: BLE001 - as torch-mlir's xfails: named, not counted
        return done("capture failed", f"{steps[-1]}: {exception_line(e)}")
    # Dynamo's own graph is stored too; lower-check takes the aten graphs aot_eager compiled.
    aten = {e for kind in ("forward", "backward") for e in GRAPH_EVENTS[kind]}
    if not store.exists() or not any(event in aten for _, event in stored_graphs(store)):
        return done("no graph", "the compile stored no aten graph")
    step("lower-check")
    try:
        report = mlir.lower_check(store)
    except GraphError as e:  # replay-mlir gave no report: it crashed, or refused the store
        return done("refused", f"lower-check: {first_line(str(e))}", graphs=[])
    if not report["graphs"]:
        return done("no graph", "lower-check found no aten graph")
    found = classify(report, store)
    return done(found.pop("class"), found.pop("reason"), **found)


# -- workers --------------------------------------------------------------------------------------------


def protocol_channel() -> Any:
    """A private copy of stdout for the worker's messages; fd 1 itself goes to stderr (the log), so
    nothing a test, torch or MLIR prints can be taken for a message."""
    channel = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    return channel


def worker(suite: Path, work: Path, keep_stores: bool) -> None:
    """Reads {"case", "mode"} lines on stdin and answers each with "@@result JSON", after "@@phase"
    lines for its steps; "@@ready" once the suite is imported."""
    channel = protocol_channel()
    warnings.simplefilter("ignore")
    load_suite(suite)
    print("@@ready", file=channel, flush=True)
    current = ["setup"]  # the case's step, for a failure of this script's own

    def phase(name: str) -> None:
        current[0] = name
        print(f"@@phase {name}", file=channel, flush=True)

    for line in sys.stdin:
        unit, current[0] = json.loads(line), "setup"
        test = REGISTRY[unit["case"]]
        try:
            result = run_case(test, unit["mode"], work, phase, keep_stores)
        except Exception as e:  # noqa: BLE001 - a bug here: named, and the run goes on
            cls = "crashed" if current[0] == "lower-check" else "capture failed"
            why = f"{current[0]}: benchmark error: {exception_line(e)}"
            result = {"case": test.name, "file": test.file, "mode": unit["mode"], "class": cls, "reason": why}
            result.update(counted=cls in COUNTED, seconds=0)
        print("@@result " + json.dumps(result), file=channel, flush=True)


def list_suite(suite: Path) -> None:
    """--list: the registered tests in order and the modules skipped, as one "@@list JSON" line."""
    channel = protocol_channel()
    warnings.simplefilter("ignore")
    skipped = load_suite(suite)
    tests = [[t.name, t.file] for t in REGISTRY.values()]
    print("@@list " + json.dumps({"tests": tests, "skipped": skipped}), file=channel, flush=True)


def worker_command(args: argparse.Namespace, role: str) -> list[str]:
    cmd = [sys.executable, __file__, role, "--suite", str(args.suite), "--work", str(args.work)]
    return [*cmd, "--keep-stores"] if args.keep_stores else cmd


class Slot(threading.Thread):
    """One worker process: feeds it cases one at a time, kills it (its whole process group, the
    replay-mlir it runs too) past CASE_TIMEOUT_S, restarts it when it dies or has run RECYCLE_AFTER."""

    def __init__(self, todo: queue.Queue, args: argparse.Namespace, progress: Progress, log: IO[str]) -> None:
        super().__init__(daemon=True)
        self.todo, self.args, self.progress, self.log = todo, args, progress, log
        self.proc: subprocess.Popen[str] | None = None
        self.ran = 0
        self.killed = False

    def read(self, timeout: float) -> tuple[str, str]:
        """Lines up to a result (or "@@ready"): (its line or "" if the worker ended, the last phase).
        Past `timeout` the worker is killed; once this returns it no longer can be, and self.killed
        says whether it was (perhaps just as its answer came)."""
        self.killed, phase, waiting, lock = False, "startup", [True], threading.Lock()

        def kill() -> None:
            with lock:
                if waiting[0]:
                    self.killed = True
                    os.killpg(self.proc.pid, signal.SIGKILL)

        killer = threading.Timer(timeout, kill)
        killer.start()
        try:
            while line := self.proc.stdout.readline():
                if line.startswith("@@phase "):
                    phase = line.split(" ", 1)[1].strip()
                elif line.startswith(("@@result ", "@@ready")):
                    return line, phase
            return "", phase
        finally:
            with lock:
                waiting[0] = False
            killer.cancel()

    def start_worker(self) -> str:
        """Starts a worker; returns why it could not, or ""."""
        self.proc = subprocess.Popen(
            worker_command(self.args, "--worker"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            bufsize=1,
            start_new_session=True,  # its own process group, so a kill takes replay-mlir with it
        )
        self.ran = 0
        line, _ = self.read(STARTUP_TIMEOUT_S)
        if line and not self.killed:
            return ""
        code, self.proc = self.proc.wait(), None
        return (
            f"worker did not start within {STARTUP_TIMEOUT_S} s"
            if self.killed
            else f"worker did not start (exit {code})"
        )

    def run(self) -> None:
        while True:
            try:
                test, file, mode = self.todo.get_nowait()
            except queue.Empty:
                break
            start = time.perf_counter()
            if self.proc is None or self.ran >= RECYCLE_AFTER:
                self.stop()
                if why := self.start_worker():
                    result = {"class": "crashed", "counted": False, "reason": why}
                    self.progress.done({"case": test, "file": file, "mode": mode, **result, "seconds": 0})
                    continue
            self.proc.stdin.write(json.dumps({"case": test, "mode": mode}) + "\n")
            self.proc.stdin.flush()
            line, phase = self.read(CASE_TIMEOUT_S)
            self.ran += 1
            if line:
                result = json.loads(line.removeprefix("@@result "))
                if self.killed:  # killed just as it answered: the answer stands, the worker is gone
                    self.proc.wait()
                    self.proc = None
            else:
                # In lower-check a graph was stored: the case counts, as a failure. Before it, the
                # eager call or the compile hung or crashed: not counted, as a capture that raised.
                code, self.proc = self.proc.wait(), None
                cls = ("timed out" if self.killed else "crashed") if phase == "lower-check" else "capture failed"
                why = f"timed out past {CASE_TIMEOUT_S} s" if self.killed else f"worker died (exit {code})"
                result = {
                    "case": test,
                    "file": file,
                    "mode": mode,
                    "class": cls,
                    "counted": cls in COUNTED,
                    "reason": f"{phase}: {why}",
                    "seconds": round(time.perf_counter() - start, 3),
                }
            self.progress.done(result)
        self.stop()

    def stop(self) -> None:
        """Ends the worker: it leaves its loop when its stdin closes."""
        if self.proc is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass  # it had died: nothing to flush into
            self.proc.wait()
            self.proc = None


class Progress:
    """Collects results; prints a line to stderr for each case that did not match and a count
    every 50, and keeps the JSON file written every 100 (an interrupted run leaves its results)."""

    def __init__(self, total: int, save: Callable[[list[dict[str, Any]]], None]) -> None:
        self.total, self.save, self.results = total, save, []
        self.start, self.lock = time.perf_counter(), threading.Lock()

    def done(self, result: dict[str, Any]) -> None:
        with self.lock:
            self.results.append(result)
            n = len(self.results)
            elapsed = time.perf_counter() - self.start
            if result["class"] != "matched":
                print(f"  {result['case']} ({result['mode']}): {result['class']}: {result['reason']}", file=sys.stderr)
            if n % 50 == 0 or n == self.total:
                left = elapsed / n * (self.total - n)
                print(f"[{n}/{self.total}] {elapsed / 60:.1f} min, about {left / 60:.0f} min left", file=sys.stderr)
            if n % 100 == 0:
                self.save(self.results)
            sys.stderr.flush()


# -- report ---------------------------------------------------------------------------------------------


def command_line() -> str:
    """This run's command as it was typed (the interpreter and arguments), nice included."""
    niceness = os.nice(0)
    prefix = f"nice -n {niceness} " if niceness else ""
    return prefix + shlex.join([sys.executable, *sys.argv])


def summary(results: list[dict[str, Any]], header: str) -> str:
    by_mode = {mode: [r for r in results if r["mode"] == mode] for mode in MODES}
    modes = [m for m in MODES if by_mode[m]]
    out = [header, "", "| class | " + " | ".join(modes) + " |", "|---" * (len(modes) + 1) + "|"]
    counts = {m: Counter(r["class"] for r in by_mode[m]) for m in modes}
    for cls in CLASSES:
        label = f"{cls} (not counted)" if cls not in COUNTED else cls
        out.append(f"| {label} | " + " | ".join(str(counts[m][cls]) for m in modes) + " |")
    counted = {m: [r for r in by_mode[m] if r["counted"]] for m in modes}
    out.append("| counted | " + " | ".join(str(len(counted[m])) for m in modes) + " |")
    rates = [f"{100 * counts[m]['matched'] / max(1, len(counted[m])):.1f}%" for m in modes]
    out.append("| pass rate (matched / counted) | " + " | ".join(rates) + " |")

    for mode in modes:
        failed = sorted((r for r in counted[mode] if r["class"] != "matched"), key=lambda r: (r["class"], r["case"]))
        out += ["", f"Not matched, {mode} ({len(failed)}):"]
        out += [f"- {r['case']} [{r['file']}] {r['class']}: {r['reason']}" for r in failed]

    # Across modes: which operators kept graphs from lowering, and why captures failed.
    ops: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        for op in {op for g in r.get("graphs", []) for op in g["not_lowered"]}:
            ops[op][r["mode"]] += 1
    out += ["", "Operators not lowered (cases: " + ", ".join(modes) + "):"]
    out += [
        f"- {op}: " + " / ".join(str(ops[op][m]) for m in modes)
        for op in sorted(ops, key=lambda o: (-sum(ops[o].values()), o))
    ]
    for cls in ("no graph", "capture failed"):
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in results:
            if r["class"] == cls:
                groups[r["reason"]].append(r)
        out += ["", f"{cls.capitalize()} (not counted), by reason:"]
        for reason, rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            per_mode = ", ".join(f"{sum(r['mode'] == m for r in rs)} {m}" for m in modes)
            names = sorted({r["case"] for r in rs})
            more = f" and {len(names) - 6} more" if len(names) > 6 else ""
            out.append(f"- {reason} ({per_mode}): {', '.join(names[:6])}{more}")
    return "\n".join(out) + "\n"


# -- main ----------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, required=True, help="torch-mlir's torch_mlir_e2e_test folder")
    parser.add_argument("--json", type=Path, help="write every case's result here")
    parser.add_argument("--every", type=int, default=1, help="run every K-th test (registration order)")
    parser.add_argument("--only", help="comma-separated test names")
    parser.add_argument("--modes", default=",".join(MODES), help="static,dynamic or one of them")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--work", type=Path, help="stores and the workers' log (default: a new temporary folder)")
    parser.add_argument("--keep-stores", action="store_true", help="keep each case's store in --work/stores")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--list", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.suite = args.suite.resolve()
    if args.worker:
        return worker(args.suite, args.work, args.keep_stores)
    if args.list:
        return list_suite(args.suite)

    started = time.perf_counter()
    command = command_line()
    print(f"command: {command}", flush=True)
    args.work = (args.work or Path(tempfile.mkdtemp(prefix="dynrep-mlir-e2e-"))).resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    modes = [m for m in args.modes.split(",") if m]
    if any(m not in MODES for m in modes):
        raise SystemExit(f"--modes: {args.modes!r} (static, dynamic)")

    # The suite is listed in a process of its own, as the workers import it: nothing of it runs here.
    listed = subprocess.run(worker_command(args, "--list"), capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S)
    line = next((x for x in listed.stdout.splitlines() if x.startswith("@@list ")), None)
    if line is None:
        raise SystemExit(f"listing the suite failed:\n{listed.stderr[-4000:]}")
    suite = json.loads(line.removeprefix("@@list "))
    tests = suite["tests"][:: max(1, args.every)]
    if args.only:
        wanted = set(args.only.split(","))
        tests = [t for t in tests if t[0] in wanted]
        if missing := wanted - {t[0] for t in tests}:
            raise SystemExit(f"--only: no such test: {', '.join(sorted(missing))}")
    files = len(suite["skipped"]) + len({file for _, file in suite["tests"]})
    skipped = "; ".join(f"{f}: {why}" for f, why in suite["skipped"].items())
    subset = f"every {args.every}th test in registration order, " if args.every > 1 else ""
    header = (
        f"torch {torch.__version__}, {os.cpu_count()} cores {platform.machine()}, {args.jobs} workers; suite "
        f"{args.suite}: {files} test modules, {len(suite['skipped'])} skipped ({skipped or 'none'}); "
        f"{len(suite['tests'])} tests registered, {len(tests)} run ({subset}{', '.join(modes)})"
    )
    print(header, flush=True)

    def save(results: list[dict[str, Any]], wall: float | None = None) -> None:
        if args.json:
            document = {"command": command, "header": header, "wall_s": wall, "results": results}
            args.json.write_text(json.dumps(document, indent=1))

    todo: queue.Queue = queue.Queue()
    for name, file in tests:  # a test's modes one after the other: a partial run covers both alike
        for mode in modes:
            todo.put((name, file, mode))
    progress = Progress(todo.qsize(), save)
    with open(args.work / "worker.log", "a") as log:  # what the workers print, and their tracebacks
        slots = [Slot(todo, args, progress, log) for _ in range(max(1, args.jobs))]
        for slot in slots:
            slot.start()
        for slot in slots:
            slot.join()
    wall = time.perf_counter() - started
    order = {(name, mode): i for i, (name, mode) in enumerate((n, m) for n, _ in tests for m in modes)}
    results = sorted(progress.results, key=lambda r: order[r["case"], r["mode"]])
    save(results, wall)
    print(summary(results, f"wall time {wall / 60:.1f} min"))
    if args.json:
        print(f"results: {args.json}")
    if not args.keep_stores:
        shutil.rmtree(args.work / "stores", ignore_errors=True)


if __name__ == "__main__":
    main()
