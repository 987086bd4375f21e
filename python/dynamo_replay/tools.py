"""Locating and running the executables installed with the package: replay-inspect,
replay-run (the libtorch graph runner, built where torch was installed at build time) and
replay-mlir (the MLIR lowering, built where MLIR 19 was)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig


def _executable(name: str) -> str:
    """Path of one of the package's executables: beside this interpreter first, then on PATH."""
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(directory, name)
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} is not installed: reinstall dynamo-replay (make demo does)")
    return found


def inspect_executable() -> str:
    return _executable("replay-inspect")


def runner_executable() -> str:
    return _executable("replay-run")


def mlir_executable() -> str:
    return _executable("replay-mlir")


def run_inspect(*args: str, check: bool = False, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """Runs replay-inspect with `args`, capturing text output."""
    return subprocess.run([inspect_executable(), *args], capture_output=True, text=True, check=check, timeout=timeout)
