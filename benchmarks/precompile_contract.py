"""Guard differential under PyTorch 2.15's ahead-of-time contracts: what each warm-start path returns
in a fresh process where one thing the compiled code reads differs from when it was prepared.

The module (Net) is a 2-layer MLP whose forward reads (a) a module-level global float, OFFSET,
(b) a Python attribute of the module, self.scale, and (c) its weights:
    forward(x) = fc2(relu(fc1(x))) * self.scale + OFFSET
Each path is prepared once, untimed, with the original values (seed 0 weights, scale 2.0, OFFSET
0.5). Then, for each case, a fresh process (CONTRACT_CHANGE=case) builds the same module, computes
eager's output with the original values, makes the case's change, computes eager's output again
(the right answer), and runs the path:
  none       nothing changed (every path should be right);
  global     OFFSET = 1.5, rebound in the module before any path runs;
  attribute  net.scale = 3.0;
  weights    net.load_state_dict(a seed-1 module's state dict): new random weights, same shapes.
Paths:
  compile        torch.compile(net) in the changed process, nothing prepared: the reference, which
                 must agree with eager;
  pt-precompile  torch.compiler.precompile.capture(call, artifact_path=, cache_path=) with
                 call(model, x) = model(x), called once; the changed process calls
                 precompile.load(artifact, cache)(net, x);
  aot-compile    torch.compile(call, fullgraph=True).aot_compile(((net, x), {})) with PyTorch's default
                 guard filter, save_compiled_function(path); the changed process calls
                 torch.compiler.load_compiled_function(file)(net, x) (no f_globals, the default);
  replay         with dynamo_replay.capture(store): torch.compile(net)(x); the changed process does the
                 same under dynamo_replay.replay(store), and its summary says what compiled anyway.
Verdicts: right (within rtol 1e-4, atol 1e-5 of eager's output in the changed process), WRONG (stale)
(the output eager gives with the prepared values instead), WRONG (neither), refused (the path raised:
its first line), error (the path could not be prepared, or its process died), and for replay whether
the frame ran from the store or compiled again. Each process has its own empty TORCHINDUCTOR_CACHE_DIR.

Run:
  .venv-2.15.0/bin/python benchmarks/precompile_contract.py [--cases none global attribute weights]
      [--paths compile pt-precompile aot-compile replay] [--json FILE]
The exit status is 1 when a path returns a WRONG answer (a stale answer is what a contract without
guards allows; the table is the finding), 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

import torch

ORIGINAL = {"global": 0.5, "attribute": 2.0}  # the values each path is prepared with
CHANGED = {"global": 1.5, "attribute": 3.0}
OFFSET = ORIGINAL["global"]  # (a) a module-level global the forward reads; the global case rebinds it

CASES = ["none", "global", "attribute", "weights"]
PATHS = ["compile", "pt-precompile", "aot-compile", "replay"]
TITLES = {
    "compile": "torch.compile (reference)",
    "pt-precompile": "torch.compiler.precompile",
    "aot-compile": "aot_compile + load_compiled_function",
    "replay": "dynamo-replay",
}
PREPARED = ("pt-precompile", "aot-compile", "replay")  # the paths with something made beforehand


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(16, 32), torch.nn.Linear(32, 8)
        self.scale = ORIGINAL["attribute"]  # (b) a Python attribute constant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x))) * self.scale + OFFSET  # (c) weights, (b), (a)


def call(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """What the ahead-of-time paths compile: the model an argument, so its weights are inputs."""
    return model(x)


def build(seed: int = 0) -> Net:
    torch.manual_seed(seed)
    return Net()


def example() -> torch.Tensor:
    return torch.randn(4, 16, generator=torch.Generator().manual_seed(0))


def first_line(error: BaseException) -> str:
    """The start of the error's message, on one line (a guard failure's reason is on its third)."""
    return f"{type(error).__name__}: {' '.join(str(error).split())}"[:240]


# -- the child ------------------------------------------------------------------------------------


def prepare(path: str, artifact: Path) -> None:
    """Makes the path's artifact from the module with its original values, under no_grad like the calls."""
    net, x = build(), example()
    with torch.no_grad():
        prepare_with(path, artifact, net, x)


def prepare_with(path: str, artifact: Path, net: Net, x: torch.Tensor) -> None:
    if path == "pt-precompile":
        with torch.compiler.precompile.capture(
            call, artifact_path=artifact / "fn.py", cache_path=artifact / "fn.cache"
        ) as capture:
            capture(net, x)
    elif path == "aot-compile":
        compiled = torch.compile(call, fullgraph=True).aot_compile(((net, x), {}))
        compiled.save_compiled_function(str(artifact / "fn.aot"))
    else:
        import dynamo_replay

        with dynamo_replay.capture(str(artifact / "job.dynrep")):
            torch.compile(net)(x)


def change(case: str, net: Net) -> None:
    global OFFSET
    if case == "global":
        OFFSET = CHANGED["global"]
    elif case == "attribute":
        net.scale = CHANGED["attribute"]
    elif case == "weights":
        net.load_state_dict(build(seed=1).state_dict())


