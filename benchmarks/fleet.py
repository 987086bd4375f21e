"""Fleet start: N processes of one job starting together against one Redis, three ways, and
a large store fetched from Redis against the same store read from a local file.

Columns (each process has its own empty TORCHINDUCTOR_CACHE_DIR; Redis is flushed before each
group of N):
  cold           torch.compile, no cache shared;
  pytorch-redis  PyTorch's own Redis remote caches (TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE=1,
                 TORCHINDUCTOR_AUTOGRAD_REMOTE_CACHE=1, TORCHINDUCTOR_REDIS_HOST/PORT);
  fleet          dynamo_replay.replay("redis://...?name=JOB");
  fleet-warm     the same with the job's entry already in Redis (one untimed process put it
                 there), each process starting with an empty local cache: it downloads;
  local-replay   dynamo_replay.replay(FILE) of that entry's store, copied to a local file.
The job is capture_overhead.py's small GPT (dynamic=True, two blocks), to first output. For
each group the script reports the median and the slowest process's time to first output from
the group's start, and the compile work the group did: processes that traced with Dynamo and,
for PyTorch's cache, FX-graph cache misses (each an Inductor compile).

The download part (--store-mib, default 100) writes a store of that many MiB of incompressible
blobs, uploads it as a fleet entry, then times with farm-bench-style pairs in this script:
a fresh process fetching the entry into an empty local cache and reading every artifact, against
a fresh process reading the same store from a local file.

Run: .venv-2.15.0/bin/python benchmarks/fleet.py [--sizes 1 4 16] [--store-mib 100] [--repeat 5]
Targets (issue 22): with 16 processes the group's compile work is one capture; a fleet warm
start (fleet-warm) is within 10% of replaying a local file (local-replay).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capture_overhead import WORKLOADS as MODELS  # noqa: E402

CHILD = """
import json, os, sys, time
start = float(sys.argv[2])
import torch
import torch._dynamo.convert_frame
from torch._dynamo.utils import counters
traced = []
torch._dynamo.convert_frame.register_bytecode_hook(lambda code, new: traced.append(code.co_name))
@@MODEL@@
mode = sys.argv[1]
session = None
if mode in ("fleet", "fleet-warm", "local-replay"):
    import dynamo_replay
    where = os.environ["LOCAL_STORE"] if mode == "local-replay" else os.environ["FLEET_URL"]
    session = dynamo_replay.replay(where, verbose=False).__enter__()
compiled = torch.compile(model, dynamic=True)
with torch.no_grad():
    compiled(torch.randint(0, 100, (2, 16), generator=torch.Generator().manual_seed(0)))
first = time.time() - start
print(json.dumps({"first": first, "traced": len(traced), "mode": getattr(session, "mode", mode),
                  "fx_miss": counters["inductor"]["fxgraph_cache_miss"]}), flush=True)
if session is not None:
    session.__exit__(None, None, None)
