"""A compiled function whose answer depends on five things chosen at run time, one of which
SWAP (an environment variable) changes: a global function, a method, a module attribute, a
global float and a closure cell. PyTorch's caching precompile drops the identity guards on
the functions, so a replay that installs the saved frame blindly returns the captured
process's answer. Usage: swapped_job.py OUT.pt  (writes [compiled output, eager output])."""

import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import swap_helpers  # noqa: E402

SWAP = os.environ.get("SWAP", "")


def relu_fn(x):
    return torch.relu(x)


def sigmoid_fn(x):
    return torch.sigmoid(x)


ACT = sigmoid_fn if SWAP == "global_function" else relu_fn
SCALE = 3.0 if SWAP == "global_float" else 2.0
if SWAP == "module_attribute":
    swap_helpers.act = torch.tanh


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def act(self, x):
        return torch.relu(x)

    def act_b(self, x):
        return torch.tanh(x)


if SWAP == "method":
    Net.act = Net.act_b


def make_step(net, inner):
    def step(x):
        y = net.lin(x)
        return ACT(y) + net.act(y) * 2 + swap_helpers.act(y) * 3 + SCALE * y + inner(y) * 5

    return step


torch.manual_seed(0)
step = make_step(Net(), torch.sigmoid if SWAP == "closure" else torch.relu)
x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
with torch.no_grad():
    torch.save([torch.compile(step)(x), step(x)], sys.argv[1])
