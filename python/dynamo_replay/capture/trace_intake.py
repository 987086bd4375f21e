"""Trace intake: each record PyTorch logs to its structured trace (torch.__trace) becomes a
TraceEvent in the store, and is handed to the rooms that read more from it while it is logged
(graph IRs, guard trees, shape events, what replay decides by)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dynamo_replay.capture.recording import Recording

NO_COMPILE = (-1, -1, -1)  # the compile id of an event outside any compile
_ID_KEYS = ("frame_id", "frame_compile_id", "attempt")
_NOT_NAMES = {*_ID_KEYS, "has_payload"}

# What replay's summary reads of each compile's metrics.
COMPILE_FIELDS = (
    "compile_id",
    "co_name",
    "co_filename",
    "co_firstlineno",
    "entire_frame_compile_time_s",
    "backend_compile_time_s",
    "fail_type",
)


def compile_id_of(metadata: dict[str, Any]) -> tuple[int, int, int]:
    frame, compile_ = metadata.get("frame_id"), metadata.get("frame_compile_id")
    if frame is None or compile_ is None:
        return NO_COMPILE
    return (int(frame), int(compile_), int(metadata.get("attempt") or 0))


def bypass_reason(payload: Any) -> str:
    try:
        return str(json.loads(payload).get("_reason", "no reason given"))
    except (ValueError, TypeError, AttributeError):
        return str(payload)[:200]


class TraceHandler(logging.Handler):
    """Turns each structured-trace log record into a TraceEvent record (payload as a blob)."""

    def __init__(self, session: Recording) -> None:
        super().__init__(level=logging.DEBUG)
        self._session = session

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._session.trace.logged(getattr(record, "metadata", {}) or {}, getattr(record, "payload", None))
        except Exception:  # capture must never break the job it observes
            self._session.note_failure("trace handler")


def listen(session: Recording) -> Callable[[], None]:
    """Puts the session's handler on the structured-trace logger; returns what takes it off."""
    from dynamo_replay import _torch

    return _torch.settings.listen_to_trace(TraceHandler(session))


class TraceIntake:
    """Where each structured-trace record goes: the store first, then the rooms that read it."""

    def __init__(self, session: Recording) -> None:
        self._session = session

    def logged(self, metadata: dict[str, Any], payload: str | None) -> None:
        session = self._session
        name = next((k for k in metadata if k not in _NOT_NAMES), "unknown")
        compile_id = compile_id_of(metadata)
        session.put_event(name, compile_id, metadata.get(name), payload)
        self.keep_for_replay(name, compile_id, metadata.get(name), payload)
        session.structured.logged(name, compile_id, payload)
        try:
            session.shapes.logged(name, compile_id, metadata.get(name), payload)
        except Exception:  # the event itself is stored; only capture's reading of it is lost
            session.note_failure(f"shape event {name}")

    def keep_for_replay(self, name: str, compile_id: tuple[int, int, int], metadata: Any, payload: Any) -> None:
        """Keeps from PyTorch's events what replay decides by: each compile's metrics and each
        frame PyTorch's precompile left out of its package."""
        session = self._session
        if name == "compilation_metrics" and isinstance(metadata, dict):
            session.replay_data.compiles.append({key: metadata.get(key) for key in COMPILE_FIELDS})
        elif name == "artifact" and isinstance(metadata, dict) and metadata.get("name") == "precompile_cache_bypass":
            session.precompile_notes.bypassed(compile_id, bypass_reason(payload))
