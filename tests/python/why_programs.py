"""Captures the why-programs (tests/python/jobs/why) into stores, each program's broken and
fixed variant with Dynamo reset before each. Importing torch._dynamo costs a child about 5 s of
this machine's 2 cores, more than capturing a program, so two children share the programs
(one per core) instead of one child each.

why_stores(directory) -> {program: {"broken": store path, "fixed": store path}}; each program's
run() results are in runs.json beside its stores (program_runs). Programs whose stores are already
in the directory are not captured again, so a session captures them once.

As a script (a child): why_programs.py OUT_DIR PROGRAM...
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

JOBS = Path(__file__).resolve().parent / "jobs"
sys.path.append(str(JOBS))  # after everything else: the jobs folder holds scripts, too
import why  # noqa: E402  (tests/python/jobs/why: the programs, no PyTorch at import)

PROGRAMS = why.PROGRAMS
VARIANTS = why.VARIANTS
RUNS = "runs.json"
_CHILDREN = 2


def _store_paths(directory: Path, program: str) -> dict[str, Path]:
    return {variant: directory / program / f"{variant}.dynrep" for variant in VARIANTS}


def _capture_in_child(directory: Path, programs: list[str]) -> None:
    child = subprocess.run(
        [sys.executable, __file__, str(directory), *programs],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=300,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    failed = [p for p in programs if not (directory / p / RUNS).exists()]
    if child.returncode != 0 or failed:
        raise RuntimeError(
            f"capturing why-program {failed[:1]} failed (exit {child.returncode}):\n{child.stderr[-4000:]}"
        )


def why_stores(directory: Path, programs: tuple[str, ...] = PROGRAMS) -> dict[str, dict[str, Path]]:
    """Every program's broken and fixed store under directory, captured where missing."""
    directory = Path(directory)
    missing = [p for p in programs if not (directory / p / RUNS).exists()]
    shares = [missing[i::_CHILDREN] for i in range(_CHILDREN) if missing[i::_CHILDREN]]
    with ThreadPoolExecutor(_CHILDREN) as pool:
        list(pool.map(lambda share: _capture_in_child(directory, share), shares))
    return {program: _store_paths(directory, program) for program in programs}


def inspect_all(stores: dict[str, dict[str, Path]], command: str) -> dict[str, dict[str, Any]]:
    """`replay-inspect COMMAND --json` of every store: {program: {variant: its JSON}}."""
    from dynamo_replay.tools import inspect_executable

    out: dict[str, dict[str, Any]] = {}
    for program, variants in stores.items():
        out[program] = {}
        for variant, path in variants.items():
            result = subprocess.run(
                [inspect_executable(), command, "--json", str(path)], capture_output=True, text=True, timeout=60
            )
            assert result.returncode == 0, result.stderr
            out[program][variant] = json.loads(result.stdout)
    return out


def program_runs(stores: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """{variant: run()'s result} for one program's stores (from why_stores)."""
    return json.loads((Path(stores["broken"]).parent / RUNS).read_text())


def _capture_program(directory: Path, program: str) -> None:
    import torch

    import dynamo_replay as dr

    module = why.load(program)
    runs = {}
    for variant, path in _store_paths(directory, program).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        torch._dynamo.reset()
        with dr.capture(path):
            runs[variant] = module.run(variant)
    torch._dynamo.reset()
    (directory / program / RUNS).write_text(json.dumps(runs, indent=1))  # last: marks the program done


if __name__ == "__main__":
    for name in sys.argv[2:]:
        _capture_program(Path(sys.argv[1]), name)
