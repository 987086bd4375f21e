"""MLIR lowering figures (docs/benchmarks.md): per graph, lowering + verification time and JIT
compile time against its node count, and lower-check's pass rate over a corpus of captured jobs
(tests/python/graph_jobs.py) and over the real models of the warm-start benchmark (GPT-2, BERT,
T5, Llama, ViT and two training steps, full size, each captured by a fresh process with the
default capture: Inductor, the default sample cap, dropout on where the model has it).
Run: .venv-2.15.0/bin/python benchmarks/lowering.py [--models-only | --corpus-only] [model ...]
(the OpInfo corpus is benchmarks/mlir_opinfo.py).

--speed [model ...] (default: gpt2 llama t5 vit whisper mixtral): per graph of each real model,
lower-check through MLIR's JIT and through IREE (each must match), and the time of one call four
ways, in one run, on the same inputs (the stored samples: each model is captured with
parameters=True, so every graph is compared with the job's own outputs):
  MLIR JIT   lower-check --time: the median of calls of the JIT-compiled function in replay-mlir
             (one thread: the lowering emits loops, no threads);
  IREE       lower-check --runtime iree --time: iree-benchmark-module's median (5 repetitions of
             at least 0.2 s) of the .vmfb iree-compile made for this host's CPU, on the local-task
             device (a thread per core);
  Inductor   in a fresh Python process, the stored graph rebuilt (dynamo_replay.load_graph) and
             compiled by Inductor (torch._inductor.compile, not timed), then 5 warm-up calls and
             the median of 20, under no_grad: the CPU code Inductor makes for exactly this graph
             (C++ with OpenMP, torch's thread count), the code the job's replay runs;
  eager      the same GraphModule called as it is (PyTorch's kernels, one call per node).
Ratios are per graph: IREE / Inductor (target <= 1.5 on the inference graphs) and JIT / IREE
(target > 1: IREE faster than the project's own JIT)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from dynamo_replay import mlir
from dynamo_replay.errors import GraphError

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
import graph_jobs as jobs  # noqa: E402

JOBS = {
    "mlp": jobs.mlp,
    "gpt": jobs.gpt,
    "convnet": jobs.convnet_training_step,
    "graph_break": jobs.graph_break,
    "hf_gpt2_train": jobs.hf_gpt2_training_step,
    "hf_bert": jobs.hf_bert,
    "inductor": jobs.inductor_mlp,
    "hf_gpt2_train_no_dropout": lambda: jobs.hf_gpt2_training_step(dropout=False),
    "custom_op": jobs.custom_op,
}


# A fresh process per model: build it, capture its first output as the warm-start job does.
CAPTURE_CHILD = """
import sys, torch, dynamo_replay
@@WORKLOAD@@
torch.manual_seed(0)
with dynamo_replay.capture(sys.argv[1]):
    first_output(torch.compile(model, dynamic=dynamic))
"""


def real_models(names: list[str]) -> None:
    from warm_start import REAL_WORKLOADS, WORKLOADS

    rows, graphs, matched = [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or REAL_WORKLOADS:
            script, store = Path(tmp) / f"{name}.py", Path(tmp) / f"{name}.dynrep"
            script.write_text(CAPTURE_CHILD.replace("@@WORKLOAD@@", textwrap.dedent(WORKLOADS[name])))
            start = time.perf_counter()
            subprocess.run([sys.executable, str(script), str(store)], check=True, capture_output=True)
            captured = time.perf_counter() - start
            start = time.perf_counter()
            report = mlir.lower_check(store)
            wall = time.perf_counter() - start
            for g in report["graphs"]:
                s = g["seconds"]
                graphs += 1
                matched += g["matched"]
                rows.append(
                    (
                        name,
                        g["compile"],
                        g["graph"],
                        g["nodes"],
                        s["lower"] + s["verify"],
                        s["jit"],
                        s["run"],
                        g["stage"],
                        g["opset"],
                        "replay-run" if g["reference"] else "stored samples",
                    )
                )
            print(
                f"{name}: {sum(g['matched'] for g in report['graphs'])}/{len(report['graphs'])} graphs matched; "
                f"capture {captured:.0f} s, lower-check {wall:.0f} s",
                flush=True,
            )
    print(
        "\n| model | compile | graph | nodes | lower + verify (s) | JIT (s) | run (s) | result | opset | compared with |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.3f} | {r[5]:.2f} | {r[6]:.2f} | {r[7]} | {r[8]} | {r[9]} |"
        )
    print(f"\nreal models: {matched}/{graphs} graphs matched = {100 * matched / max(graphs, 1):.0f}%")


SPEED_MODELS = ["gpt2", "llama", "t5", "vit", "whisper", "mixtral"]

# A fresh process per store: each stored graph rebuilt, compiled by Inductor and timed beside eager.
TORCH_TIMES = """
import json, statistics, sys, time, torch, dynamo_replay
import transformers.integrations.moe  # defines transformers::grouped_mm_fallback, which Mixtral's graphs call
store, graphs = sys.argv[1], json.loads(sys.argv[2])
def median(fn, inputs, calls=20):
    for _ in range(5):
        fn(*inputs)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn(*inputs)
        times.append(time.perf_counter() - start)
    return statistics.median(times)
out = {}
with torch.no_grad():
    for compile_id, graph in graphs:
        gm = dynamo_replay.load_graph(store, compile_id, graph)
        inputs = list(gm.example_inputs)
        compiled = torch._inductor.compile(gm, inputs)
        out[compile_id + " " + graph] = {"eager": median(gm, inputs), "inductor": median(compiled, inputs),
                                         "threads": torch.get_num_threads()}
