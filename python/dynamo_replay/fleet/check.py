"""`check` of a fleet URL: which of the job's entries this host would take, what a replay of it
would do (the store's own check, replay/preflight.py, on a downloaded copy), and for each other
entry what differs. The fleet's part of `check` lives with the fleet, which sits above replay."""

from __future__ import annotations

import tempfile
from pathlib import Path

from dynamo_replay.fleet.cli import entry_differences
from dynamo_replay.fleet.entries import FleetEntries
from dynamo_replay.fleet.session import comparable_environment, environment_digest
from dynamo_replay.fleet.url import parse_fleet_url
from dynamo_replay.replay.preflight import Preflight, check_store


def check_fleet(text: str, key: str | bytes | None = None, job: list[str] | None = None) -> Preflight:
    """Which of the job's fleet entries this host would take and what replaying it would do;
    for each other entry, what differs. Raises redis.RedisError or OSError when Redis fails."""
    url = parse_fleet_url(text)
    entries = FleetEntries(url)
    environment = comparable_environment()
    here = environment_digest(environment)
    listed, taken = [], None
    for digest in entries.digests():
        for manifest in entries.manifests(digest):
            differences = entry_differences(environment, manifest)
            matches = digest == here and not differences and taken is None
            if matches:
                taken = (digest, manifest)
            listed.append(
                {
                    "id": manifest["id"],
                    "environment": digest,
                    "matches": matches,
                    "differences": differences or ([] if digest == here else ["the environment digest differs"]),
                }
            )
    fleet = {"url": url.shown, "this_host": here, "entry": taken[1]["id"] if taken else None, "entries": listed}
    if taken is None:
        result = Preflight(
            store=url.shown, refused="no entry of the job matches this host: its first run captures one", fleet=fleet
        )
        return result
    with tempfile.TemporaryDirectory(prefix="dynrep-check-") as directory:
        local = Path(directory) / "entry.dynrep"
        local.write_bytes(entries.download(*taken))
        result = check_store(str(local), key, job)
    result.store, result.fleet = f"{url.shown} entry {taken[1]['id']}", fleet
    return result