def run_path(path: str, artifact: Path, net: Net, x: torch.Tensor) -> tuple[torch.Tensor, str, str]:
    """The path's output in this (changed) process, how it got it in a word or two, and the detail."""
    if path == "compile":
        return torch.compile(net)(x), "", ""
    if path == "pt-precompile":
        return torch.compiler.precompile.load(artifact / "fn.py", artifact / "fn.cache")(net, x), "", ""
    if path == "aot-compile":
        with open(artifact / "fn.aot", "rb") as file:
            return torch.compiler.load_compiled_function(file)(net, x), "", ""
    import dynamo_replay

    with dynamo_replay.replay(str(artifact / "job.dynrep"), verbose=False) as session:
        out = torch.compile(net)(x)
    summary = session.summary
    if not summary.loaded:
        return out, "store refused", str(summary.refused)
    compiled = [str(frame) for frame in summary.compiled]
    if compiled:
        return out, "compiled again", "; ".join(compiled)[:300]
    return out, "from the store", f"{summary.entries_installed} saved entries installed"


def child(mode: str, path: str, artifact: Path) -> int:
    if mode == "prepare":
        try:
            prepare(path, artifact)
        except Exception as error:  # the path cannot take this module: every case says so
            traceback.print_exc()
            print(
                "VERDICT",
                json.dumps({"verdict": "error", "how": "", "detail": f"preparing: {first_line(error)}"}),
                flush=True,
            )
            return 0
        print("VERDICT", json.dumps({"verdict": "prepared", "how": "", "detail": ""}), flush=True)
        return 0
    case = os.environ["CONTRACT_CHANGE"]
    net, x = build(), example()
    with torch.no_grad():
        before = net(x)  # eager, the prepared values
        change(case, net)
        after = net(x)  # eager, the changed process: the right answer
        try:
            out, how, note = run_path(path, artifact, net, x)
        except Exception as error:
            traceback.print_exc()
            print(
                "VERDICT", json.dumps({"verdict": "refused", "how": "raised", "detail": first_line(error)}), flush=True
            )
            return 0
    close = lambda a, b: a.shape == b.shape and torch.allclose(a, b, rtol=1e-4, atol=1e-5)  # noqa: E731
    if close(out, after):
        verdict = "right"
    elif case != "none" and close(out, before):
        verdict = "WRONG (stale)"
    else:
        verdict = "WRONG"
    detail = f"max |out - eager| {(out.double() - after.double()).abs().max().item():.3g}"
    print(
        "VERDICT",
        json.dumps({"verdict": verdict, "how": how, "detail": "; ".join(filter(None, [note, detail]))}),
        flush=True,
    )
    return 0


# -- the parent -----------------------------------------------------------------------------------


def spawn(mode: str, path: str, artifact: Path, case: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DYNAMO_REPLAY", "TORCH_LOGS", "TORCH_COMPILE_DEBUG")
    }
    with tempfile.TemporaryDirectory(prefix="contract-cache-") as cache:
        env.update(TORCHINDUCTOR_CACHE_DIR=cache, CONTRACT_CHANGE=case)
        done = subprocess.run(
            [sys.executable, __file__, "--child", mode, path, str(artifact)], capture_output=True, text=True, env=env
        )
    for line in done.stdout.splitlines():
        if line.startswith("VERDICT "):
            return json.loads(line.split(maxsplit=1)[1])
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return {
        "verdict": "error",
        "how": "",
        "detail": f"exit status {done.returncode}: {lines[-1] if lines else 'no stderr'}"[:200],
    }


def table(results: dict[str, dict[str, dict[str, str]]], paths: list[str]) -> str:
    lines = ["| case | " + " | ".join(TITLES[path] for path in paths) + " |", "|---|" + "---|" * len(paths)]
    for case, row in results.items():
        lines.append(
            f"| {case} | "
            + " | ".join(
                row[path]["verdict"] + (f" ({row[path]['how']})" if row[path]["how"] else "") for path in paths
            )
            + " |"
        )
    lines += ["", "Details:"]
    for case, row in results.items():
        for path in paths:
            lines.append(f"- {case}, {TITLES[path]}: {row[path]['verdict']}: {row[path]['detail']}")
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        return child(sys.argv[2], sys.argv[3], Path(sys.argv[4]))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=CASES, choices=CASES)
    parser.add_argument("--paths", nargs="+", default=PATHS, choices=PATHS)
    parser.add_argument("--json", help="write every verdict to this file")
    args = parser.parse_args()
    results: dict[str, dict[str, dict[str, str]]] = {case: {} for case in args.cases}
    with tempfile.TemporaryDirectory(prefix="precompile-contract-") as work:
        failed: dict[str, dict[str, str]] = {}  # path -> why it could not be prepared
        for path in args.paths:
            artifact = Path(work) / path
            artifact.mkdir()
            if path in PREPARED:
                made = spawn("prepare", path, artifact, "none")
                if made["verdict"] != "prepared":
                    failed[path] = made
                print(f"[{path}] {made['verdict']} {made['detail']}", file=sys.stderr, flush=True)
        for case in args.cases:
            for path in args.paths:
                results[case][path] = failed.get(path) or spawn("run", path, Path(work) / path, case)
                print(f"[{case}] {path}: {results[case][path]['verdict']}", file=sys.stderr, flush=True)
    versions = f"torch {torch.__version__}, Python {sys.version.split()[0]}"
    print(f"precompile_contract.py {' '.join(sys.argv[1:])}: {versions}\n")
    print(table(results, args.paths))
    if args.json:
        Path(args.json).write_text(json.dumps({"torch": torch.__version__, "results": results}, indent=1))
    wrong = [
        f"{case} {path}"
        for case, row in results.items()
        for path, verdict in row.items()
        if verdict["verdict"].startswith("WRONG")
    ]
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
