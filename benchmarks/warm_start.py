"""Warm start: time to first output of a torch.compile job in a fresh process, six ways.

Columns: eager (no compile); cold compile (empty Inductor cache); PyTorch's warm local caches
(FX-graph and AOTAutograd caches filled by an earlier run); PyTorch Mega-Cache
(load_cache_artifacts into an empty cache); PyTorch caching precompile with Mega-Cache; and
dynamo-replay (replay() of a capture, empty cache). Every measurement is a fresh process,
timed by this script from spawn until the child prints its first output; columns alternate
within each round and the medians are reported. Compile overhead is a column's time to first
output minus eager's.

Run: .venv/bin/python benchmarks/warm_start.py [--repeat 5] [--workloads gpt convnet train] [--json FILE]
Target (issue 4): dynamo-replay's overhead is at most 5% of cold compile's, and lower than
every PyTorch column, on every workload.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capture_overhead import WORKLOADS as MODELS  # noqa: E402  (the same GPT-style model and convnet)

# Each workload defines make() -> model and first_output(fn) -> tensor, where fn is the model
# or its compiled form; first_output is what the job does before it has its first result.
WORKLOADS = {
    "gpt": MODELS["gpt"] + """
        dynamic = True
        def first_output(fn):
            with torch.no_grad():
                return fn(torch.randint(0, 100, (2, 16), generator=torch.Generator().manual_seed(0)))
    """,
    "convnet": MODELS["convnet"] + """
        dynamic = None
        def first_output(fn):
            with torch.no_grad():
                return fn(torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(0)))
    """,
    "train": """
        model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        dynamic = None
        def first_output(fn):
            g = torch.Generator().manual_seed(0)
            x, y = torch.randn(32, 64, generator=g), torch.randint(0, 10, (32,), generator=g)
            loss = torch.nn.functional.cross_entropy(fn(x), y)
            loss.backward()
            optimizer.step()
            return loss.detach()
    """,
}

CHILD = """
import sys
mode, artifact = sys.argv[1], sys.argv[2]
import torch
{workload}
torch.manual_seed(0)
if mode in ("precompile", "save-precompile"):
    torch._dynamo.config.caching_precompile = True
if mode in ("mega", "precompile"):
    torch.compiler.load_cache_artifacts(open(artifact, "rb").read())
session = None
if mode == "replay":
    import dynamo_replay
    session = dynamo_replay.replay(artifact, strict=True, verbose=False).__enter__()
if mode == "capture":
    import dynamo_replay
    session = dynamo_replay.capture(artifact, precompile=True).__enter__()
fn = model if mode == "eager" else torch.compile(model, dynamic=dynamic)
out = first_output(fn)
print("FIRST_OUTPUT", flush=True)
if mode.startswith("save-"):
    open(artifact, "wb").write(torch.compiler.save_cache_artifacts()[0])
if session is not None:
    session.__exit__(None, None, None)
"""

COLUMNS = ["eager", "cold", "warm", "mega", "precompile", "replay"]
TITLES = {
    "eager": "eager (no compile)", "cold": "cold compile", "warm": "PyTorch warm local caches",
    "mega": "PyTorch Mega-Cache", "precompile": "PyTorch precompile + Mega-Cache", "replay": "dynamo-replay",
}


def run_child(script: Path, mode: str, artifact: Path, cache: Path) -> float:
    """Seconds from spawn to the child's first output line."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache)}
    env.pop("DYNAMO_REPLAY", None)
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, str(script), mode, str(artifact)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    first = None
    for line in child.stdout:
        if line.startswith("FIRST_OUTPUT") and first is None:
            first = time.perf_counter() - start
    stderr = child.stderr.read()
    if child.wait() != 0 or first is None:
        raise RuntimeError(f"{script.name} {mode} failed:\n{stderr[-3000:]}")
    return first


def bench_workload(name: str, work: Path, repeat: int) -> dict[str, list[float]]:
    script = work / f"{name}.py"
    script.write_text(CHILD.format(workload=textwrap.dedent(WORKLOADS[name])))
    fresh = lambda: Path(tempfile.mkdtemp(prefix="cache-", dir=work))  # noqa: E731
    warm_cache = fresh()
    artifacts = {"mega": work / f"{name}.mega", "precompile": work / f"{name}.precompile", "replay": work / f"{name}.dynrep"}
    print(f"[{name}] preparing: warm cache, Mega-Cache, precompile Mega-Cache, capture", file=sys.stderr)
    run_child(script, "cold", work / "unused", warm_cache)
    run_child(script, "save-mega", artifacts["mega"], fresh())
    run_child(script, "save-precompile", artifacts["precompile"], fresh())
    run_child(script, "capture", artifacts["replay"], fresh())
    times: dict[str, list[float]] = {column: [] for column in COLUMNS}
    for round_ in range(repeat):
        for column in COLUMNS:
            cache = warm_cache if column == "warm" else fresh()
            times[column].append(run_child(script, column, artifacts.get(column, work / "unused"), cache))
            if cache != warm_cache:
                shutil.rmtree(cache, ignore_errors=True)
        print(f"[{name}] round {round_ + 1}/{repeat}: " + ", ".join(f"{c} {times[c][-1]:.2f}" for c in COLUMNS), file=sys.stderr)
    return times


def table(results: dict[str, dict[str, list[float]]]) -> str:
    lines = []
    for name, times in results.items():
        medians = {column: statistics.median(values) for column, values in times.items()}
        cold_overhead = medians["cold"] - medians["eager"]
        lines += [f"\n**{name}**\n", "| column | time to first output (s) | compile overhead (s) | overhead / cold's |",
                  "|---|---:|---:|---:|"]
        for column in COLUMNS:
            overhead = medians[column] - medians["eager"]
            share = "" if column == "eager" else f"{100 * overhead / cold_overhead:.1f}%"
            lines.append(f"| {TITLES[column]} | {medians[column]:.2f} | {overhead:.2f} | {share} |")
        replay_overhead = medians["replay"] - medians["eager"]
        best_pytorch = min(medians[c] - medians["eager"] for c in ("warm", "mega", "precompile"))
        verdict = "MET" if replay_overhead <= 0.05 * cold_overhead and replay_overhead < best_pytorch else "MISS"
        lines.append(f"\ntarget (replay overhead <= 5% of cold's and below every PyTorch column): {verdict}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--json", help="write every measurement to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="warm-start-") as work:
        results = {name: bench_workload(name, Path(work), args.repeat) for name in args.workloads}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
