"""A job for the fleet tests. Usage: fleet_job.py URL OUT_DIR [--hold SECONDS]

Runs a small Inductor-compiled model under dynamo_replay.replay(URL) and writes OUT_DIR/
outputs.pt and OUT_DIR/report.json: what the fleet session did (replay, capture or compile),
the entry it used or made, and what Dynamo traced in this process. --hold keeps the capture
open that long after the model ran (a lease holder to kill)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch
import torch._dynamo.convert_frame

import dynamo_replay

traced: list[str] = []
torch._dynamo.convert_frame.register_bytecode_hook(lambda code, new_code: traced.append(code.co_name))


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x)) * 2.0


url, out = sys.argv[1], Path(sys.argv[2])
hold = float(sys.argv[sys.argv.index("--hold") + 1]) if "--hold" in sys.argv else 0.0
out.mkdir(parents=True, exist_ok=True)
torch.manual_seed(0)
model = Net().eval()
with dynamo_replay.replay(url, verbose=False) as session:
    with torch.no_grad():
        outputs = [torch.compile(model)(torch.ones(4, 8))]
    time.sleep(hold)
torch.save(outputs, out / "outputs.pt")
(out / "report.json").write_text(
    json.dumps({"mode": getattr(session, "mode", "local"), "entry": session.entry_id, "traced": traced})
)
