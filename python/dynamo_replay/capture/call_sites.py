"""Where each compiled function was called from: the user line, and what that line calls each of
the function's tensor inputs. `why` advises `mark_dynamic(ids, 1)` in the caller's own names, and
`why --verify` puts such a line before the call. Found by identity, not by parsing the call: a
caller's local (or one element of a local list, tuple or dict) that is the very tensor the
compiled frame gets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dynamo_replay import schema
from dynamo_replay._torch import shapes as _torch_shapes

PutEvent = Callable[[str, tuple[int, int, int], Any, Any], None]
_MAX_NAMES = 64  # a frame's inputs named at most; the rest are left out


def record(put_event: PutEvent, compile_id: tuple[int, int, int]) -> None:
    """Called when Dynamo starts a compile (its dynamo_start event)."""
    caller = _torch_shapes.calling_user_frame()
    compiled = _torch_shapes.compiling_frame_locals()
    if caller is None:
        return
    frame, caller_locals = caller
    arguments: dict[str, str] = {}
    if compiled is not None:
        theirs = _torch_shapes.tensor_names(caller_locals, _MAX_NAMES)
        for id_, source in _torch_shapes.tensor_names(compiled, _MAX_NAMES).items():
            if id_ in theirs and len(arguments) < _MAX_NAMES:
                arguments[_guard_source(source)] = theirs[id_]
    put_event(schema.EVENT_CALL_SITE, compile_id, {"user_frame": frame, "arguments": arguments}, None)


def _guard_source(source: str) -> str:
    """`x` -> `L['x']`, `kwargs['ids']` -> `L['kwargs']['ids']`: as guards name the frame's inputs."""
    name, bracket, rest = source.partition("[")
    return f"L[{name!r}]" + (bracket + rest if bracket else "")
