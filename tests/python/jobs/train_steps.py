"""Runs every training case (tests/python/training_cases.py) in one process, for test_training.
Usage: train_steps.py CASES_DIR OUT_DIR capture|replay STORE

capture: each case captured into STORE (out/captured.pt); then, with Dynamo reset and capture
  over, each case again under a plain torch.compile, as captured (out/plain.pt) and with its
  change (out/plain_changed.pt): what replay must give.
replay: each case replayed from STORE as captured (out/replayed.pt) and with its change
  (out/replayed_changed.pt); out/traced.json names the frames Dynamo traced for each run, and
  out/compiler.json, in the order of the runs, whether any frame had been traced before the
  run ended and which of Inductor's compiler modules were imported by then.
Each .pt holds {case: the losses and the trained parameters}.
"""

import importlib
import json
import sys
from pathlib import Path

import torch
import torch._dynamo.convert_frame

import dynamo_replay
from dynamo_replay import _torch

cases_dir, out, action, store = Path(sys.argv[1]).resolve(), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
sys.path.insert(0, str(cases_dir))
out.mkdir(parents=True, exist_ok=True)
torch.set_num_threads(1)  # bitwise reproducible reductions, in every process alike
# Every case's optimizer passes through the same library frames (Optimizer's step wrapper): one
# entry each, more than PyTorch's default limit of 8 per frame.
torch._dynamo.config.recompile_limit = 64
traced: list[str] = []
torch._dynamo.convert_frame.register_bytecode_hook(lambda code, new_code: traced.append(code.co_name))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))
from training_cases import CASES, REPLAYS  # noqa: E402

# The order of the runs: each case whose change replays, as captured and then with its change;
# then every other case as captured; then their changes. A frame of library code (the
# optimizer's step) has an entry per case once the case's package is installed, and an entry
# that a change compiled is more general (Dynamo's recompiles are): it must not decide whether a
# replayed change replays, nor whether a case as captured does.
names = sorted(p.stem[len("train_case_") :] for p in cases_dir.glob("train_case_*.py"))
modules = {name: importlib.import_module(f"train_case_{name}") for name in names}
replays = [name for name in names if CASES[name][3] == REPLAYS]
compiles = [name for name in names if name not in replays]
ORDER = [(n, changed) for n in replays for changed in (False, True)] + [(n, False) for n in compiles]
ORDER += [(n, True) for n in compiles]


# Inductor's compiler, which a replay that compiles nothing leaves unimported
# (_torch/deferred_compiler.py): a module standing deferred in sys.modules is not imported.
COMPILER = ("torch._inductor.compile_fx", "torch._inductor.lowering", *_torch.deferred_compiler.DEFERRED)
compiler: list[tuple[str, bool, list[str]]] = []  # (run, traced anything so far, compiler modules imported)


def compiler_imported() -> list[str]:
    return [name for name in COMPILER if type(sys.modules.get(name)).__name__ == "module"]


def run_all(unchanged: str, changed: str | None, traced_name: str) -> None:
    """Each case as captured (into out/UNCHANGED.pt) and, unless CHANGED is None, with its
    change (out/CHANGED.pt); the frames traced for each into out/TRACED_NAME.json."""
    frames: dict[str, dict[str, list[str]]] = {"unchanged": {}, "changed": {}}
    results: dict[str, dict[str, list[torch.Tensor]]] = {"unchanged": {}, "changed": {}}
    for name, with_change in ORDER:
        if with_change and changed is None:
            continue
        kind = "changed" if with_change else "unchanged"
        traced.clear()
        results[kind][name] = modules[name].run(with_change)
        frames[kind][name] = list(traced)
        compiler.append(
            (
                f"{name} {kind}",
                any(frames["unchanged"].values()) or any(frames["changed"].values()),
                compiler_imported(),
            )
        )
    torch.save(results["unchanged"], out / f"{unchanged}.pt")
    if changed is not None:
        torch.save(results["changed"], out / f"{changed}.pt")
    (out / f"{traced_name}.json").write_text(json.dumps(frames, indent=1))


if action == "capture":
    with dynamo_replay.capture(store):
        run_all("captured", None, "captured_traced")
    # A plain compile from here: capture leaves caching precompile on for the process's later
    # recompiles, which plain PyTorch refuses for a function defined inside another.
    for module_name, attr, _ in _torch.PRECOMPILE_SETTINGS:
        setattr(importlib.import_module(module_name), attr, False)
    torch._dynamo.reset()
    run_all("plain", "plain_changed", "plain_traced")
else:
    with dynamo_replay.replay(store):
        run_all("replayed", "replayed_changed", "traced")
    (out / "compiler.json").write_text(json.dumps(compiler, indent=1))
