"""Replay's own checks added to a saved frame's guards, which PyTorch runs on every call of the
frame, and the time their first runs take (the replay summary's "checks on first calls"): the
start's share; later calls pay no clock."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class CheckClock:
    """Seconds spent in the first run of each of replay's call-time checks in this process, and
    how many checks have run."""

    seconds: float = 0.0
    runs: int = 0


CLOCK = CheckClock()


def add_call_check(manager: Any, check: Callable[[Any], bool], text: str) -> None:
    """Adds check (given the frame's locals, True to pass) to a loaded guard manager, timed."""

    first = [True]

    def timed(scope: Any) -> bool:
        if not first[0]:
            return check(scope)
        first[0] = False
        start = time.perf_counter()
        try:
            return check(scope)
        finally:
            CLOCK.seconds += time.perf_counter() - start
            CLOCK.runs += 1

    manager.root.add_lambda_guard(timed, [text], None)
