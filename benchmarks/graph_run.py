"""Graph runner: time per call of a stored aten graph run by replay-run (libtorch, one boxed
dispatcher call per node, no Python) against the same graph run eagerly in Python.

For each workload, a child process captures the job (dynamo_replay.capture(store,
precompile=False), torch.compile(backend="aot_eager"), one call under torch.no_grad(), so the
stored graph is AOTAutograd's inference graph, compile 0/0). Then, in alternating rounds:
  replay-run   `replay-run STORE 0/0 --graph forward --repeat N --json` in a subprocess: the
               runner's own median seconds per call (it times only the graph run, not process
               start or loading the store) and its check of the first call's outputs
               against the stored ones (`ok`);
  eager        in one fresh Python process per workload, dynamo_replay.load_graph(store, "0/0",
               graph="forward"): the torch.fx.GraphModule rebuilt from the same IR, called on
               the same stored inputs (gm(*gm.example_inputs) under torch.no_grad()); each
               round makes 5 warm-up calls, then times N calls with time.perf_counter (median).
               Its outputs are checked once with gm.check().
Both columns are fresh processes that read the store and then run the graph N times, so the
memory allocator starts from the same kind of state in both (glibc malloc's thresholds adapt
to what a process has freed before, which changes how often a call page-faults).
Per op = median / nodes (replay-run's node count: every node but placeholders and the output;
the GraphModule runs the same nodes). Ratio = eager / replay-run: above 1, the runner is faster.

Threads: both columns run with the same intra-op thread count T: libtorch's default (OpenMP:
one per CPU; this process and the runner load the same libtorch) or each of --threads. This
process calls torch.set_num_threads(T), and the runner gets OMP_NUM_THREADS=T. The script reads
the runner's peak OS thread count from /proc while it runs and prints it beside T: it is T where
some op ran in parallel (the main thread and T-1 OpenMP workers), less where none did.

Page faults: minor page faults per call, for eager from getrusage around the timed calls, for
the runner from wait4: (faults of an N-call run - faults of a 1-call run) / (N - 1).

Load: the script prints the CPU time other processes used while it timed ((machine busy time in
/proc/stat - this process's and its children's) / wall time). With T = the number of CPUs, a
busy neighbour makes every OpenMP barrier wait for a descheduled thread and both columns slow
down erratically; read 2-thread figures on a 2-CPU machine only when that figure is near 0.
Exit status 1 when outputs differ from the stored ones or the thread counts differ; a missed
target only prints MISSED.

Workloads (random weights, nothing downloaded):
  gpt      transformers GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=256, n_head=4,
           vocab_size=5000)), eval, attn_implementation="sdpa", input_ids (4, 64);
  convnet  a ResNet-like stack: stem conv, three stages of two residual blocks of
           Conv2d+BatchNorm2d (eval)+ReLU (16, 32, 64 channels), pooling and a linear head,
           input (8, 3, 64, 64);
  tiny     64 steps of x = tanh(x @ w) * 0.5 + x on a (4, 16) input: 256 ops on tiny tensors,
           where the cost between ops dominates.

Run:
  .venv-2.15.0/bin/python benchmarks/graph_run.py [--rounds 5] [--repeat 50] [--threads 2 1] [--workloads gpt convnet tiny] [--json FILE]
Target (issue): the runner is at least as fast as eager Python (ratio >= 1.00) on every workload.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

WORKLOADS = {
    "gpt": """
        from transformers import GPT2Config, GPT2LMHeadModel
        model = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=256, n_head=4, vocab_size=5000,
                                           attn_implementation="sdpa")).eval()
        inputs = (torch.randint(0, 5000, (4, 64)),)
    """,
    "convnet": """
        def conv_bn(cin, cout, stride=1):
            return [torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False), torch.nn.BatchNorm2d(cout)]
        class Block(torch.nn.Module):
            def __init__(self, cin, cout, stride):
                super().__init__()
                self.body = torch.nn.Sequential(*conv_bn(cin, cout, stride), torch.nn.ReLU(), *conv_bn(cout, cout))
                self.skip = (torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 1, stride, bias=False), torch.nn.BatchNorm2d(cout))
                             if stride != 1 or cin != cout else torch.nn.Identity())
            def forward(self, x):
                return torch.relu(self.body(x) + self.skip(x))
        model = torch.nn.Sequential(
            *conv_bn(3, 16), torch.nn.ReLU(),
            Block(16, 16, 1), Block(16, 16, 1), Block(16, 32, 2), Block(32, 32, 1), Block(32, 64, 2), Block(64, 64, 1),
            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, 10))
        for m in model.modules():  # non-trivial running statistics, so batch norm is not an identity
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1); m.running_var.uniform_(0.5, 1.5)
        model.eval()
        inputs = (torch.randn(8, 3, 64, 64),)
    """,
    "tiny": """
        class Tiny(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.nn.Parameter(torch.randn(16, 16) / 4)
            def forward(self, x):
                for _ in range(64):
                    x = torch.tanh(x @ self.w) * 0.5 + x
                return x
        model = Tiny().eval()
        inputs = (torch.randn(4, 16),)
    """,
}
TITLES = {
    "gpt": "GPT-2 (4 layers, d=256), 4x64",
    "convnet": "ResNet-like convnet, 8x3x64x64",
    "tiny": "tiny ops (4x16), 64 steps",
}

# The capture child: argv[1] is the store. One compile, no graph breaks, seeded weights and inputs.
CAPTURE = """
import sys, torch, dynamo_replay
torch.manual_seed(0)
@@WORKLOAD@@
with torch.no_grad(), dynamo_replay.capture(sys.argv[1], precompile=False):
    torch.compile(model, backend="aot_eager", fullgraph=True)(*inputs)
"""

# The eager child: argv is the store and the thread count. It prints one JSON line when the graph
# is loaded and checked, then for each line N on stdin times N calls (after 5 warm-up calls).
EAGER = """
import json, resource, statistics, sys, time, torch
from dynamo_replay.graphs import load_graph
torch.set_num_threads(int(sys.argv[2]))
module = load_graph(sys.argv[1], "0/0", graph="forward")
problems = module.check()
nodes = sum(1 for n in module.graph.nodes if n.op not in ("placeholder", "output"))
print(json.dumps({"threads": torch.get_num_threads(), "nodes": nodes, "problems": problems}), flush=True)
inputs = module.example_inputs
for line in sys.stdin:
    repeat = int(line)
    with torch.no_grad():
        for _ in range(5):
            module(*inputs)
        seconds = []
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(repeat):
            start = time.perf_counter()
            module(*inputs)
            seconds.append(time.perf_counter() - start)
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    print(json.dumps({"median_seconds": statistics.median(seconds), "faults_per_call": faults / repeat}), flush=True)
"""


def loud(message: str) -> None:
    bar = "!" * 78
    print(f"\n{bar}\n{message}\n{bar}\n", file=sys.stderr, flush=True)


def environment() -> dict[str, Any]:
    import importlib.metadata as metadata

    import torch

    root = Path(__file__).resolve().parent.parent
    git = lambda *args: subprocess.run(["git", *args], cwd=root, capture_output=True, text=True).stdout.strip()  # noqa: E731
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": metadata.version("transformers"),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "commit": git("rev-parse", "--short", "HEAD"),
        "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
        "argv": sys.argv[1:],
        "loadavg_start": os.getloadavg(),
    }


def find_runner(given: str | None) -> str:
    for candidate in (given, Path(sys.executable).parent / "replay-run", shutil.which("replay-run")):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    sys.exit("error: replay-run not found beside the interpreter or on PATH (build it, or pass --runner)")


def capture(name: str, work: Path, reuse: bool) -> Path:
    """The workload's store, captured in a child process (untimed); with --reuse, the one an
    earlier run left in --work for the same workload code."""
    script = CAPTURE.replace("@@WORKLOAD@@", textwrap.dedent(WORKLOADS[name]))
    store, stamp = work / f"{name}.dynrep", work / f"{name}.captured"
    digest = hashlib.sha256(script.encode()).hexdigest()
    if reuse and store.exists() and stamp.exists() and stamp.read_text() == digest:
        print(f"[{name}] reusing {store}", file=sys.stderr)
        return store
    store.unlink(missing_ok=True)
    stamp.unlink(missing_ok=True)
    print(f"[{name}] capturing (untimed)", file=sys.stderr, flush=True)
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(work / "inductor-cache")}
    for variable in ("DYNAMO_REPLAY", "TORCH_LOGS", "TORCH_COMPILE_DEBUG"):
        env.pop(variable, None)
    child = subprocess.run([sys.executable, "-c", script, str(store)], capture_output=True, text=True, env=env)
    if child.returncode != 0:
        sys.exit(f"error: capturing {name} failed (exit status {child.returncode}):\n{child.stderr[-3000:]}")
    stamp.write_text(digest)
    return store


def run_cxx(runner: str, store: Path, repeat: int, env: dict[str, str]) -> dict[str, Any]:
    """One replay-run process: its JSON report, the peak OS thread count seen in /proc while it
    ran, and its minor page faults (from wait4)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(
            [runner, str(store), "0/0", "--graph", "forward", "--repeat", str(repeat), "--json"],
            stdout=out,
            stderr=err,
            env=env,
        )
        peak = 0
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                child.returncode = os.waitstatus_to_exitcode(status)
                break
            try:
                peak = max(peak, int(Path(f"/proc/{child.pid}/status").read_text().split("Threads:")[1].split()[0]))
            except (OSError, IndexError, ValueError):
                pass
            time.sleep(0.005)
        out.seek(0)
        err.seek(0)
        text, errors = out.read(), err.read()
    try:
        report = json.loads(text)
    except json.JSONDecodeError:
        sys.exit(f"error: replay-run {store} exited {child.returncode} without a JSON report:\n{errors[-3000:]}")
    report["peak_threads"] = peak
    report["minor_faults"] = usage.ru_minflt
    return report


class EagerChild:
    """The eager column: a fresh Python process that loads the graph once (as a user would) and
    times a round of calls each time it is asked, so its rounds alternate with the runner's."""

    def __init__(self, store: Path, threads: int) -> None:
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        self.child = subprocess.Popen(
            [sys.executable, "-c", EAGER, str(store), str(threads)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.ready = self.read()

    def read(self) -> dict[str, Any]:
        assert self.child.stdout is not None
        line = self.child.stdout.readline()
        if not line:
            sys.exit(f"error: the eager child exited with status {self.child.wait()}")
        return json.loads(line)

    def round(self, repeat: int) -> dict[str, Any]:
        assert self.child.stdin is not None
        self.child.stdin.write(f"{repeat}\n")
        self.child.stdin.flush()
        return self.read()

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait()


def measure(
    name: str, store: Path, runner: str, rounds: int, repeat: int, threads: int, runner_env: dict[str, str]
) -> dict[str, Any]:
    """Both columns at `threads` intra-op threads, in alternating rounds."""
    env = {**os.environ, **runner_env, "OMP_NUM_THREADS": str(threads)}
    baseline = run_cxx(runner, store, 1, env)  # one call: the timed calls' page faults are counted above it
    eager_child = EagerChild(store, threads)
    cxx, eager, eager_faults, reports = [], [], [], [baseline]
    try:
        for _ in range(rounds):  # alternating, so drift and a busy neighbour hit both columns alike
            report = run_cxx(runner, store, repeat, env)
            reports.append(report)
            if report.get("error") or report.get("failure"):
                loud(f"{name}: replay-run failed: {report.get('error') or report.get('failure')}")
                break
            cxx.append(report["median_seconds"])
            timing = eager_child.round(repeat)
            eager.append(timing["median_seconds"])
            eager_faults.append(timing["faults_per_call"])
    finally:
        eager_child.close()
    timed = reports[1:]
    nodes = reports[-1].get("nodes", eager_child.ready["nodes"])
    result: dict[str, Any] = {
        "graph": reports[-1].get("graph"),
        "nodes": nodes,
        "nodes_graph_module": eager_child.ready["nodes"],
        "threads": threads,
        "eager_threads": eager_child.ready["threads"],
        "cxx_s": statistics.median(cxx) if cxx else None,
        "eager_s": statistics.median(eager) if eager else None,
        "cxx_rounds": cxx,
        "eager_rounds": eager,
        "ratios": [e / c for e, c in zip(eager, cxx)],
        "cxx_ok": all(r.get("ok") for r in reports),
        "cxx_outputs": sorted({o["status"] for r in reports for o in r.get("outputs", [])}),
        "eager_ok": not eager_child.ready["problems"],
        "eager_problems": eager_child.ready["problems"],
        "cxx_peak_threads": max(r["peak_threads"] for r in reports),
        "cxx_faults_per_call": (statistics.median(r["minor_faults"] for r in timed) - baseline["minor_faults"])
        / (repeat - 1)
        if timed and repeat > 1
        else None,
        "eager_faults_per_call": statistics.median(eager_faults) if eager_faults else None,
    }
    if cxx:
        result["ratio"] = result["eager_s"] / result["cxx_s"]
    return result


def busy_seconds() -> tuple[float, float]:
    """CPU seconds the whole machine has been busy (/proc/stat), and this process and its
    reaped children's CPU seconds: their difference over a span is what others ran."""
    import resource

    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    machine = (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait
    own = sum(
        getattr(resource.getrusage(who), field)
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
        for field in ("ru_utime", "ru_stime")
    )
    return machine, own


def table(results: list[dict[str, Any]], repeat: int, rounds: int) -> str:
    lines = [
        f"medians of {rounds} rounds x {repeat} calls (min-max of the rounds' medians in brackets); "
        "per op = per call / nodes; ratio = eager / replay-run (> 1: the runner is faster), of the medians, "
        "with the range of each round's own ratio; "
        "faults = minor page faults per call",
        "",
        "| workload | threads | nodes | replay-run per call | eager per call | replay-run per op | eager per op "
        "| ratio eager / replay-run | faults (replay-run; eager) | outputs (replay-run; eager) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    ms = lambda s: f"{1e3 * s:.3f}" if s >= 1e-3 else f"{1e3 * s:.4f}"  # noqa: E731
    us = lambda s: f"{1e6 * s:.1f} us"  # noqa: E731
    span = lambda xs: f"[{ms(min(xs))}-{ms(max(xs))}]"  # noqa: E731
    for r in results:
        if r["cxx_s"] is None:
            lines.append(f"| {TITLES[r['workload']]} | {r['threads']} | {r['nodes']} | failed | | | | | | |")
            continue
        outputs = ("ok (" + ", ".join(r["cxx_outputs"]) + ")" if r["cxx_ok"] else "**MISMATCH**") + (
            "; ok" if r["eager_ok"] else "; **MISMATCH**"
        )
        faults = (
            f"{r['cxx_faults_per_call']:.0f}; {r['eager_faults_per_call']:.0f}"
            if r["cxx_faults_per_call"] is not None
            else ""
        )
        lines.append(
            f"| {TITLES[r['workload']]} | {r['threads']} | {r['nodes']} | {ms(r['cxx_s'])} ms {span(r['cxx_rounds'])} "
            f"| {ms(r['eager_s'])} ms {span(r['eager_rounds'])} | {us(r['cxx_s'] / r['nodes'])} "
            f"| {us(r['eager_s'] / r['nodes'])} | **{r['ratio']:.2f}x**{'' if round(r['ratio'], 2) >= 1 else ' (slower)'} [{min(r['ratios']):.2f}-{max(r['ratios']):.2f}] "
            f"| {faults} | {outputs} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds of each column (default 5)")
    parser.add_argument("--repeat", type=int, default=50, help="timed calls per round (default 50)")
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument(
        "--threads",
        type=int,
        nargs="+",
        help="intra-op thread counts to measure, each for both columns (default: libtorch's default)",
    )
    parser.add_argument("--runner", help="the replay-run binary (default: beside the interpreter, then PATH)")
    parser.add_argument(
        "--runner-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="an environment variable for the runner only (repeatable), e.g. GLIBC_TUNABLES=...",
    )
    parser.add_argument("--json", help="write every measurement to this file")
    parser.add_argument("--work", help="keep the stores here")
    parser.add_argument(
        "--reuse", action="store_true", help="with --work: reuse the stores an earlier run captured there"
    )
    args = parser.parse_args()

    import torch

    runner = find_runner(args.runner)
    default_threads = torch.get_num_threads()  # libtorch's default (the runner's, too: the same library)
    thread_counts = args.threads or [default_threads]
    work_context = tempfile.TemporaryDirectory(prefix="graph-run-") if not args.work else None
    work = Path(work_context.name if work_context else args.work)
    work.mkdir(parents=True, exist_ok=True)
    try:
        meta = environment()
        meta["default_threads"] = default_threads
        stores = {name: capture(name, work, args.reuse and bool(args.work)) for name in args.workloads}
        runner_env = dict(item.split("=", 1) for item in args.runner_env)
        meta["runner_env"] = runner_env
        start_wall, (start_machine, start_own) = time.perf_counter(), busy_seconds()
        results = []
        for threads in thread_counts:
            for name, store in stores.items():
                print(f"[{name}] timing, {threads} threads", file=sys.stderr, flush=True)
                results.append(
                    {"workload": name, **measure(name, store, runner, args.rounds, args.repeat, threads, runner_env)}
                )
        end_machine, end_own = busy_seconds()
        meta["timing_s"] = time.perf_counter() - start_wall
        meta["others_cpus"] = ((end_machine - start_machine) - (end_own - start_own)) / meta["timing_s"]
        meta["loadavg_end"] = os.getloadavg()
    finally:
        if work_context:
            work_context.cleanup()
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "environment": meta,
                    "rounds": args.rounds,
                    "repeat": args.repeat,
                    "runner": runner,
                    "results": results,
                },
                indent=1,
            )
        )
    print(
        f"graph_run.py {' '.join(sys.argv[1:])}: torch {meta['torch']}, transformers {meta['transformers']}, "
        f"Python {meta['python']}, {meta['cpus']} CPUs, tree {meta['commit']}{' (modified)' if meta['dirty'] else ''}, "
        f"load average {meta['loadavg_start'][0]:.1f} at start, {meta['loadavg_end'][0]:.1f} at end; "
        f"other processes used {meta['others_cpus']:.2f} CPUs on average while timing ({meta['timing_s']:.0f} s)"
        + (f"; runner environment {' '.join(args.runner_env)}" if args.runner_env else "")
    )
    print(table(results, args.repeat, args.rounds))
    # Both get the same count: torch.set_num_threads(T) here, OMP_NUM_THREADS=T for the runner. The
    # runner's OpenMP workers start at its first parallel op, so its peak OS thread count is T
    # (main thread + T-1 workers) where some op ran in parallel, and less where none did.
    print("\nthreads: eager torch.get_num_threads(); replay-run's peak OS threads (OMP_NUM_THREADS = the same):")
    wrong = []
    for r in results:
        seen = r["cxx_peak_threads"]
        note = "the same" if seen == r["threads"] else "fewer: no op ran in parallel" if seen < r["threads"] else "MORE"
        print(f"  {r['workload']:<8} {r['eager_threads']}; {seen}  {note}")
        if seen > r["threads"] or r["eager_threads"] != r["threads"]:
            wrong.append(r["workload"])
    problems = [
        f"{r['workload']} ({r['threads']} threads): replay-run outputs differ from the stored ones"
        for r in results
        if not r["cxx_ok"]
    ]
    problems += [f"{r['workload']}: eager outputs: {p}" for r in results for p in r["eager_problems"]]
    problems += [f"{r['workload']}: replay-run failed" for r in results if r["cxx_s"] is None]
    problems += [f"{name}: the two columns ran with different thread counts" for name in wrong]
    slower = [f"{r['workload']} ({r['threads']} threads)" for r in results if round(r.get("ratio", 0), 2) < 1]
    print(
        f"target: replay-run at least as fast as eager on every workload: "
        f"{'MET' if not slower else 'MISSED: ' + ', '.join(slower)}"
    )
    if problems:
        loud("\n".join(problems))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
