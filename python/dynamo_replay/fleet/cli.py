"""python -m dynamo_replay fleet ls|show|rm|gc URL: a job's entries in Redis (with each one's
hits, last use and size), which one this host would replay and, when none, which factor
differs; gc removes the least recently used entries past a byte limit. Exit codes: 0 done, 1
Redis failing or (show) no entry for this host, 2 bad usage."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from dynamo_replay.fleet.url import parse_fleet_url


def add_parser(sub: Any) -> None:
    fleet = sub.add_parser("fleet", help="list, explain or remove a job's entries in a fleet store (redis://)")
    fleet.add_argument(
        "action",
        choices=["ls", "show", "rm", "gc"],
        help="ls: every entry and lease of the job; show: what this host would replay, or why "
        "nothing matches; rm: remove entries (--entry ID, or all of the job); gc: remove the "
        "least recently used entries until the job's take --max-bytes (or the URL's max_bytes)",
    )
    fleet.add_argument("url", help="redis://HOST:PORT/DB?name=JOB[&max_bytes=N]")
    fleet.add_argument("--entry", help="rm: only this entry")
    fleet.add_argument("--max-bytes", type=int, help="gc: the job's byte limit (default: the URL's max_bytes)")
    fleet.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import redis  # only here: the rest of the CLI works without the Redis client

    from dynamo_replay.fleet.entries import FleetEntries

    try:
        url = parse_fleet_url(args.url)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    entries = FleetEntries(url)
    try:
        return {"ls": _ls, "show": _show, "rm": _rm, "gc": _gc}[args.action](entries, args)
    except (redis.RedisError, OSError) as error:
        print(f"error: {url.shown}: {type(error).__name__}: {error}", file=sys.stderr)
        return 1


def _age(since: float) -> str:
    return f"{max(0.0, time.time() - since):.0f} s ago"


def _ls(entries: Any, args: argparse.Namespace) -> int:
    from dynamo_replay.fleet.session import comparable_environment, environment_digest

    here = environment_digest(comparable_environment())
    print(
        f"{'ENVIRONMENT':<18} {'ENTRY':<34} {'SIZE':>10}  {'RANKS':>5}  {'GEN':>3}  {'HITS':>8}  {'STARTS':>6}  "
        f"{'LAST USED':<12} {'CREATED':<12} HOST"
    )
    total = 0
    for digest in entries.digests():
        mark = " (this host)" if digest == here else ""
        for manifest in entries.manifests(digest):
            total += 1
            holder = manifest.get("holder", {})
            usage = entries.usage(digest, manifest["id"])
            print(
                f"{digest:<18} {manifest['id']:<34} {manifest['size']:>10}  {manifest.get('world_size', 1):>5}  "
                f"{manifest.get('generations', 1):>3}  {int(usage['hits']):>8}  {int(usage['starts']):>6}  "
                f"{_age(usage['last_used']) if usage['last_used'] else 'never':<12} {_age(manifest['created']):<12} "
                f"{holder.get('host', '?')} pid {holder.get('pid', '?')}{mark}"
            )
        for entry_id in sorted(m.decode() for m in entries.redis.smembers(entries.key(digest, "aside"))):
            why = entries.redis.hget(entries.key(digest, "entry", entry_id), "set_aside") or b""
            print(
                f"{digest:<18} {entry_id:<34} {'set aside':>10}  {'':>5}  {'':>3}  {'':>8}  {'':>6}  {'':<12} "
                f"{'':<12} {why.decode(errors='replace')}"
            )
        lease = entries.lease_holder(digest)
        if lease:
            print(
                f"{digest:<18} {'lease':<34} {'':>10}  {'':>5}  {'':>3}  {'':>8}  {'':>6}  {'':<12} "
                f"{_age(float(lease.get('since', 0))):<12} "
                f"{lease.get('host', '?')} pid {lease.get('pid', '?')} is capturing{mark}"
            )
    print(f"total: {total} entries of job {entries.url.job}")
    return 0


def _show(entries: Any, args: argparse.Namespace) -> int:
    from dynamo_replay.fleet.session import comparable_environment, environment_digest

    environment = comparable_environment()
    here = environment_digest(environment)
    print(f"this host: environment {here}")
    found = False
    for digest in entries.digests():
        for manifest in entries.manifests(digest):
            differences = entry_differences(environment, manifest)
            if digest == here and not differences:
                print(f"entry {manifest['id']} ({digest}): this host replays it")
                found = True
                continue
            print(f"entry {manifest['id']} ({digest}): does not match this host:")
            for line in differences[:10] or ["the environment digest differs"]:
                print(f"  {line}")
            if len(differences) > 10:
                print(f"  ... and {len(differences) - 10} more")
    if not found:
        print("no entry matches this host: its next run captures one")
    return 0 if found else 1


def entry_differences(environment: dict[str, str], manifest: dict[str, Any]) -> list[str]:
    """What keeps this host (its comparable environment) from replaying an entry: each factor
    that differs, and each source file changed since the entry was captured."""
    from dynamo_replay.fleet.session import comparable_environment
    from dynamo_replay.replay.checks import source_differences

    differences = _differences(environment, comparable_environment(manifest.get("environment", {})))
    sources = [(str(n), str(f), [int(a), int(b)], str(h)) for n, f, (a, b), h in manifest.get("sources", [])]
    return differences + source_differences(sources)


def _differences(here: dict[str, str], there: dict[str, str]) -> list[str]:
    return [
        f"{key}: entry {there.get(key, '(absent)')}, this host {here.get(key, '(absent)')}"
        for key in sorted(here.keys() | there.keys())
        if here.get(key) != there.get(key)
    ]


def _gc(entries: Any, args: argparse.Namespace) -> int:
    limit = args.max_bytes if args.max_bytes is not None else entries.url.max_bytes
    if limit is None or limit <= 0:
        print("error: gc needs --max-bytes N or &max_bytes=N in the URL", file=sys.stderr)
        return 2
    removed = entries.collect(limit)
    for digest, entry_id, size in removed:
        print(f"removed {entry_id} ({digest}, {size} bytes)")
    print(f"removed {len(removed)} entries of job {entries.url.job}: its entries now take {limit} bytes or less")
    return 0


def _rm(entries: Any, args: argparse.Namespace) -> int:
    removed = 0
    for digest in entries.digests():
        ids = [m["id"] for m in entries.manifests(digest)]
        ids += [m.decode() for m in entries.redis.smembers(entries.key(digest, "aside"))]
        for entry_id in ids:
            if args.entry in (None, entry_id):
                entries.remove(digest, entry_id)
                removed += 1
    print(f"removed {removed} entries of job {entries.url.job}")
    return 0
