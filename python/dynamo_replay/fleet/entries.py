"""A job's entries in Redis: each a store, uploaded as chunks first and made visible by its
manifest last, in one transaction; and the lease that lets one process at a time capture.

Keys, for job J and environment digest F (fingerprint.py, fleet_digest):
  dynrep:J:F:entries            set of entry ids visible to readers
  dynrep:J:F:entry:ID           hash: "manifest" (JSON, below); "hits", "starts", "last_used"
                                (each replay adds its saved frames' calls, one start, the time)
  dynrep:J:F:chunk:ID:N         the store's bytes N*CHUNK_BYTES..; expire until the manifest commits
  dynrep:J:F:lease              who captures now (JSON), set if absent, with an expiry its holder renews
  dynrep:J:F:aside              set of entry ids that failed a reader's checks (never loaded again)
Thread safety: one FleetEntries per thread (redis-py clients are safe to share, the lease
renewal thread makes its own)."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from typing import Any

import redis

from dynamo_replay.fleet.url import FleetURL

CHUNK_BYTES = 4 << 20  # well below Redis's 512 MiB value limit, small enough to stream
_UNCOMMITTED_SECONDS = 3600  # chunks of an upload that never committed disappear after this
_PREFIX = "dynrep"
# Renews a lease only while this process holds it; releases likewise.
_RENEW = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0"
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class EntryError(Exception):
    """An entry that fails its checks: the message names the entry and the chunk."""


def connect(url: FleetURL) -> redis.Redis:
    """A client whose every call ends within a few seconds (no call may hang a job)."""
    return redis.Redis(
        host=url.host,
        port=url.port,
        db=url.db,
        username=url.username,
        password=url.password,
        ssl=url.scheme == "rediss",
        socket_connect_timeout=3,
        socket_timeout=10,
        retry_on_timeout=False,
    )


def holder_text(launch: str | None = None) -> str:
    """Who holds a lease or made an entry; `launch` names the multi-rank job it belongs to."""
    holder: dict[str, Any] = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.time()}
    if launch is not None:
        holder["launch"] = launch
    return json.dumps(holder)


class FleetEntries:
    def __init__(self, url: FleetURL, client: redis.Redis | None = None) -> None:
        self.url = url
        self.redis = client or connect(url)

    def key(self, digest: str, *parts: str) -> str:
        return ":".join([_PREFIX, self.url.job, digest, *parts])

    # --- readers ------------------------------------------------------------------------------

    def manifests(self, digest: str) -> list[dict[str, Any]]:
        """The visible entries' manifests, newest first."""
        ids = sorted(member.decode() for member in self.redis.smembers(self.key(digest, "entries")))
        found = []
        for entry_id in ids:
            raw = self.redis.hget(self.key(digest, "entry", entry_id), "manifest")
            if raw is None:
                continue
            try:
                manifest = json.loads(raw)
            except ValueError:
                continue
            if isinstance(manifest, dict) and manifest.get("id") == entry_id:
                found.append(manifest)
        return sorted(found, key=lambda m: -float(m.get("created", 0)))

    def download(self, digest: str, manifest: dict[str, Any]) -> bytes:
        """The entry's bytes, each chunk checked against its hash. EntryError otherwise."""
        entry_id, hashes = manifest["id"], manifest["chunks"]
        parts = []
        for index, expected in enumerate(hashes):
            data = self.redis.get(self.key(digest, "chunk", entry_id, str(index)))
            if data is None:
                raise EntryError(f"entry {entry_id}: chunk {index} of {len(hashes)} is missing")
            if hashlib.sha256(data).hexdigest() != expected:
                raise EntryError(
                    f"entry {entry_id}: chunk {index} of {len(hashes)} does not match its hash (altered in Redis)"
                )
            parts.append(data)
        return b"".join(parts)  # every byte checked once, chunk by chunk; the store checks its own too

    def record_use(self, digest: str, entry_id: str, hits: int) -> None:
        """One start that replayed the entry: its saved frames' calls, and when."""
        key = self.key(digest, "entry", entry_id)
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.hincrby(key, "hits", hits)
            pipe.hincrby(key, "starts", 1)
            pipe.hset(key, "last_used", repr(time.time()))
            pipe.execute()

    def usage(self, digest: str, entry_id: str) -> dict[str, float]:
        """{"hits", "starts", "last_used"} of an entry (0 where never replayed)."""
        raw = self.redis.hmget(self.key(digest, "entry", entry_id), ["hits", "starts", "last_used"])
        return {name: float(value) if value else 0.0 for name, value in zip(("hits", "starts", "last_used"), raw)}

    def collect(self, max_bytes: int) -> list[tuple[str, str, int]]:
        """Removes the job's entries, the least recently used first (replayed longest ago, or
        never and made longest ago), until they take max_bytes or less. Returns (digest, id,
        size) of each removed."""
        found = []
        for digest in self.digests():
            for manifest in self.manifests(digest):
                used = self.usage(digest, manifest["id"])["last_used"] or float(manifest.get("created", 0))
                found.append((used, digest, manifest["id"], int(manifest.get("size", 0))))
        total = sum(size for *_, size in found)
        removed = []
        for _, digest, entry_id, size in sorted(found):
            if total <= max_bytes:
                break
            self.remove(digest, entry_id)
            total -= size
            removed.append((digest, entry_id, size))
        return removed

    def set_aside(self, digest: str, entry_id: str, why: str) -> None:
        """Hides an entry from readers for good, with the reason, so the next process recaptures."""
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.srem(self.key(digest, "entries"), entry_id)
            pipe.sadd(self.key(digest, "aside"), entry_id)
            pipe.hset(self.key(digest, "entry", entry_id), "set_aside", why)
            pipe.execute()

    # --- writers ------------------------------------------------------------------------------

    def upload(self, digest: str, data: bytes, manifest: dict[str, Any]) -> str:
        """Chunks first (each expiring until the commit), then, in one transaction, the
        manifest, the chunks made permanent and the entry made visible. Returns the entry id."""
        entry_id = hashlib.sha256(data).hexdigest()[:32]
        chunks = [data[start : start + CHUNK_BYTES] for start in range(0, len(data), CHUNK_BYTES)] or [b""]
        for index, chunk in enumerate(chunks):
            self.redis.set(self.key(digest, "chunk", entry_id, str(index)), chunk, ex=_UNCOMMITTED_SECONDS)
        manifest = {
            **manifest,
            "id": entry_id,
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "chunks": [hashlib.sha256(chunk).hexdigest() for chunk in chunks],
            "created": time.time(),
        }
        with self.redis.pipeline(transaction=True) as pipe:
            for index in range(len(chunks)):
                pipe.persist(self.key(digest, "chunk", entry_id, str(index)))
            pipe.hset(self.key(digest, "entry", entry_id), "manifest", json.dumps(manifest, sort_keys=True))
            pipe.sadd(self.key(digest, "entries"), entry_id)
            pipe.execute()
        return entry_id

    def remove(self, digest: str, entry_id: str) -> None:
        """The entry, its chunks (those its manifest names; any others expire) and its listings."""
        raw = self.redis.hget(self.key(digest, "entry", entry_id), "manifest")
        count = len(json.loads(raw).get("chunks", [])) if raw else 0
        chunks = [self.key(digest, "chunk", entry_id, str(index)) for index in range(count)]
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.srem(self.key(digest, "entries"), entry_id)
            pipe.srem(self.key(digest, "aside"), entry_id)
            pipe.delete(self.key(digest, "entry", entry_id), *chunks)
            pipe.execute()

    # --- the lease ----------------------------------------------------------------------------

    def take_lease(self, digest: str, holder: str) -> bool:
        return bool(self.redis.set(self.key(digest, "lease"), holder, nx=True, px=int(self.url.lease * 1000)))

    def renew_lease(self, digest: str, holder: str) -> bool:
        return bool(self.redis.eval(_RENEW, 1, self.key(digest, "lease"), holder, int(self.url.lease * 1000)))

    def release_lease(self, digest: str, holder: str) -> None:
        self.redis.eval(_RELEASE, 1, self.key(digest, "lease"), holder)

    def lease_holder(self, digest: str) -> dict[str, Any] | None:
        raw = self.redis.get(self.key(digest, "lease"))
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return {"holder": raw.decode(errors="replace")}

    def digests(self) -> list[str]:
        """Every environment digest this job has entries, set-aside entries or a lease under."""
        found = set()
        for key in self.redis.scan_iter(match=f"{_PREFIX}:{self.url.job}:*", count=500):
            parts = key.decode().split(":")
            if len(parts) >= 4:
                found.add(parts[2])
        return sorted(found)
