"""Locating and running the replay-inspect executable installed with the package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig


def inspect_executable() -> str:
    """Path of replay-inspect: beside this interpreter first, then on PATH."""
    for directory in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = os.path.join(directory, "replay-inspect")
        if os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("replay-inspect")
    if found is None:
        raise FileNotFoundError("replay-inspect is not installed: reinstall dynamo-replay (make demo does)")
    return found


def run_inspect(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """Runs replay-inspect with `args`, capturing text output."""
    return subprocess.run([inspect_executable(), *args], capture_output=True, text=True, check=check)
