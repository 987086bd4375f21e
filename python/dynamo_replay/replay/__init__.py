"""replay(): run a captured torch.compile job again without compiling it.

Everything replay loads is PyTorch's own: the Mega-Cache bytes (Inductor FX graphs, AOTAutograd
entries and the caching-precompile packages that hold each frame's guards and transformed
bytecode), plus the kernel libraries Inductor built. Before anything changes, the store is
checked (replay/checks.py): finished and sound, signed if a key is set, captured by the same
torch build, Python, CPU, compiler and compile configs, from source that has not changed since.
If anything differs, nothing is loaded, a warning names every difference and the job compiles
as usual (strict mode raises instead).

Saved frames are installed one at a time (dynamo_replay._torch.install.SafeDynamoCache): a frame whose
saved guards do not load, whose guards PyTorch rebuilt with other values than at capture, or one
of whose guards PyTorch's precompile dropped no longer holds or cannot be compared (a global
function swapped, a module attribute changed, an object without a faithful description) is
left out and compiles as usual (replay/frame_checks.py). Guards stay in force, dropped ones
too: a call they reject compiles normally, or raises in strict mode.

A store must come from a trusted source: loading it unpickles PyTorch artifacts and dlopens
libraries. See dynamo_replay.signing for signed stores.

The block itself is in session.py, imported with torch when `replay` is first looked up, so
that importing the package (and dynamo_replay, which imports it) imports no torch.
"""

from __future__ import annotations

from typing import Any

from dynamo_replay.replay.summary import CompiledFrame, ReplaySummary

__all__ = ["CompiledFrame", "ReplaySummary", "replay"]


def __getattr__(name: str) -> Any:
    if name == "replay":
        from dynamo_replay.replay.session import replay

        return replay
    raise AttributeError(f"module 'dynamo_replay.replay' has no attribute {name!r}")
