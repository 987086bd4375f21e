"""The fleet store on a real redis-server (Debian's, started here on a loopback port): one
process captures a job, every other replays it, and Redis failing or holding bad data never
fails a job or loads anything unchecked. Each job is a fresh process (jobs/fleet_job.py).
About 3.5 minutes (a Redis server and fresh job processes) on a 2-core machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
redis = pytest.importorskip("redis")

sys.path.insert(0, str(Path(__file__).parent))
from job_environment import job_environment  # noqa: E402
from redis_server import free_port, start_redis  # noqa: E402

JOB = Path(__file__).parent / "jobs" / "fleet_job.py"


@pytest.fixture
def server(tmp_path: Path):
    """A fresh redis-server on a free loopback port; yields its port."""
    port = free_port()
    process = start_redis(port, tmp_path, "--appendonly", "no")
    yield port
    process.kill()
    process.wait()


def start(url: str, out: Path, cache: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    environment = job_environment(str(out) + "-inductor", DYNAMO_REPLAY_CACHE=str(cache), **(env or {}))
    return subprocess.Popen(
        [sys.executable, str(JOB), url, str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )


def finish(process: subprocess.Popen[str]) -> tuple[dict, str]:
    _, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-3000:]
    out = Path(process.args[3])
    return json.loads((out / "report.json").read_text()), stderr


def run_job(url: str, out: Path, cache: Path, *extra: str, **kwargs) -> tuple[dict, str]:
    return finish(start(url, out, cache, *extra, **kwargs))


def outputs(out: Path) -> list:
    return torch.load(out / "outputs.pt")


def test_one_process_captures_the_next_replays_and_a_restart_uses_its_local_copy(server: int, tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{server}/0?name=job"
    first, _ = run_job(url, tmp_path / "a", tmp_path / "cache-a")
    assert first["mode"] == "capture" and first["traced"] == ["forward"]
    second, _ = run_job(url, tmp_path / "b", tmp_path / "cache-b")
    assert second["mode"] == "replay" and second["traced"] == [] and second["entry"] == first["entry"]
    assert torch.equal(outputs(tmp_path / "a")[0], outputs(tmp_path / "b")[0])
    client = redis.Redis(port=server)
    for key in client.scan_iter(match="dynrep:job:*:chunk:*"):
        client.delete(key)  # a restart on the same host must not need them
    third, _ = run_job(url, tmp_path / "c", tmp_path / "cache-b")
    assert third["mode"] == "replay" and third["traced"] == []


def test_a_stampede_of_8_processes_captures_once(server: int, tmp_path: Path) -> None:
    # 8 processes on 2 cores all reach the lease together (benchmarks/fleet.py times 16).
    url = f"redis://127.0.0.1:{server}/0?name=stampede"
    processes = [start(url, tmp_path / f"p{i}", tmp_path / f"cache-{i}") for i in range(8)]
    reports = [finish(process)[0] for process in processes]
    modes = sorted(report["mode"] for report in reports)
    assert modes == ["capture"] + ["replay"] * 7, modes
    assert all(report["traced"] == [] for report in reports if report["mode"] == "replay")
    expected = outputs(tmp_path / "p0")[0]
    assert all(torch.equal(outputs(tmp_path / f"p{i}")[0], expected) for i in range(8))


def test_a_corrupted_chunk_is_refused_named_set_aside_and_recaptured(server: int, tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{server}/0?name=job"
    first, _ = run_job(url, tmp_path / "a", tmp_path / "cache-a")
    client = redis.Redis(port=server)
    (chunk,) = list(client.scan_iter(match=f"dynrep:job:*:chunk:{first['entry']}:0"))
    client.setrange(chunk, 100, b"\xff\x00\xff")
    second, stderr = run_job(url, tmp_path / "b", tmp_path / "cache-b")
    assert f"entry {first['entry']}: chunk 0 of 1 does not match its hash" in stderr and "set aside" in stderr
    assert second["mode"] == "capture" and second["entry"] != first["entry"]
    assert torch.equal(outputs(tmp_path / "a")[0], outputs(tmp_path / "b")[0])


def test_redis_down_the_job_compiles_normally_with_one_warning(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}/0?name=job"  # nothing listens there
    began = time.monotonic()
    report, stderr = run_job(url, tmp_path / "a", tmp_path / "cache")
    assert report["mode"] == "compile" and report["traced"] == ["forward"]
    assert stderr.count("dynamo-replay: fleet") == 1 and "the job compiles as usual" in stderr
    assert "ConnectionError" in stderr and time.monotonic() - began < 60


def test_a_killed_lease_holder_is_taken_over_after_its_lease_expires(server: int, tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{server}/0?name=job&lease=2&wait=120"
    holder = start(url, tmp_path / "a", tmp_path / "cache-a", "--hold", "600")
    client = redis.Redis(port=server)
    deadline = time.monotonic() + 300
    while not list(client.scan_iter(match="dynrep:job:*:lease")) and time.monotonic() < deadline:
        time.sleep(0.2)
    waiter = start(url, tmp_path / "b", tmp_path / "cache-b")
    seen = []  # the holder is killed once the waiter has seen its lease (on a busy machine, not after a fixed time)
    for line in waiter.stderr:
        seen.append(line)
        if "is capturing this job; waiting" in line:
            break
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    report, stderr = finish(waiter)
    stderr = "".join(seen) + stderr
    assert report["mode"] == "capture" and report["traced"] == ["forward"]
    assert stderr.count("is capturing this job; waiting up to 120 s") == 1


def test_a_host_with_another_config_sees_no_match_and_fleet_show_names_the_factor(server: int, tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{server}/0?name=job"
    first, _ = run_job(url, tmp_path / "a", tmp_path / "cache-a")
    other = {"TORCHINDUCTOR_MAX_AUTOTUNE_POINTWISE": "1"}
    show = subprocess.run(
        [sys.executable, "-m", "dynamo_replay", "fleet", "show", url],
        capture_output=True,
        text=True,
        env={**os.environ, **other},
        timeout=300,
    )
    assert show.returncode == 1
    assert f"entry {first['entry']}" in show.stdout
    assert "config.inductor.max_autotune_pointwise: entry False, this host True" in show.stdout
    listing = subprocess.run(
        [sys.executable, "-m", "dynamo_replay", "fleet", "ls", url], capture_output=True, text=True, timeout=300
    )
    assert first["entry"] in listing.stdout and "(this host)" in listing.stdout
    second, _ = run_job(url, tmp_path / "b", tmp_path / "cache-b", env=other)
    assert second["mode"] == "capture" and second["entry"] != first["entry"]
    fleet = [sys.executable, "-m", "dynamo_replay", "fleet"]
    removed = subprocess.run(
        [*fleet, "rm", url, "--entry", first["entry"]], capture_output=True, text=True, timeout=300
    )
    assert removed.returncode == 0 and "removed 1 entries" in removed.stdout
    listing = subprocess.run([*fleet, "ls", url], capture_output=True, text=True, timeout=300).stdout
    assert first["entry"] not in listing and second["entry"] in listing and "total: 1 entries" in listing
    assert subprocess.run([*fleet, "rm", url], capture_output=True, text=True, timeout=300).stdout.startswith(
        "removed 1"
    )


UPLOAD = """
import sys, os
from dynamo_replay.fleet.entries import FleetEntries
from dynamo_replay.fleet.url import parse_fleet_url
FleetEntries(parse_fleet_url(sys.argv[1])).upload("d", os.urandom(96 << 20), {"sources": []})
"""


def test_a_writer_killed_mid_upload_leaves_no_visible_entry(server: int, tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{server}/0?name=job"
    client = redis.Redis(port=server)
    writer = subprocess.Popen([sys.executable, "-c", UPLOAD, url])
    deadline = time.monotonic() + 120
    while not list(client.scan_iter(match="dynrep:job:d:chunk:*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    chunks = list(client.scan_iter(match="dynrep:job:d:chunk:*"))
    assert chunks and client.scard("dynrep:job:d:entries") == 0 and not list(client.scan_iter(match="*:entry:*"))
    assert all(0 < client.ttl(chunk) <= 3600 for chunk in chunks)  # the uncommitted chunks expire


def test_with_a_key_an_entry_signed_otherwise_is_refused_before_loading_and_recaptured(
    server: int, tmp_path: Path
) -> None:
    url = f"redis://127.0.0.1:{server}/0?name=job"
    first, _ = run_job(url, tmp_path / "a", tmp_path / "cache-a", env={"DYNAMO_REPLAY_KEY": "key-one"})
    second, stderr = run_job(url, tmp_path / "b", tmp_path / "cache-b", env={"DYNAMO_REPLAY_KEY": "key-two"})
    assert "signature does not verify" in stderr
    assert second["mode"] == "capture" and second["entry"] != first["entry"]
    third, _ = run_job(url, tmp_path / "c", tmp_path / "cache-c", env={"DYNAMO_REPLAY_KEY": "key-two"})
    assert third["mode"] == "replay" and third["entry"] == second["entry"] and third["traced"] == []


def test_redis_killed_mid_upload_shows_no_partial_entry_and_the_next_process_recaptures(tmp_path: Path) -> None:
    """redis-server is SIGKILLed while a 96 MiB upload is under way and restarted from its
    append-only file: what survived is never a visible entry, its chunks expire, and the next
    process of the job captures."""
    port = free_port()
    durable = ("--appendonly", "yes", "--appendfsync", "always")
    server = start_redis(port, tmp_path, *durable)
    client = redis.Redis(port=port)
    try:
        url = f"redis://127.0.0.1:{port}/0?name=job"
        writer = subprocess.Popen([sys.executable, "-c", UPLOAD, url], stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not list(client.scan_iter(match="dynrep:job:d:chunk:*")) and time.monotonic() < deadline:
            time.sleep(0.01)
        server.kill()
        server.wait()
        assert writer.wait(timeout=60) != 0 and "ConnectionError" in writer.stderr.read()
        server = start_redis(port, tmp_path, *durable)  # back from its append-only file
        chunks = list(client.scan_iter(match="dynrep:job:d:chunk:*"))
        assert chunks and client.scard("dynrep:job:d:entries") == 0 and not list(client.scan_iter(match="*:entry:*"))
        assert all(0 < client.ttl(chunk) <= 3600 for chunk in chunks)
        report, _ = run_job(url, tmp_path / "a", tmp_path / "cache")
        assert report["mode"] == "capture"
    finally:
        server.kill()
        server.wait()
