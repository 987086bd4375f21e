"""A store's aten graphs re-lowered to MLIR, without PyTorch: the same as `replay-inspect mlir`
and `lower-check`, through replay-mlir (the C++ lowering over MLIR 19, installed with the
package where MLIR 19 was found at build time). IREE, where installed (the `iree` extra:
iree-base-compiler and iree-base-runtime), compiles a graph for this host's CPU and runs it.

    >>> from dynamo_replay import mlir
    >>> text = mlir.lower("job.dynrep", "0/1", graph="forward", dialect="linalg")
    >>> report = mlir.lower_check("job.dynrep", sizes={"s0": 5})
    >>> report["summary"]    # {"graphs": 2, "matched": 2, ...}
    >>> manifest = mlir.compile_iree("job.dynrep", "0/1", "forward.vmfb")   # and forward.vmfb.json
    >>> mlir.lower_check("job.dynrep", runtime="iree")["summary"]
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from typing import Any

from dynamo_replay.errors import GraphError
from dynamo_replay.tools import mlir_executable

PathLike = str | os.PathLike[str]


def _environment() -> dict[str, str]:
    """The environment replay-mlir runs in: this interpreter's scripts folder on PATH, where pip
    put IREE's tools when they are installed here."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([sysconfig.get_path("scripts"), env.get("PATH", "")])
    return env


def _tool() -> str:
    try:
        return mlir_executable()
    except FileNotFoundError as e:
        raise GraphError(
            "replay-mlir (the MLIR lowering) is not installed: it is built where MLIR 19 is "
            "(apt-get install libmlir-19-dev mlir-19-tools llvm-19-dev), then reinstall dynamo-replay"
        ) from e


def lower(
    store: PathLike,
    compile_id: str,
    graph: str = "forward",
    dialect: str = "linalg",
    library: PathLike | None = None,
    allow_different: bool = False,
) -> str:
    """The graph as an MLIR module (text), run against the job's outputs first (its first line
    says how that went). Raises GraphError naming the nodes that were not lowered, what is wrong
    with the store or the library, or the outputs a module computes differently (a lowering
    bug): `allow_different=True` returns it unchecked."""
    return _mlir_command(store, compile_id, graph, library, allow_different, "--dialect", dialect)


def _mlir_command(
    store: PathLike, compile_id: str, graph: str, library: PathLike | None, allow_different: bool, *extra: str
) -> str:
    """`replay-mlir mlir` on one graph with `extra` arguments: its stdout, or GraphError with its words."""
    args = [_tool(), "mlir", os.fspath(store), compile_id, "--graph", graph, *extra]
    if library is not None:
        args += ["--library", os.fspath(library)]
    if allow_different:
        args.append("--allow-different")
    done = subprocess.run(args, capture_output=True, text=True, env=_environment())
    if done.returncode != 0:
        raise GraphError(done.stderr.strip() or f"replay-mlir exited {done.returncode}")
    return done.stdout


def compile_iree(
    store: PathLike,
    compile_id: str,
    output: PathLike,
    graph: str = "forward",
    library: PathLike | None = None,
    allow_different: bool = False,
) -> dict[str, Any]:
    """The graph compiled by IREE for this host's CPU (replay-inspect mlir --target iree): the
    linalg module, run through IREE's runtime against the job's outputs first, written as
    `output` (.vmfb) with its manifest beside it (`output` + ".json"), which is returned: the
    function's name, and its inputs in order (each a stored tensor, with its role and Dynamo
    source, a size symbol, or what a random node drew) and outputs. Raises GraphError naming
    what is wrong, including how to install IREE where it is not."""
    _mlir_command(store, compile_id, graph, library, allow_different, "--target", "iree", "-o", os.fspath(output))
    with open(os.fspath(output) + ".json") as manifest:
        return json.load(manifest)


def lower_check(
    store: PathLike,
    library: PathLike | None = None,
    sizes: dict[str, int] | None = None,
    seed: int = 0,
    runtime: str = "jit",
    time_calls: bool = False,
) -> dict[str, Any]:
    """Every aten graph lowered, verified, run and compared (lower-check --json): by MLIR's JIT,
    or with runtime="iree" compiled by IREE and run on its CPU runtime. time_calls adds each
    graph's median time of one call (seconds["call"]).
    {"graphs": [...], "operators": {...}, "summary": {"graphs", "matched"}}."""
    args = [_tool(), "lower-check", os.fspath(store), "--json", "--seed", str(seed), "--runtime", runtime]
    if time_calls:
        args.append("--time")
    if library is not None:
        args += ["--library", os.fspath(library)]
    if sizes:
        args += ["--sizes", ",".join(f"{k}={v}" for k, v in sizes.items())]
    done = subprocess.run(args, capture_output=True, text=True, env=_environment())
    if not done.stdout:
        raise GraphError(done.stderr.strip() or f"replay-mlir exited {done.returncode}")
    return json.loads(done.stdout)
