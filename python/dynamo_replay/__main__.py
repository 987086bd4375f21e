"""`python -m dynamo_replay`: the command line of the Python package."""

from __future__ import annotations

import argparse
import runpy
import sys
import time
from pathlib import Path

from dynamo_replay.sample import write_sample_store
from dynamo_replay.tools import inspect_executable, run_inspect


def _demo(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = out / "sample.dynrep"
    start = time.perf_counter()
    artifacts = write_sample_store(store, overwrite=True)
    print(f"wrote {store} ({len(artifacts)} sample artifacts) in {1e3 * (time.perf_counter() - start):.1f} ms\n")
    status = 0
    for command in (["info"], ["ls"], ["ls", "--blobs"], ["verify"]):
        print(f"$ replay-inspect {' '.join(command)} {store}")
        result = run_inspect(*command, str(store))
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        print()
        status |= result.returncode
    return status


def _capture(args: argparse.Namespace) -> int:
    from dynamo_replay.capture import capture

    # The job sees its own argv, as if run directly; its exit status passes through.
    target = args.module if args.module else args.script
    sys.argv = [target, *args.args]
    if not args.module:
        sys.path.insert(0, str(Path(args.script).resolve().parent))
    with capture(args.output, level=args.level):
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dynamo_replay", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="write a store of sample artifacts and inspect it")
    demo.add_argument("--out", default="demo-out", help="directory for the store (default: demo-out)")
    demo.set_defaults(run=_demo)
    cap = sub.add_parser("capture", help="run a script or module and record its torch.compile work")
    cap.add_argument("-o", "--output", required=True, help="store file to write (replaced if it exists)")
    cap.add_argument("--level", type=int, default=3, help="zstd level (default 3)")
    cap.add_argument("-m", dest="module", help="run a module, like python -m")
    cap.add_argument("script", nargs="?", help="the script to run")
    cap.add_argument("args", nargs=argparse.REMAINDER, help="the job's own arguments")
    cap.set_defaults(run=_capture)
    sub.add_parser("inspect-path", help="print where replay-inspect is installed").set_defaults(
        run=lambda _: print(inspect_executable()) or 0
    )
    args = parser.parse_args(argv)
    if args.command == "capture" and args.module and args.script:
        args.args.insert(0, args.script)  # with -m, everything after it is the job's
        args.script = None
    if args.command == "capture" and not (args.module or args.script):
        parser.error("capture needs a script or -m module")
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
