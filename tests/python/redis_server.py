"""Debian's redis-server on a free loopback port, for the fleet tests."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_redis(port: int, folder: Path, *options: str) -> subprocess.Popen:
    """redis-server on a loopback port, answering by the time this returns."""
    binary = shutil.which("redis-server")
    assert binary, "redis-server is missing: `make test` installs Debian's redis-server"
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(folder), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            break
        except (redis.ConnectionError, redis.BusyLoadingError):
            time.sleep(0.05)
    return process