print(json.dumps(out))
"""

GRAPH_NAMES = {"aot_inference_graph": "inference", "aot_forward_graph": "forward", "aot_backward_graph": "backward"}


def _model_rows(name: str, tmp: Path) -> list[tuple]:
    """One model captured, checked through the JIT and IREE, and its graphs timed four ways."""
    from warm_start import WORKLOADS

    script, store = tmp / f"{name}.py", tmp / f"{name}.dynrep"
    # Parameters stored whole: every graph is compared with the job's own outputs (Mixtral's
    # transformers::grouped_mm_fallback, a Python op, cannot run in replay-run, the reference else).
    child = CAPTURE_CHILD.replace("capture(sys.argv[1])", "capture(sys.argv[1], parameters=True)")
    script.write_text(child.replace("@@WORKLOAD@@", textwrap.dedent(WORKLOADS[name])))
    subprocess.run([sys.executable, str(script), str(store)], check=True, capture_output=True)
    start = time.perf_counter()
    jit = mlir.lower_check(store, time_calls=True)
    jit_wall = time.perf_counter() - start
    start = time.perf_counter()
    iree = mlir.lower_check(store, runtime="iree", time_calls=True)
    iree_wall = time.perf_counter() - start
    print(
        f"{name}: JIT {jit['summary']['matched']}/{jit['summary']['graphs']} matched ({jit_wall:.0f} s), "
        f"IREE {iree['summary']['matched']}/{iree['summary']['graphs']} matched ({iree_wall:.0f} s)",
        flush=True,
    )
    for g in iree["graphs"]:
        if not g["matched"]:
            print(f"  IREE {g['compile']} {g['graph']}: {g['stage']}: {g['error'][:300]}", flush=True)
    graphs = [(g["compile"], GRAPH_NAMES[g["graph"]]) for g in jit["graphs"]]
    timer = tmp / "torch_times.py"
    timer.write_text(TORCH_TIMES)
    done = subprocess.run([sys.executable, str(timer), str(store), json.dumps(graphs)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"timing Inductor and eager failed: {done.stderr.strip().splitlines()[-1]}")
    torch_times = json.loads(done.stdout.strip().splitlines()[-1])
    return [
        (name, j, i, torch_times[f"{j['compile']} {GRAPH_NAMES[j['graph']]}"])
        for j, i in zip(jit["graphs"], iree["graphs"], strict=True)
    ]


def speed(names: list[str]) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or SPEED_MODELS:
            try:
                rows += _model_rows(name, Path(tmp))
            except (RuntimeError, subprocess.CalledProcessError, GraphError) as e:
                print(f"{name}: not measured: {e}", flush=True)
    print(
        "\n| model | compile | graph | nodes | JIT | IREE | IREE compile (s) | MLIR JIT (ms) | IREE (ms) | "
        "Inductor (ms) | eager (ms) | IREE / Inductor | JIT / IREE |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for name, j, i, t in rows:
        jit_ms, iree_ms = j["seconds"]["call"] * 1e3, i["seconds"]["call"] * 1e3
        inductor_ms, eager_ms = t["inductor"] * 1e3, t["eager"] * 1e3
        ok = j["matched"] and i["matched"] and iree_ms > 0
        over = iree_ms / inductor_ms if ok else float("nan")
        faster = jit_ms / iree_ms if ok else float("nan")
        if ok and j["graph"] == "aot_inference_graph":
            ratios.append(over)
        print(
            f"| {name} | {j['compile']} | {GRAPH_NAMES[j['graph']]} | {j['nodes']} | {j['stage']} | {i['stage']} | "
            f"{i['seconds']['jit']:.1f} | {jit_ms:.1f} | {iree_ms:.2f} | {inductor_ms:.2f} | {eager_ms:.2f} | "
            f"{over:.2f} | {faster:.0f} |"
        )
    threads = {t["threads"] for _, _, _, t in rows}
    print(f"\nthreads: Inductor and eager {sorted(threads)}; IREE local-task: one per core; JIT: 1")
    if ratios:
        print(
            f"IREE / Inductor on the inference graphs: median {statistics.median(ratios):.2f}, worst {max(ratios):.2f}"
        )


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if "--speed" in sys.argv:
        speed(args)
        return
    if "--corpus-only" not in sys.argv:
        real_models(args)
    if "--models-only" not in sys.argv:
        corpus()


def corpus() -> None:
    rows, graphs, matched = [], 0, 0
    failures: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        stores = jobs.capture_stores(lambda name: Path(tempfile.mkdtemp(prefix=name, dir=tmp)), JOBS)
        for name, store in stores.items():
            start = time.perf_counter()
            report = mlir.lower_check(store, library=jobs.SCALE_LIBRARY if name == "custom_op" else None)
            wall = time.perf_counter() - start
            graphs += report["summary"]["graphs"]
            matched += report["summary"]["matched"]
            for g in report["graphs"]:
                s = g["seconds"]
                rows.append(
                    (name, g["compile"], g["graph"], g["nodes"], s["lower"] + s["verify"], s["jit"], g["stage"])
                )
                for issue in g["issues"]:
                    failures[issue["op"]] = failures.get(issue["op"], 0) + 1
            print(
                f"{name}: {report['summary']['matched']}/{report['summary']['graphs']} matched, lower-check {wall:.1f} s",
                flush=True,
            )
    print("\n| job | compile | graph | nodes | lower + verify (s) | JIT (s) | result |\n|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.3f} | {r[5]:.2f} | {r[6]} |")
    print(f"\npass rate: {matched}/{graphs} graphs = {100 * matched / max(graphs, 1):.0f}%")
    for op, n in sorted(failures.items()):
        print(f"  not lowered: {op} x{n}")


if __name__ == "__main__":
    main()
