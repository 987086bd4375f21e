"""A job for test_replay's install-on-first-call test. Usage: lazy_install.py capture|replay STORE OUT.json

Two functions are compiled and called under capture. Under replay, `double` is compiled twice
and `triple` once but never called; OUT.json says how many saved entries were in force after
each step, what compiled, and whether the answers are right."""

import json
import sys

import torch

import dynamo_replay


def double(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(x) * 2.0


def triple(x: torch.Tensor) -> torch.Tensor:
    return torch.cos(x) * 3.0


mode, store, out = sys.argv[1:4]
x = torch.linspace(-1, 1, 8)
if mode == "capture":
    with dynamo_replay.capture(store):
        torch.compile(double)(x)
        torch.compile(triple)(x)
    sys.exit(0)
with dynamo_replay.replay(store, verbose=False) as session:
    first, again, never_called = torch.compile(double), torch.compile(double), torch.compile(triple)
    installed = [session.summary.entries_installed]
    answers = [first(x)]
    installed.append(session.summary.entries_installed)
    answers.append(again(x))
    installed.append(session.summary.entries_installed)
    compiled = [str(frame) for frame in session.summary.compiled]
with open(out, "w") as file:
    json.dump(
        {
            "installed": installed,
            "compiled": compiled,
            "right": all(torch.equal(answer, double(x)) for answer in answers),
        },
        file,
    )
