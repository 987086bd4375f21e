"""`python -m dynamo_replay`: the command line of the Python package."""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dynamo_replay", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="write a store of sample artifacts and inspect it")
    demo.add_argument("--out", default="demo-out", help="directory for the store (default: demo-out)")
    demo.set_defaults(run=_demo)
    sub.add_parser("inspect-path", help="print where replay-inspect is installed").set_defaults(
        run=lambda _: print(inspect_executable()) or 0
    )
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
