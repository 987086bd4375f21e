"""Multi-rank warm start: the training steps of warm_start.py's models under torchrun (gloo, CPU),
time to the first output of the slowest rank, six ways. The multi-rank rows of warm_start.py.

Workloads (tests/python/jobs/ranks/train_step.py, 3 SGD steps, each rank a fresh process):
  gpt2-ddp   GPT-2 (2 layers, width 128) under DDP with 1 MB buckets: DDPOptimizer splits its graph;
  gpt2-fsdp  the same model under FSDP2 (fully_shard on each block and on the model).
Columns (each launch has its own empty TORCHINDUCTOR_CACHE_DIR unless said otherwise):
  cold          torch.compile;
  warm          PyTorch's warm local caches: a copy, made before each launch, of the cache an
                untimed cold launch filled (shared by the launch's ranks, as on one host);
  warm-redis    PyTorch's Redis remote caches (TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE=1,
                TORCHINDUCTOR_AUTOGRAD_REMOTE_CACHE=1), filled by an untimed launch;
  replay        python -m dynamo_replay replay STORE, the store captured by an untimed launch
                of `python -m dynamo_replay capture`;
  fleet         DYNAMO_REPLAY=redis://...?name=JOB, the entry published by an untimed launch
                (each timed launch downloads it into an empty local cache);
  replay-1rank  the same model in one process (world size 1), replaying its own store: the
                reference the slowest rank is compared with;
  replay-once   python -m dynamo_replay replay STORE, the store captured by one process for
                every rank (`capture --world-size N`, PyTorch's fake process group).
The figure is each launch's slowest rank: seconds from the rank's start (before `import torch`)
to its first loss. Columns alternate within each round; medians (min, max) are reported, and
every launch's losses and parameters must be bitwise equal to cold's.

Run: .venv-2.15.0/bin/python benchmarks/multi_rank.py [--repeat 3] [--workloads gpt2-ddp gpt2-fsdp] [--ranks 2]
Targets (issue 32): the slowest rank within 10% of replay-1rank, and at least 2.5x below
PyTorch's warm caches (warm, warm-redis). Figures: docs/benchmarks.md.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "python" / "jobs" / "ranks" / "train_step.py"
sys.path.insert(0, str(ROOT / "tests" / "python"))
from redis_server import free_port, start_redis  # noqa: E402

WORKLOADS = {"gpt2-ddp": ("--wrap", "ddp"), "gpt2-fsdp": ("--wrap", "fsdp")}
COLUMNS = ["cold", "warm", "warm-redis", "replay", "fleet", "replay-1rank", "replay-once"]


def launch(out: Path, args: tuple[str, ...], ranks: int, env: dict[str, str], tool: tuple[str, ...] = ()) -> list[dict]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DYNAMO_REPLAY", "TORCHINDUCTOR_"))}
    environment.update(env)
    environment.setdefault("TORCHINDUCTOR_CACHE_DIR", str(out) + "-inductor")
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(ranks),
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        *(["-m", "dynamo_replay", *tool] if tool else []),
        str(JOB),
        str(out),
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    return [json.loads((out / f"rank-{rank}.json").read_text()) for rank in range(ranks)]


def capture_once(out: Path, args: tuple[str, ...], ranks: int, store: Path) -> None:
    """One process captures the store every rank replays (no torchrun)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DYNAMO_REPLAY", "TORCHINDUCTOR_"))}
    environment["TORCHINDUCTOR_CACHE_DIR"] = str(out) + "-inductor"
    command = [sys.executable, "-m", "dynamo_replay", "capture", "--world-size", str(ranks), "-o", str(store)]
    done = subprocess.run(
        [*command, str(JOB), str(out), *args], capture_output=True, text=True, env=environment, timeout=900
    )
    if done.returncode != 0:
        raise SystemExit(f"capture --world-size {ranks} failed:\n{done.stderr[-3000:]}")


def bench(name: str, ranks: int, repeat: int, work: Path, redis_port: int) -> dict[str, list[float]]:
    args = WORKLOADS[name]
    remote = {
        "TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE": "1",
        "TORCHINDUCTOR_AUTOGRAD_REMOTE_CACHE": "1",
        "TORCHINDUCTOR_REDIS_HOST": "127.0.0.1",
        "TORCHINDUCTOR_REDIS_PORT": str(redis_port),
    }
    fleet = {"DYNAMO_REPLAY": f"redis://127.0.0.1:{redis_port}/1?name={name}"}
    reference = launch(work / "fill-cold", args, ranks, {})  # fills the warm cache, the reference numbers
    launch(work / "fill-redis", args, ranks, remote)
    store, single = work / "job.dynrep", work / "single.dynrep"
    launch(work / "fill-store", args, ranks, {}, tool=("capture", "-o", str(store)))
    launch(work / "fill-single", args, 1, {}, tool=("capture", "-o", str(single)))
    launch(work / "fill-fleet", args, ranks, {**fleet, "DYNAMO_REPLAY_CACHE": str(work / "fill-fleet-cache")})
    once = work / "once.dynrep"
    capture_once(work / "fill-once", args, ranks, once)
    expected = [(r["losses"], r["parameters"]) for r in reference]
    times: dict[str, list[float]] = {column: [] for column in COLUMNS}
    for round_ in range(repeat):
        for column in COLUMNS:
            out = work / f"{column}-{round_}"
            env: dict[str, str] = {}
            tool: tuple[str, ...] = ()
            count = ranks
            if column == "warm":
                shutil.copytree(str(work / "fill-cold") + "-inductor", str(out) + "-inductor")
            elif column == "warm-redis":
                env = remote
            elif column == "replay":
                tool = ("replay", "-q", str(store))
            elif column == "fleet":
                env = {**fleet, "DYNAMO_REPLAY_CACHE": str(out) + "-cache"}
            elif column == "replay-1rank":
                tool, count = ("replay", "-q", str(single)), 1
            elif column == "replay-once":
                tool = ("replay", "-q", str(once))
            found = launch(out, args, count, env, tool)
            if count == ranks and [(r["losses"], r["parameters"]) for r in found] != expected:
                raise SystemExit(f"{name} {column}: the outputs differ from cold's")
            times[column].append(max(r["first_output_s"] for r in found))
            print(f"{name} round {round_} {column}: {times[column][-1]:.2f} s", file=sys.stderr)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dynrep-multi-rank-"))
    port = free_port()
    server = start_redis(port, work, "--appendonly", "no")
    report = {}
    try:
        for name in args.workloads:
            report[name] = bench(name, args.ranks, args.repeat, work / name, port)
    finally:
        server.kill()
        shutil.rmtree(work, ignore_errors=True)
    print(f"slowest rank's time to first output, s: median (min-max) of {args.repeat}, {args.ranks} ranks")
    print(
        f"{'workload':<10} "
        + " ".join(f"{c:>18}" for c in COLUMNS)
        + "  replay/1rank  warm/replay  redis/replay  once/replay"
    )
    for name, times in report.items():
        median = {c: statistics.median(v) for c, v in times.items()}
        cells = " ".join(f"{median[c]:6.2f} ({min(times[c]):.1f}-{max(times[c]):.1f})".rjust(18) for c in COLUMNS)
        print(
            f"{name:<10} {cells}  {median['replay'] / median['replay-1rank']:11.2f}  "
            f"{median['warm'] / median['replay']:10.2f}  {median['warm-redis'] / median['replay']:11.2f}  "
            f"{median['replay-once'] / median['replay']:11.2f}"
        )
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
