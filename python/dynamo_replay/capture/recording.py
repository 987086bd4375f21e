"""What the parts of a capture (trace intake, structured events, code objects, graph calls,
precompile notes, the summary) use of their session: they depend on this interface and
session.py implements it, so the session imports its parts and no part imports the session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from dynamo_replay._core import Store
    from dynamo_replay.capture.shape_events import ShapeEvents
    from dynamo_replay.replay_data import ReplayData


class Recording(Protocol):
    store: Store
    precompile: bool  # packages are saved (replay without tracing)
    parameters: bool  # samples hold parameters whole, outside the cap
    sample_limit: int  # bytes per graph call; 0: no samples
    replay_data: ReplayData
    shapes: ShapeEvents
    failures: list[str]
    # The other parts, for the summary: they are read, never called back into.
    code: Any
    trace: Any
    structured: Any
    precompile_notes: Any

    def put_event(
        self, name: str, compile_id: tuple[int, int, int], metadata: Any, payload: str | bytes | None
    ) -> None: ...

    def note_failure(self, where: str) -> None: ...
