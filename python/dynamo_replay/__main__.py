"""`python -m dynamo_replay`: the command line of the Python package."""

from __future__ import annotations

import argparse
import contextlib
import json
import runpy
import sys
from pathlib import Path

from dynamo_replay.tools import inspect_executable, run_inspect


def _prepare_job(args: argparse.Namespace) -> None:
    """Gives the job its own argv (recorded by capture) and, for a script, its directory on sys.path."""
    target = args.module if args.module else args.script
    sys.argv = [target, *args.args]
    if not args.module:
        sys.path.insert(0, str(Path(args.script).resolve().parent))


def _run_job(args: argparse.Namespace) -> int:
    """Runs the script or module as if it were run directly; its exit status passes through."""
    try:
        if args.module:
            runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(args.script, run_name="__main__")
    except SystemExit as exit_:
        code = exit_.code
        if code is None or isinstance(code, int):
            return code or 0
        print(code, file=sys.stderr)
        return 1
    return 0


def _capture(args: argparse.Namespace) -> int:
    from dynamo_replay import capture

    _prepare_job(args)
    if args.world_size is not None:  # one process compiles for every rank of the job
        import os

        if "WORLD_SIZE" in os.environ or args.world_size < 1:
            why = "this process is already a rank of a launched job" if args.world_size >= 1 else "N must be 1 or more"
            print(f"error: capture --world-size {args.world_size}: {why}", file=sys.stderr)
            return 2
        from dynamo_replay._torch.ranks import fake_world

        fake_world(args.world_size)
    with capture(
        args.output,
        level=args.level,
        samples=not args.no_samples,
        precompile=not args.no_precompile,
        core_aten=not args.no_core_aten,
        parameters=args.parameters,
    ):
        return _run_job(args)


def _replay(args: argparse.Namespace) -> int:
    from dynamo_replay import replay
    from dynamo_replay.errors import ReplayError

    _prepare_job(args)
    try:
        session = replay(args.store, strict=args.strict, verbose=not args.quiet, update=args.update or None)
    except ValueError as error:  # a malformed redis:// URL
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        with session:
            status = _run_job(args)
        if args.summary_json:
            Path(args.summary_json).write_text(json.dumps(session.summary.as_dict(), indent=1, default=str))
        return status
    except ReplayError as error:  # strict mode's refusals: the cause, not a traceback
        message = str(error)
        print(message if message.startswith("dynamo-replay:") else f"dynamo-replay: {message}", file=sys.stderr)
        return 1


def _check(args: argparse.Namespace) -> int:
    """The pre-flight: what a replay of the store (or fleet entry) would do here; exit codes in
    dynamo_replay.replay.preflight."""
    from dynamo_replay.fleet.url import is_fleet_url
    from dynamo_replay.replay import preflight

    job = [args.script, *args.args] if args.script else None
    if args.run_job and (job is None or is_fleet_url(args.store)):
        print("error: check --run runs the job's script against a store file", file=sys.stderr)
        return preflight.EXIT_USAGE
    if is_fleet_url(args.store):
        import redis

        try:
            from dynamo_replay.fleet.check import check_fleet

            result = check_fleet(args.store, job=job)
        except ValueError as error:  # a malformed URL
            print(f"error: {error}", file=sys.stderr)
            return preflight.EXIT_USAGE
        except (redis.RedisError, OSError) as error:
            print(f"error: {args.store}: {type(error).__name__}: {error}", file=sys.stderr)
            return preflight.EXIT_ERROR
    else:
        result = preflight.check_store(args.store, job=job)
        if args.run_job and result.refused is None:
            summary, stopped = _run_under_replay(args)
            result.add_run(summary)
            if stopped:
                result.notes.append(f"the job stopped early ({stopped}): frames it did not reach were not run")
    print(json.dumps(result.to_json(), indent=1) if args.json else result.render(verbose=args.verbose))
    return result.exit_code


def _run_under_replay(args: argparse.Namespace) -> tuple[object, str | None]:
    """check --run: the job run once under replay, a frame that misses traced by Dynamo with the
    eager backend (seconds, where Inductor takes minutes). (the replay's summary, why the job
    stopped early or None): a job that fails still gets its check."""
    from dynamo_replay import replay
    from dynamo_replay._torch.settings import eager_backend_stance

    args.module = None  # check takes a script
    _prepare_job(args)
    session = replay(args.store, verbose=False)
    stopped = None
    # The job's own output goes to stderr: stdout is check's answer (its JSON, for scripts).
    with session, eager_backend_stance(), contextlib.redirect_stdout(sys.stderr):
        try:
            status = _run_job(args)
            stopped = f"exit status {status}" if status else None
        except Exception as error:  # the job's own failure, eager or compiled: said, not raised
            stopped = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}".rstrip(": ")
    return session.summary, stopped


