"""The environment of a job a test starts in a fresh process."""

from __future__ import annotations

import os

# The suite's own Inductor setting, which a job keeps (conftest sets it): one compile thread.
KEPT = ("TORCHINDUCTOR_COMPILE_THREADS",)


def job_environment(inductor_cache: object, **extra: str) -> dict[str, str]:
    """os.environ without the caller's dynamo-replay and Inductor settings (a developer's
    DYNAMO_REPLAY or cache must not decide what a test's job does), with an Inductor cache of
    its own, then `extra`."""
    environment = {
        k: v for k, v in os.environ.items() if k in KEPT or not k.startswith(("DYNAMO_REPLAY", "TORCHINDUCTOR_"))
    }
    environment.update(TORCHINDUCTOR_CACHE_DIR=str(inductor_cache), **extra)
    return environment
