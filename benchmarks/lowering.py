"""MLIR lowering figures (docs/benchmarks.md): per graph, lowering + verification time and JIT
compile time against its node count, and lower-check's pass rate over a corpus of captured jobs
(tests/python/graph_jobs.py) and over the real models of the warm-start benchmark (GPT-2, BERT,
T5, Llama, ViT and two training steps, full size, each captured by a fresh process with the
default capture: Inductor, the default sample cap, dropout on where the model has it).
Run: .venv-2.15.0/bin/python benchmarks/lowering.py [--models-only | --corpus-only] [model ...]
(the OpInfo corpus is benchmarks/mlir_opinfo.py)."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from dynamo_replay import mlir

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


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
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
