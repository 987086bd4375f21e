"""One compiled function per kind of miss, in one process: captured as written, then run with
some cases changed, so each changed case misses its saved entry for its own reason.
Usage: misses_job.py [--change CASE,CASE,...] [--fix CASE,CASE,...]

--change makes a case's call differ from capture's the way its name says; --fix applies, on top,
the fix the miss explanation gives for it where that fix is a change of the call.
tests/python/test_miss_table.py holds the table of what each case must be explained as."""

from __future__ import annotations

import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--change", default="")
parser.add_argument("--fix", default="")
parser.add_argument("--mark-dynamic", action="store_true", help="mark the length case's size dynamic")
parser.add_argument("--dynamic", action="store_true", help="the size fix: compile the length case with dynamic=True")
options = parser.parse_args()
CHANGED = set(filter(None, options.change.split(",")))
FIXED = set(filter(None, options.fix.split(",")))

SCALE = 0.7 if "global" in CHANGED else 0.5


class Config:
    def __init__(self) -> None:
        self.scale = 0.5


CONFIG = Config()
if "config_field" in CHANGED:
    CONFIG.scale = 0.7


# The cases that change a tensor compute the same graph, so Inductor compiles it once at capture.
def length(x):
    return x * 2 + 1


def batch(x):
    return x * 2 + 1


def dtype(x):
    return x * 2 + 1


def requires_grad(x):
    return x * 2 + 1


def stride(x):
    return x * 2 + 1


def scaled_by_global(x):
    return x * SCALE


def scaled_by_config(x):
    return x * CONFIG.scale


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dropout = torch.nn.Dropout(0.5)

    def forward(self, x):
        return self.dropout(x) * 2


class Outer(torch.nn.Module):  # its submodule is inlined, so the submodule's hooks are guarded
    def __init__(self) -> None:
        super().__init__()
        self.inner = torch.nn.Linear(64, 64)

    def forward(self, x):
        return self.inner(x) * 3


torch.manual_seed(0)
base = torch.randn(2, 64)
square = torch.randn(64, 64)
inputs = {
    "length": torch.randn(2, 96) if "length" in CHANGED else base.clone(),  # its own: --mark-dynamic marks it
    "batch": torch.randn(4, 64) if "batch" in CHANGED else base,
    "dtype": base.double() if "dtype" in CHANGED else base,
    "requires_grad": base.clone().requires_grad_() if "requires_grad" in CHANGED else base,
    "stride": square.t() if "stride" in CHANGED else square,
}
if "dtype" in FIXED:
    inputs["dtype"] = inputs["dtype"].to(torch.float32)
if "requires_grad" in FIXED:
    inputs["requires_grad"] = inputs["requires_grad"].detach()
if "stride" in FIXED:
    inputs["stride"] = inputs["stride"].contiguous()
if options.mark_dynamic:
    torch._dynamo.mark_dynamic(inputs["length"], 1)

outputs = {}
for case, fn in [("length", length), ("batch", batch), ("dtype", dtype), ("requires_grad", requires_grad)]:
    outputs[case] = torch.compile(fn, dynamic=options.dynamic and case == "length" or None)(inputs[case])
    if outputs[case].requires_grad:  # PyTorch saves a graph that needs gradients once its backward ran
        outputs[case].sum().backward()
outputs["stride"] = torch.compile(stride)(inputs["stride"])  # the line a stride fix names
outputs["global"] = torch.compile(scaled_by_global)(base)
outputs["config_field"] = torch.compile(scaled_by_config)(base)

block = Block().eval()
if "train_eval" in CHANGED:
    block.train()
if "train_eval" in FIXED:
    block.eval()
compiled_block = torch.compile(block)
outputs["train_eval"] = compiled_block(base)

outer = Outer()
if "hook" in CHANGED:
    outer.inner.register_forward_hook(lambda module, args, output: output * 2)
with torch.no_grad():  # its parameters need gradients: see above
    outputs["hook"] = torch.compile(outer)(base)
print("cases run:", len(outputs))
