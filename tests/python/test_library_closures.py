"""Frames that library code guards on by its closures are saved and used (issue 35): a config
that is a validated dataclass (huggingface_hub's @strict, as transformers' WhisperConfig is),
whose forward sets a field and so runs the field's validators, each made by a factory closing over
its dataclass field. Captured once; replayed unchanged (nothing traced), and with the field's
validator changed to one that rejects the value forward sets (the job must raise as a plain
torch.compile does, and without replay's checks would not: the test can fail).
About 40 s on a 2-core machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from job_environment import fresh_inductor_cache  # noqa: E402

JOB = Path(__file__).parent / "jobs" / "validated_config.py"
CHECKS_OFF = Path(__file__).parent / "jobs" / "replay_checks_off.py"


def _run(root: Path, name: str, *command: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DYNAMO_REPLAY", "TORCHINDUCTOR_", "DYNREP_"))}
    env.update(TORCHINDUCTOR_CACHE_DIR=str(fresh_inductor_cache(root / f"{name}-cache")), **extra)
    result = subprocess.run([sys.executable, *command, str(JOB)], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def _answer(result: subprocess.CompletedProcess[str]) -> str:
    return next(line for line in result.stdout.splitlines() if line.startswith(("OUTPUT", "REJECTED")))


@pytest.fixture(scope="module")
def captured(tmp_path_factory) -> tuple[Path, str]:
    """The store, and the captured run's answer (a plain torch.compile's: capture changes nothing)."""
    root = tmp_path_factory.mktemp("validated-config")
    path = root / "job.dynrep"
    captured = _run(root, "capture", "-m", "dynamo_replay", "capture", "-o", str(path))
    assert _answer(captured).startswith("OUTPUT")
    return path, _answer(captured)


def test_a_validated_config_replays_with_nothing_traced(captured: tuple[Path, str]) -> None:
    store, answer = captured
    replayed = _run(store.parent, "unchanged", "-m", "dynamo_replay", "replay", str(store))
    assert _answer(replayed) == answer
    assert "compiled here: 0 frames" in replayed.stderr, replayed.stderr[-3000:]
    assert "has no description" not in replayed.stderr


def test_a_changed_validator_is_right(captured: tuple[Path, str]) -> None:
    store, _ = captured
    plain = _run(store.parent, "plain-strict", DYNREP_VALIDATOR="strict")
    assert _answer(plain).startswith("REJECTED StrictDataclassFieldValidationError")
    replayed = _run(store.parent, "strict", "-m", "dynamo_replay", "replay", str(store), DYNREP_VALIDATOR="strict")
    assert _answer(replayed) == _answer(plain)
    assert "forward (" in replayed.stderr.split("compiled here:")[-1]  # the saved frame was not used, and said why


def test_without_replays_checks_the_changed_validator_would_be_skipped(captured: tuple[Path, str]) -> None:
    store, _ = captured
    off = _run(store.parent, "off", str(CHECKS_OFF), "replay", str(store), DYNREP_VALIDATOR="strict")
    assert _answer(off).startswith("OUTPUT"), "the saved frame ran the old validator: the test above can fail"
