"""Replay's own checks added to a saved frame's guards, which PyTorch runs on every call of the
frame, and the time they take (the replay summary's "checks on calls")."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class CheckClock:
    """Seconds spent in replay's call-time checks in this process, and how many ran."""

    seconds: float = 0.0
    runs: int = 0


CLOCK = CheckClock()


def add_call_check(manager: Any, check: Callable[[Any], bool], text: str) -> None:
    """Adds check (given the frame's locals, True to pass) to a loaded guard manager, timed."""

    def timed(scope: Any) -> bool:
        start = time.perf_counter()
        try:
            return check(scope)
        finally:
            CLOCK.seconds += time.perf_counter() - start
            CLOCK.runs += 1

    manager.root.add_lambda_guard(timed, [text], None)
