"""`make demo`: captures the demo GPT job (gpt_demo.py, beside this file) in one process,
replays it in a fresh one with an empty Inductor cache, and shows what the store holds:
`replay-inspect ls`, `why` and one stored graph run again from the store alone.

Run from a checkout: `python examples/demo.py [--out demo-out]`."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dynamo_replay.tools import run_inspect

JOB = Path(__file__).resolve().parent / "gpt_demo.py"


def shown_inspect(*args: str) -> int:
    """Runs `replay-inspect ARGS` as the demo shows it: the command line, then its output."""
    print(f"\n$ replay-inspect {' '.join(args)}", flush=True)
    done = run_inspect(*args)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="demo-out", help="directory for the store (default: demo-out)")
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "gpt.dynrep"
    steps = [
        ("capture (compiles from scratch)", ["capture", "-o", str(store), str(JOB)]),
        ("replay (fresh process, empty Inductor cache)", ["replay", str(store), str(JOB)]),
    ]
    seconds, checksums = [], []
    for title, command in steps:
        print(f"== {title}\n$ python -m dynamo_replay {' '.join(command)}", flush=True)
        with tempfile.TemporaryDirectory(prefix="dynrep-demo-cache-") as cache:
            start = time.perf_counter()
            result = subprocess.run(
                [sys.executable, "-m", "dynamo_replay", *command],
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache},
            )
            seconds.append(time.perf_counter() - start)
            sys.stdout.write(result.stdout)
            checksums.append(next((line for line in result.stdout.splitlines() if "checksum" in line), None))
            print(f"(whole process: {seconds[-1]:.2f} s)\n", flush=True)
        if result.returncode != 0:
            return result.returncode
        if command[0] == "capture":  # the pre-flight: what the replay below will do, before it runs
            print(f"== check (before the restart)\n$ python -m dynamo_replay check {store} {JOB}", flush=True)
            checked = subprocess.run([sys.executable, "-m", "dynamo_replay", "check", str(store), str(JOB)])
            print(flush=True)
            if checked.returncode in (1, 2):  # 0, 3, 4: every frame replays, some compile, refused
                return checked.returncode
    same = checksums[0] is not None and checksums[0] == checksums[1]
    print(
        f"cold compile (captured): {seconds[0]:.2f} s; replayed: {seconds[1]:.2f} s "
        f"({seconds[0] / seconds[1]:.1f}x faster); outputs {'identical' if same else 'DIFFER'}",
        flush=True,
    )
    if not same:
        return 1
    for command in ("ls", "why"):  # the store's compiles; why the job compiled more than once
        if (status := shown_inspect(command, str(store))) != 0:
            return status
    # One stored graph run again from the store alone, through libtorch without Python: the
    # first compile that finished (a restarted attempt leaves a partial one before it).
    compiles = json.loads(run_inspect("ls", "--json", str(store)).stdout or "{}").get("compiles", [])
    compile_id = next((c["compile_id"] for c in compiles if c.get("status") == "ok"), "0/0")
    return shown_inspect("run", str(store), compile_id)


if __name__ == "__main__":
    sys.exit(main())
