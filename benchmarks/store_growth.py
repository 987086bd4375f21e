"""Stores that grow: a serving job that meets a new input length at each restart, four ways.

Workload (tests/python/jobs/lifecycle/serve.py --model gpt2): GPT-2 (2 layers, width 64) from
its config with seeded random weights, torch.compile(dynamic=False), one request per length,
each restart a fresh process. Restarts: 1 serves length 8; 2 serves 8 and 16; 3 serves 8, 16 and
24; 4 serves the same three again (a restart that meets nothing new).
Columns:
  warm     no dynamo-replay, PyTorch's local caches kept across the restarts (one
           TORCHINDUCTOR_CACHE_DIR): Dynamo traces every length again at each restart;
  replay   the store captured by restart 1, replayed unchanged: every length it did not see
           compiles again at each restart;
  update   replay --update: restart 1 captures the store, each later restart adds what it compiled.
The figure is each restart's wall seconds (process start to exit); every output must match
eager's. Reported: restarts 2-4 together, and restart 4 alone, per column, and update's ratio
to each.

Run: .venv-2.15.0/bin/python benchmarks/store_growth.py [--rounds 1]. Figures: docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "tests" / "python" / "jobs" / "lifecycle" / "serve.py"
RESTARTS = ["8", "8,16", "8,16,24", "8,16,24"]


def restart(folder: Path, lengths: str, flags: list[str], cache: Path) -> float:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("DYNAMO_REPLAY", "TORCHINDUCTOR_"))}
    environment["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
    report = folder / f"report-{lengths}.json"
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            str(JOB),
            str(folder / "job.dynrep"),
            str(report),
            "--lengths",
            lengths,
            "--model",
            "gpt2",
            *flags,
        ],
        capture_output=True,
        text=True,
        env=environment,
        timeout=900,
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0 or not json.loads(report.read_text())["outputs_match"]:
        raise SystemExit(f"restart {lengths} {flags} failed:\n{done.stderr[-3000:]}")
    return seconds


def column(name: str, root: Path) -> list[float]:
    folder = root / name
    folder.mkdir()
    times = []
    for index, lengths in enumerate(RESTARTS):
        cache = (
            folder / "inductor" if name == "warm" else folder / f"inductor-{index}"
        )  # replay: a fresh host each time
        if name == "warm":
            flags = ["--plain"]
        elif name == "replay":
            flags = ["--update"] if index == 0 else []  # restart 1 captures, the store then stays as it is
        else:
            flags = ["--update"]
        times.append(restart(folder, lengths, flags, cache))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    found: dict[str, list[list[float]]] = {"warm": [], "replay": [], "update": []}
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="dynrep-growth-") as directory:
            for name in found:
                found[name].append(column(name, Path(directory)))
    print(f"{'column':<8} {'restart 1':>10} {'2':>8} {'3':>8} {'4':>8} {'2-4':>8}")
    later = {}
    for name, rounds in found.items():
        medians = [statistics.median(r[i] for r in rounds) for i in range(len(RESTARTS))]
        later[name] = (sum(medians[1:]), medians[3])
        print(f"{name:<8} " + " ".join(f"{m:>8.2f}" for m in medians) + f" {later[name][0]:>8.2f}")
    for name in ("warm", "replay"):
        print(
            f"update against {name}: restarts 2-4 {later[name][0] / later['update'][0]:.2f}x faster, "
            f"restart 4 {later[name][1] / later['update'][1]:.2f}x"
        )


if __name__ == "__main__":
    main()
