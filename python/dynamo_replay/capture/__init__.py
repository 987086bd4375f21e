"""capture(): record everything a torch.compile job produces into a store.

Hooks go in only through PyTorch's own hook points and all come out when capture ends, also
on an exception: a handler on the structured-trace logger (torch.__trace), which carries
compile ids, guards, graphs, symbolic-shape events and metrics; and Dynamo's bytecode hook,
which sees each original and transformed code object. No PyTorch function is replaced; with
precompile (the default), two of its classes are swapped for subclasses while capture runs
(dynamo_replay._torch.PrecompileSafety).

By default capture also turns on Dynamo's caching precompile, so PyTorch packages each frame's
guards and transformed bytecode and replay skips Dynamo as well as everything after it. What
PyTorch 2.13's precompile cannot do stays one frame's problem (dynamo_replay._torch): a frame
it cannot save is recorded with the reason and compiles as usual at replay; each guard it drops
is recorded with the value it checked, so replay can check it again. precompile=False
(--no-precompile) captures only PyTorch's caches: replay then traces each frame with Dynamo.

The work is in rooms named after what they do: session (the `capture` block and the store it
keeps open), trace_intake (PyTorch's structured trace into TraceEvents), structured (graph IRs,
Core ATen IRs, guard lists, symbol tables), code_objects (Dynamo's bytecode hook), graph_calls
(call counts and samples of each compiled graph), precompile_notes (what PyTorch's precompile left
out), artifacts (Mega-Cache, kernels, replay data, signature) and summary. `capture` is imported
with torch when first looked up, so that importing the package imports no torch.
"""

from __future__ import annotations

from typing import Any

__all__ = ["capture"]


def __getattr__(name: str) -> Any:
    if name == "capture":
        from dynamo_replay.capture.session import capture

        return capture
    raise AttributeError(f"module 'dynamo_replay.capture' has no attribute {name!r}")
