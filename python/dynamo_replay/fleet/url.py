"""A fleet store's address: redis://[user:password@]host[:port][/db]?name=JOB[&wait=S][&lease=S]
[&max_bytes=N] (rediss:// for TLS). Parsed once; every message shows it with the password masked."""

from __future__ import annotations

import dataclasses
import re
from urllib.parse import parse_qs, unquote, urlsplit

SCHEMES = ("redis", "rediss")
# How long a process that finds another capturing the same job waits for its entry before it
# compiles as usual: longer than a cold compile of a large model here (tens of seconds to a
# few minutes), short enough that a stuck fleet still starts. `wait=0`: never wait.
DEFAULT_WAIT_SECONDS = 600.0
# A capture's lease lives this long unless its holder renews it (every third of it): a holder
# that dies frees its job within this time.
DEFAULT_LEASE_SECONDS = 30.0
_JOB = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


@dataclasses.dataclass(frozen=True)
class FleetURL:
    scheme: str
    host: str
    port: int
    db: int
    username: str | None
    password: str | None
    job: str
    wait: float
    lease: float
    max_bytes: int | None = None  # the job's entries together; past it, the least recently used go

    @property
    def shown(self) -> str:
        """The URL as messages show it: the password masked, the options left out."""
        user = f"{self.username or ''}{':***' if self.password else ''}@" if self.username or self.password else ""
        return f"{self.scheme}://{user}{self.host}:{self.port}/{self.db}?name={self.job}"


def is_fleet_url(text: object) -> bool:
    return isinstance(text, str) and text.split("://", 1)[0] in SCHEMES and "://" in text


def parse_fleet_url(text: str) -> FleetURL:
    """REQUIRES: is_fleet_url(text). ValueError names what is wrong."""
    parts = urlsplit(text)
    query = {key: values[-1] for key, values in parse_qs(parts.query, keep_blank_values=True).items()}
    unknown = sorted(set(query) - {"name", "wait", "lease", "max_bytes"})
    if unknown:
        raise ValueError(f"{text}: unknown option {unknown[0]!r} (known: name, wait, lease, max_bytes)")
    job = query.get("name", "")
    if not _JOB.match(job):
        raise ValueError(f"{text}: name=JOB is required: 1 to 128 letters, digits, '_', '-' or '.'")
    path = parts.path.strip("/") or "0"
    if not path.isdigit():
        raise ValueError(f"{text}: the database must be a number, not {path!r}")
    try:
        wait = float(query.get("wait", DEFAULT_WAIT_SECONDS))
        lease = float(query.get("lease", DEFAULT_LEASE_SECONDS))
        port = parts.port or 6379
        max_bytes = int(query["max_bytes"]) if "max_bytes" in query else None
    except ValueError as error:
        raise ValueError(f"{text}: {error}") from None
    if wait < 0 or lease <= 0:
        raise ValueError(f"{text}: wait must be >= 0 and lease > 0 seconds")
    if max_bytes is not None and max_bytes <= 0:
        raise ValueError(f"{text}: max_bytes must be a positive number of bytes")
    return FleetURL(
        scheme=parts.scheme,
        host=parts.hostname or "localhost",
        port=port,
        db=int(path),
        username=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        job=job,
        wait=wait,
        lease=lease,
        max_bytes=max_bytes,
    )
