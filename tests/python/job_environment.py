"""The environment of a job a test starts in a fresh process, and the Inductor cache it starts with."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from shared_captures import shared

# The suite's own Inductor setting, which a job keeps (conftest sets it): one compile thread.
KEPT = ("TORCHINDUCTOR_COMPILE_THREADS",)


def job_environment(inductor_cache: Path | str, **extra: str) -> dict[str, str]:
    """os.environ without the caller's dynamo-replay and Inductor settings (a developer's
    DYNAMO_REPLAY or cache must not decide what a test's job does), with an Inductor cache of
    its own (fresh_inductor_cache), then `extra`."""
    environment = {
        k: v for k, v in os.environ.items() if k in KEPT or not k.startswith(("DYNAMO_REPLAY", "TORCHINDUCTOR_"))
    }
    environment.update(TORCHINDUCTOR_CACHE_DIR=str(fresh_inductor_cache(inductor_cache)), **extra)
    return environment


def fresh_inductor_cache(path: Path | str) -> Path:
    """An Inductor cache with nothing of an earlier compile in it but the CPU vector-ISA probe's
    libraries, as on any machine where torch.compile ran before. Without them, the first compile
    of every job builds the probe again (about 15 s of g++ on 2 cores, the same libraries each
    time). Inductor still runs its ISA check against them, so a job that counts the checks sees
    each one, and replay's reuse of the recorded answer is still what skips it."""
    path = Path(path)
    shutil.copytree(_isa_probes(), path, dirs_exist_ok=True)
    return path


@functools.cache
def _isa_probes() -> Path:
    return shared("isa probes", _make_isa_probes, inputs=[__file__]) / "cache"


def _make_isa_probes(folder: Path) -> None:
    """One small compile in a cache of its own, of which only the probe's files are kept."""
    from dynamo_replay import kernels

    built = folder / "built"
    code = "import torch\ntorch.compile(lambda x: x.sin() + 1)(torch.ones(8))\n"
    environment = {k: v for k, v in os.environ.items() if k in KEPT or not k.startswith("TORCHINDUCTOR_")}
    subprocess.run(
        [sys.executable, "-c", code],
        env={**environment, "TORCHINDUCTOR_CACHE_DIR": str(built)},
        check=True,
        timeout=600,
    )
    (folder / "cache").mkdir()
    kernels.copy_isa_probes(built, folder / "cache")
    shutil.rmtree(built)
