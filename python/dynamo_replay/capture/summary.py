"""What a capture says about the job and itself: how the job was started (the job event, first)
and what capture did (the summary event, last)."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynamo_replay import _torch

if TYPE_CHECKING:
    from dynamo_replay.capture.recording import Recording


def job_facts() -> dict[str, Any]:
    """How the job was started, for `why --verify` to start it again: the working directory,
    argv, the interpreter, and the script with its hash (to refuse a script changed since)."""
    main = sys.modules.get("__main__")
    main_file = os.path.abspath(main.__file__) if getattr(main, "__file__", None) else ""
    spec = getattr(main, "__spec__", None)
    script = main_file
    if getattr(spec, "name", "") == "dynamo_replay.__main__":  # `python -m dynamo_replay capture ... script`
        script = os.path.abspath(sys.argv[0]) if sys.argv and os.path.isfile(sys.argv[0]) else ""
    try:
        digest = hashlib.sha256(Path(script).read_bytes()).hexdigest() if script else ""
    except OSError:
        digest = ""
    return {
        "cwd": os.getcwd(),
        "argv": list(sys.argv),
        "python": sys.executable,
        "main_file": main_file,
        "main_module": getattr(spec, "name", "") or "",
        "script": script,
        "script_sha256": digest,
    }


def summary(session: Recording) -> dict[str, Any]:
    notes = session.precompile_notes
    return {
        "counters": _torch.settings.dynamo_counters(),
        # As in the replay data (replay_data.py), which replay reads; kept here for replay-inspect.
        "dynamo_unique_ids": session.replay_data.unique_ids,
        "capture_failures": session.failures,
        "precompile": session.precompile,
        "not_packaged": len(notes.not_packaged),
        "dropped_guards": len(notes.dropped),
        "vec_isa": session.replay_data.vec_isa,
        "module_globals": session.code.module_globals,
    }
