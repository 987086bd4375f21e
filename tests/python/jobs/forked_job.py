"""A job that forks while dynamo-replay is on, as a pre-fork server or a DataLoader worker does:
the child calls the compiled function, then leaves as a Python process does, through the end of
the block and sys.exit (so atexit handlers run in the child too). The child also compiles a
function of its own (with aot_eager: Inductor's compile workers do not survive a fork).

Usage: forked_job.py MODE STORE_OR_URL OUT. MODE: capture (the block is dynamo_replay.capture),
replay (dynamo_replay.replay, a path or a redis:// URL), or none (the job runs under
`python -m dynamo_replay capture` or DYNAMO_REPLAY). Writes OUT/report.json: the child's exit
code, whether the Inductor cache directory the parent compiled into outlived the child, whether
parent and child computed the same, and what Dynamo traced in the parent."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from pathlib import Path

import torch
import torch._dynamo.convert_frame

import dynamo_replay

traced: list[str] = []
torch._dynamo.convert_frame.register_bytecode_hook(lambda code, new_code: traced.append(code.co_name))


def scaled(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x @ x.T) * 2.0


def shifted(x: torch.Tensor) -> torch.Tensor:
    return torch.cos(x) + 1.0


mode, where, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
out.mkdir(parents=True, exist_ok=True)
blocks = {
    "capture": lambda: dynamo_replay.capture(where),
    "replay": lambda: dynamo_replay.replay(where),
    "none": contextlib.nullcontext,
}
x = torch.arange(12.0).reshape(3, 4)
with blocks[mode]():
    compiled = torch.compile(scaled)
    compiled(x)
    child = os.fork()
    if child == 0:  # runs the parent's compiled code, and compiles a function of its own
        torch.save(compiled(x + 1), out / "child.pt")
        assert torch.allclose(torch.compile(shifted, backend="aot_eager")(x), shifted(x))
    else:
        _, status = os.waitpid(child, 0)
        report = {
            "child": os.waitstatus_to_exitcode(status),
            "cache_kept": os.path.isdir(os.environ["TORCHINDUCTOR_CACHE_DIR"]),
            "same": torch.equal(compiled(x + 1), torch.load(out / "child.pt")),
        }
if child == 0:
    sys.exit(0)
(out / "report.json").write_text(json.dumps({**report, "traced": traced}))