"""

FETCH = """
import sys, time
from pathlib import Path
import dynamo_replay  # noqa
from dynamo_replay.fleet.entries import FleetEntries
from dynamo_replay.fleet.url import parse_fleet_url
from dynamo_replay.replay.checks import read_store
entries = FleetEntries(parse_fleet_url(sys.argv[1]))
(manifest,) = entries.manifests("bench")
path = Path(sys.argv[2]) / "entry.dynrep"
path.write_bytes(entries.download("bench", manifest))
read_store(str(path))
"""
LOCAL = """
import sys
import dynamo_replay  # noqa
from dynamo_replay.replay.checks import read_store
read_store(sys.argv[1])
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_redis(work: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    server = subprocess.Popen(
        [
            "redis-server",
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(work),
        ],
        stdout=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            return server, port
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


def group(script: Path, mode: str, n: int, port: int, work: Path) -> dict:
    import redis

    env = {k: v for k, v in os.environ.items() if not k.startswith(("DYNAMO_REPLAY", "TORCHINDUCTOR_"))}
    if mode not in ("fleet-warm", "local-replay"):
        redis.Redis(port=port).flushall()
    elif not redis.Redis(port=port).keys("dynrep:bench:*:entries"):
        group(script, "fleet", 1, port, work)  # untimed: puts the entry there
    env["LOCAL_STORE"] = str(local_store(port, work))
    if mode == "pytorch-redis":
        env.update(
            TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE="1",
            TORCHINDUCTOR_AUTOGRAD_REMOTE_CACHE="1",
            TORCHINDUCTOR_REDIS_HOST="127.0.0.1",
            TORCHINDUCTOR_REDIS_PORT=str(port),
        )
    env["FLEET_URL"] = f"redis://127.0.0.1:{port}/0?name=bench"
    caches = [Path(tempfile.mkdtemp(prefix="cache-", dir=work)) for _ in range(n)]
    began = time.time()
    children = [
        subprocess.Popen(
            [sys.executable, str(script), mode, str(began)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**env, "TORCHINDUCTOR_CACHE_DIR": str(cache), "DYNAMO_REPLAY_CACHE": str(cache)},
        )
        for cache in caches
    ]
    results = [json.loads(child.communicate()[0].strip().splitlines()[-1]) for child in children]
    for cache in caches:
        shutil.rmtree(cache, ignore_errors=True)
    firsts = [r["first"] for r in results]
    return {
        "median": statistics.median(firsts),
        "slowest": max(firsts),
        "traced": sum(r["traced"] > 0 for r in results),
        "fx_miss": sum(r["fx_miss"] for r in results),
        "captures": sum(r["mode"] == "capture" for r in results),
    }


def local_store(port: int, work: Path) -> Path:
    """The job's entry as a local file (for local-replay), when Redis holds one."""
    import redis

    path = work / "local.dynrep"
    if path.exists() or not redis.Redis(port=port).keys("dynrep:bench:*:entries"):
        return path
    from dynamo_replay.fleet.entries import FleetEntries
    from dynamo_replay.fleet.url import parse_fleet_url

    entries = FleetEntries(parse_fleet_url(f"redis://127.0.0.1:{port}/0?name=bench"))
    digest = next(d for d in entries.digests() if entries.manifests(d))
    path.write_bytes(entries.download(digest, entries.manifests(digest)[0]))
    return path


def timed(command: list[str], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - began)
    return times


def download(port: int, work: Path, mib: int, repeat: int) -> dict:
    import dynamo_replay as dr
    from dynamo_replay.fleet.entries import FleetEntries
    from dynamo_replay.fleet.url import parse_fleet_url

    store = work / "big.dynrep"
    with dr.Store.create(str(store), level=1) as s:
        for index in range(mib):
            key = s.put_blob(os.urandom(1 << 20))
            s.put(dr.Artifact(name=f"blob/{index}", media_type="application/octet-stream", blob_key=key, size=1 << 20))
    url = f"redis://127.0.0.1:{port}/0?name=bench"
    FleetEntries(parse_fleet_url(url)).upload("bench", store.read_bytes(), {"sources": []})
    fetched, local = [], []
    for _ in range(repeat):  # in turn, so that drift hits both
        target = Path(tempfile.mkdtemp(dir=work))
        fetched += timed([sys.executable, "-c", FETCH, url, str(target)], 1)
        shutil.rmtree(target)
        local += timed([sys.executable, "-c", LOCAL, str(store)], 1)
    ratios = [f / here for f, here in zip(fetched, local)]
    return {
        "mib": store.stat().st_size / (1 << 20),
        "fetch": statistics.median(fetched),
        "local": statistics.median(local),
        "ratio": statistics.median(ratios),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="*", default=[1, 4, 16])
    parser.add_argument(
        "--columns", nargs="+", default=["cold", "pytorch-redis", "fleet", "fleet-warm", "local-replay"]
    )
    parser.add_argument("--store-mib", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5, help="download pairs (default 5)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fleet-bench-"))
    server, port = start_redis(work)
    try:
        script = work / "child.py"
        model = textwrap.dedent(MODELS["gpt"]).split("def make()")[0]
        script.write_text(CHILD.replace("@@MODEL@@", model))
        print(f"fleet.py: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        print(
            "| N | column | median first output (s) | slowest (s) | processes that traced | Inductor compiles "
            "(FX-graph misses) | captures |"
        )
        print("|---:|---|---:|---:|---:|---:|---:|")
        for n in args.sizes:
            for mode in args.columns:
                r = group(script, mode, n, port, work)
                print(
                    f"| {n} | {mode} | {r['median']:.2f} | {r['slowest']:.2f} | {r['traced']} | {r['fx_miss']} | "
                    f"{r['captures'] if mode.startswith('fleet') else ''} |",
                    flush=True,
                )
        if args.store_mib:
            d = download(port, work, args.store_mib, args.repeat)
            print(
                f"\nstore of {d['mib']:.0f} MiB, medians of {args.repeat} fresh processes in turn: fetched from Redis "
                f"(chunks checked, written to the local cache, every artifact read) {d['fetch']:.2f} s; read from a "
                f"local file {d['local']:.2f} s; ratio {d['ratio']:.2f}"
            )
    finally:
        server.kill()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
