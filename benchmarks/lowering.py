"""MLIR lowering figures (docs/benchmarks.md): per graph, lowering + verification time and JIT
compile time against its node count, and lower-check's pass rate over a corpus of captured jobs
(tests/python/graph_jobs.py). Run: .venv/bin/python benchmarks/lowering.py"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from dynamo_replay import mlir

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))
import graph_jobs as jobs  # noqa: E402

JOBS = {"mlp": jobs.mlp, "gpt": jobs.gpt, "convnet": jobs.convnet_training_step, "graph_break": jobs.graph_break,
        "hf_gpt2_train": jobs.hf_gpt2_training_step, "hf_bert": jobs.hf_bert, "inductor": jobs.inductor_mlp,
        "hf_gpt2_train_no_dropout": lambda: jobs.hf_gpt2_training_step(dropout=False), "custom_op": jobs.custom_op}


def main() -> None:
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
                rows.append((name, g["compile"], g["graph"], g["nodes"], s["lower"] + s["verify"], s["jit"], g["stage"]))
                for issue in g["issues"]:
                    failures[issue["op"]] = failures.get(issue["op"], 0) + 1
            print(f"{name}: {report['summary']['matched']}/{report['summary']['graphs']} matched, lower-check {wall:.1f} s", flush=True)
    print("\n| job | compile | graph | nodes | lower + verify (s) | JIT (s) | result |\n|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.3f} | {r[5]:.2f} | {r[6]} |")
    print(f"\npass rate: {matched}/{graphs} graphs = {100 * matched / max(graphs, 1):.0f}%")
    for op, n in sorted(failures.items()):
        print(f"  not lowered: {op} x{n}")


if __name__ == "__main__":
    main()
