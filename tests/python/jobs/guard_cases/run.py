"""Runs every guard case (tests/python/guard_cases.py) compiled and eagerly in this process.
Usage: run.py CASES_DIR OUT.json. Writes, per case: whether the compiled answer equals the
eager one (values, dtype and requires_grad), and whether its frame compiled in this process."""

import contextlib
import importlib
import json
import sys
from pathlib import Path

import torch

cases_dir, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
sys.path[:0] = [str(cases_dir), str(Path(__file__).resolve().parent)]


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.requires_grad == b.requires_grad and torch.equal(a.detach(), b.detach())


results = {}
for path in sorted(cases_dir.glob("case_*.py")):
    module = importlib.import_module(path.stem)
    function = getattr(module, "f", None) or getattr(module, "f_" + path.stem[len("case_") :])
    compiled = torch.compile(function)
    x = torch.linspace(1, 2, 8, requires_grad=getattr(module, "X_REQUIRES_GRAD", False))
    context = getattr(module, "CONTEXT", None)
    before = len(torch._dynamo.utils.get_compilation_metrics())
    with context() if context else contextlib.nullcontext():
        got = compiled(x)
        want = function(x)
    compiled_here = any(m.co_filename == str(path) for m in torch._dynamo.utils.get_compilation_metrics()[before:])
    results[path.stem[len("case_") :]] = {
        "right": same(got, want),
        "compiled": compiled_here,
        "got": got.detach().tolist()[:2],
        "want": want.detach().tolist()[:2],
    }
out.write_text(json.dumps(results, indent=1))