def _graph(args: argparse.Namespace) -> int:
    """Writes (or prints) a standalone script that runs one stored graph on its stored inputs."""
    import json

    from dynamo_replay.errors import GraphError, StoreError

    if args.json and not args.output:
        print("error: --json needs -o (without it the script itself goes to stdout)", file=sys.stderr)
        return 2
    try:
        from dynamo_replay.graphs.repro import make_repro, write_repro

        if not args.output:
            sys.stdout.write(make_repro(args.store, args.compile, args.graph).script)
            return 0
        written = write_repro(args.store, args.compile, args.graph, args.output)
    except (GraphError, StoreError) as error:  # names the store and what is missing
        print(f"error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # writing the script or its data
        reason = error.strerror or str(error)
        print(f"error: {error.filename or args.output}: {reason[:1].lower()}{reason[1:]}", file=sys.stderr)
        return 2
    repro = written.repro
    if args.json:
        print(
            json.dumps(
                {
                    "script": str(written.script),
                    "data": str(written.data) if written.data else None,
                    "compile": args.compile,
                    "graph": repro.graph_event,
                    "inputs": repro.inputs,
                    "outputs": repro.outputs,
                    "compared_outputs": repro.compared,
                }
            )
        )
        return 0
    beside = f" and {written.data} ({len(repro.data)} bytes)" if written.data else ""
    print(
        f"wrote {written.script}{beside}: {repro.graph_event} of compile {args.compile}, {repro.inputs} inputs, "
        f"{repro.compared} of {repro.outputs} outputs to compare; run it with: python {written.script}"
    )
    return 0


def _why(args: argparse.Namespace) -> int:
    """replay-inspect's why-answer; with --verify, the top edit applied to a copy and the job run again."""
    if not args.verify:
        done = run_inspect(
            "why",
            *(["--json"] if args.json else []),
            *(["--symbol", args.symbol] if args.symbol else []),
            args.store,
            *([args.compile] if args.compile else []),
        )
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        return done.returncode
    from dynamo_replay.verify import Refused, render, verify

    try:
        verdict = verify(args.store, args.compile, timeout=args.timeout)
    except Refused as refusal:
        print(f"dynamo-replay why --verify: cannot verify {args.store}: {refusal}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(verdict.to_json(), indent=1))
    else:
        sys.stdout.write(render(verdict))
    return 0 if verdict.fixed and verdict.same_outputs is not False else 1


def _add_job_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", dest="module", help="run a module, like python -m")
    parser.add_argument("script", nargs="?", help="the script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the job's own arguments")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dynamo_replay", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    cap = sub.add_parser("capture", help="run a script or module and record its torch.compile work")
    cap.add_argument("-o", "--output", required=True, help="store file to write (replaced if it exists)")
    cap.add_argument("--level", type=int, default=3, help="zstd level (default 3)")
    cap.add_argument(
        "--world-size",
        type=int,
        metavar="N",
        help="capture for a job of N ranks in this one process: the job's process group is PyTorch's fake "
        "one (collectives do nothing, so its numbers are not the job's), rank 0 of N",
    )
    cap.add_argument("--no-samples", action="store_true", help="do not store graphs' first-call inputs and outputs")
    cap.add_argument(
        "--parameters",
        action="store_true",
        help="store parameters in the samples whatever their size (once per store, by content)",
    )
    cap.add_argument(
        "--no-core-aten",
        action="store_true",
        help="do not store each aten graph decomposed to Core ATen (for the MLIR lowering)",
    )
    cap.add_argument(
        "--no-precompile",
        action="store_true",
        help="capture only PyTorch's caches, not Dynamo's saved frames: replay then traces every "
        "frame with Dynamo again",
    )
    _add_job_arguments(cap)
    cap.set_defaults(run=_capture)
    rep = sub.add_parser("replay", help="run a script or module with its compiled code from a store")
    rep.add_argument("--strict", action="store_true", help="fail instead of compiling, or when the store is refused")
    rep.add_argument("-q", "--quiet", action="store_true", help="do not print the replay summary")
    rep.add_argument(
        "--update",
        action="store_true",
        help="add what compiles during the run to the store (a new generation; a missing store is "
        "captured whole), so the next start replays it too",
    )
    rep.add_argument(
        "--summary-json",
        metavar="FILE",
        help="also write the replay summary as JSON to FILE (each frame compiled here, with its miss as fields)",
    )
    rep.add_argument("store", help="store file written by capture")
    _add_job_arguments(rep)
    rep.set_defaults(run=_replay)
    check = sub.add_parser(
        "check",
        help="say what a replay would do on this host, before the job starts",
        description="The pre-flight: whether the store (or the fleet entry this host would take) is used or "
        "refused, with every differing factor, and for each saved frame whether it replays, compiles "
        "(and why) or depends on a value only the running job has. The job is not run, unless --run. Exit codes: 0 "
        "every saved frame replays (given the values listed), 3 some compile, 4 refused, 1 the check "
        "could not run, 2 bad usage.",
    )
    check.add_argument("--json", action="store_true", help="print the answer as JSON")
    check.add_argument(
        "--verbose", action="store_true", help="also print the raw guards of each frame and its entries' inputs"
    )
    check.add_argument(
        "--run",
        dest="run_job",
        action="store_true",
        help="run the job once under replay (a frame that misses is traced with the eager backend, not "
        "compiled by Inductor) and name each miss: the guard, its value at capture and now, and the fix",
    )
    check.add_argument("store", help="store file, or redis://HOST:PORT/DB?name=JOB")
    check.add_argument("script", nargs="?", help="the job's script: compared with the one captured")
    check.add_argument("args", nargs=argparse.REMAINDER, help="the job's arguments: compared with the captured ones")
    check.set_defaults(run=_check)
    graph = sub.add_parser(
        "graph",
        help="write a standalone script that runs one stored graph on its stored inputs",
        description="Writes a script that runs one stored graph (rebuilt from the store's graph IR) on the inputs "
        "the compiled graph was first called with and compares its outputs with the stored ones. The "
        "script needs only torch: not the model, the store or dynamo-replay. It prints one line and "
        "exits 0 when the outputs match (bitwise, or within the float tolerance), 1 when they differ. "
        "This command exits 2 when the store, the compile, the graph or its samples are missing.",
    )
    graph.add_argument("store", help="store file written by capture")
    graph.add_argument("compile", help="compile id, as replay-inspect ls lists it (0/0, 1/0_1)")
    graph.add_argument(
        "--graph",
        default="forward",
        choices=["forward", "backward", "inference", "dynamo"],
        help="which graph: AOTAutograd's forward (or inference) graph, its backward graph, or "
        "Dynamo's graph (default: forward)",
    )
    graph.add_argument(
        "-o",
        "--output",
        help="script to write; constants, inputs and expected outputs go beside "
        "it as NAME.pt (torch.save) unless small enough to go inside. "
        "Without -o the script goes to stdout with everything inside",
    )
    graph.add_argument("--json", action="store_true", help="with -o: say what was written as JSON")
    graph.set_defaults(run=_graph)
    why = sub.add_parser(
        "why",
        help="why a job failed, broke its graph or recompiled; --verify proves the fix",
        description="Without --verify, replay-inspect why. With --verify, the top advice that is an "
        "edit is applied to a copy of the job's source and the job runs again under "
        "capture in a fresh process: exit 0 when the failure or recompile is gone and "
        "the outputs match eager, 1 when not, 2 when the job cannot be re-run.",
    )
    why.add_argument("store", help="store file written by capture")
    why.add_argument("compile", nargs="?", help="compile id (replay-inspect ls lists them)")
    why.add_argument("--verify", action="store_true", help="apply the advised edit to a copy and run the job again")
    why.add_argument("--json", action="store_true", help="print the answer as JSON")
    why.add_argument("--symbol", help="without --verify: one symbol's provenance (u0)")
    why.add_argument("--timeout", type=float, default=600, help="seconds per run of the job (default 600)")
    why.set_defaults(run=_why)
    from dynamo_replay.fleet.cli import add_parser as add_fleet_parser

    add_fleet_parser(sub)
    sub.add_parser("inspect-path", help="print where replay-inspect is installed").set_defaults(
        run=lambda _: print(inspect_executable()) or 0
    )
    args = parser.parse_args(argv)
    if args.command in ("capture", "replay"):
        if args.module is None and args.script == "-m" and args.args:  # `replay STORE -m module ...`
            args.module, args.script, args.args = args.args[0], None, args.args[1:]
        elif args.module is None and args.script is None and args.args[:1] == ["-m"] and len(args.args) > 1:
            args.module, args.args = args.args[1], args.args[2:]
        if args.module and args.script:
            args.args.insert(0, args.script)  # with -m, everything after it is the job's
            args.script = None
        if not (args.module or args.script):
            parser.error(f"{args.command} needs a script or -m module")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
