"""A store's lifecycle with real parts: `check` predicts what replay then does (one line per
cause), updates add generations that later starts replay, an update killed at any point leaves
the old store whole, two updaters lose nothing, eviction keeps the most recently used within a
byte limit (a real redis-server for the fleet), and a serving job that meets a new length on
each restart compiles each length once. Jobs are fresh processes (jobs/lifecycle/serve.py).
About 4 minutes on a 2-core machine."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
redis = pytest.importorskip("redis")

from dynamo_replay import generations, schema  # noqa: E402
from dynamo_replay._core import Artifact, CodeObject, Store, TraceEvent  # noqa: E402
from dynamo_replay.update import Limits, merge_update, store_lock  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from job_environment import job_environment  # noqa: E402
from redis_server import free_port, start_redis  # noqa: E402
from shared_captures import shared  # noqa: E402

JOB = Path(__file__).parent / "jobs" / "lifecycle" / "serve.py"


def clean_environment(inductor: Path, **extra: str) -> dict[str, str]:
    return job_environment(inductor, **extra)


def start(store: str, report: Path, lengths: str, *flags: str, job: Path = JOB, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(job), store, str(report), "--lengths", lengths, *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_environment(report.parent / "inductor", **env),
    )


def finish(process: subprocess.Popen[str]) -> dict:
    _, stderr = process.communicate(timeout=400)
    assert process.returncode == 0, stderr[-3000:]
    report = json.loads(Path(process.args[3]).read_text())
    assert report["outputs_match"], report
    return report


def serve(store: str, tmp: Path, lengths: str, *flags: str, job: Path = JOB, **env: str) -> dict:
    tmp.mkdir(parents=True, exist_ok=True)
    return finish(start(store, tmp / "report.json", lengths, *flags, job=job, **env))


def start_check(store: str, *job: str, inductor: Path | None = None, **env: str) -> subprocess.Popen[str]:
    # A fleet URL has no folder beside it: its caller names one (a URL read as a path made "redis:/").
    inductor = inductor or Path(store).parent / "inductor"
    return subprocess.Popen(
        [sys.executable, "-m", "dynamo_replay", "check", "--json", store, *job],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_environment(inductor, **env),
    )


def check_said(process: subprocess.Popen[str]) -> tuple[int, dict]:
    stdout, stderr = process.communicate(timeout=300)
    assert process.returncode in (0, 3, 4), stderr[-2000:]
    return process.returncode, json.loads(stdout)


def check(store: str, *job: str, inductor: Path | None = None, **env: str) -> tuple[int, dict]:
    return check_said(start_check(store, *job, inductor=inductor, **env))


def copy_store(source: Path, target: Path, environment: dict[str, str] | None = None) -> None:
    """The store as if captured where the fingerprint reads `environment` (entries changed)."""
    with Store.open(str(source)) as store, Store.create(str(target), overwrite=True) as out:
        for record in store.records():
            if isinstance(record, Artifact):
                data = store.get_blob(record.blob_key)
                if record.name == schema.REPLAY_DATA_NAME and environment:
                    raw = json.loads(data)
                    raw["environment"].update(environment)
                    data = json.dumps(raw).encode()
                out.put(
                    Artifact(
                        name=record.name,
                        media_type=record.media_type,
                        blob_key=out.put_blob(data),
                        size=len(data),
                        attributes=dict(record.attributes),
                    )
                )
                continue
            keys = (
                [record.payload_key]
                if isinstance(record, TraceEvent)
                else [record.bytecode_key, record.disassembly_key]
                if isinstance(record, CodeObject)
                else []
            )
            for key in keys:
                if key and key not in out:
                    out.put_blob(store.get_blob(key))
            out.put(record)


@pytest.fixture
def server(tmp_path: Path):
    """A fresh redis-server on a free loopback port; yields its port."""
    port = free_port()
    process = start_redis(port, tmp_path, "--appendonly", "no")
    yield port
    process.kill()
    process.wait()


@pytest.fixture(scope="module")
def captured() -> dict[str, Path]:
    """A store of the job at length 8, and captures at lengths 16 and 24 (an update's delta is
    a capture of what compiled), of a copy of the job ("job", which a test may edit and put back).
    Made once a build (shared_captures): tests copy a store before they change it."""
    root = shared("lifecycle", _capture_lengths, inputs=[__file__, JOB])
    stores = {"job": root / "serve.py", **{n: root / f"capture-{n}" / "job.dynrep" for n in ("8", "16", "24")}}
    if stores["job"].read_text() != JOB.read_text():  # an edit a killed test did not put back
        stores["job"].write_text(JOB.read_text())
    return stores


def _capture_lengths(root: Path) -> None:
    job = root / "serve.py"
    job.write_text(JOB.read_text())
    processes = []
    for lengths in ("8", "16", "24"):
        folder = root / f"capture-{lengths}"
        folder.mkdir()
        processes.append(start(str(folder / "job.dynrep"), folder / "report.json", lengths, "--update", job=job))
    for process in processes:
        finish(process)
    for lengths in ("8", "16", "24"):
        shutil.rmtree(root / f"capture-{lengths}" / "inductor", ignore_errors=True)


def generations_of(path: Path) -> list[int]:
    with Store.open(str(path)) as store:
        return generations.generations({a.name: a for a in store.records(Artifact)})


# --- check's prediction against what the replay then did, one line per cause ------------------

# cause, fake captured environment, environment of check and replay, edit the job, lengths, what both must name
PREDICTIONS = [
    ("torch build", {"torch.git_version": "0123abc"}, {}, False, "8", "torch.git_version: captured 0123abc"),
    (
        "CPU flags",
        {"cpu.flags": "x86_64,avx512,amx_tile"},
        {},
        False,
        "8",
        "cpu.flags: captured x86_64,avx512,amx_tile",
    ),
    (
        "config",
        {},
        {"TORCHINDUCTOR_INPLACE_PADDING": "0"},
        False,
        "8",
        "config.inductor.inplace_padding: captured True, now False",
    ),
    ("source edit", {}, {}, True, "8", "changed since capture"),
    ("new shape", {}, {}, False, "16", "[1, 8]"),
]


@pytest.mark.parametrize("cause, captured_env, env, edit, lengths, named", PREDICTIONS, ids=[p[0] for p in PREDICTIONS])
def test_check_predicts_what_replay_does(
    captured: dict[str, Path],
    tmp_path: Path,
    cause: str,
    captured_env: dict,
    env: dict,
    edit: bool,
    lengths: str,
    named: str,
) -> None:
    job = captured["job"]
    store = tmp_path / "job.dynrep"
    copy_store(captured["8"], store, captured_env)
    source = job.read_text()
    if edit:
        job.write_text(source.replace("* 2.0", "* 3.0"))
    try:  # the prediction and the replay side by side, on the same host
        predicting = start_check(
            str(store), str(job), str(store), str(tmp_path / "report.json"), "--lengths", lengths, **env
        )
        report = finish(start(str(store), tmp_path / "report.json", lengths, job=job, **env))
        code, said = check_said(predicting)
    finally:
        job.write_text(source)
    if cause == "new shape":  # used; the frame replays only for the inputs it was saved for, and compiles
        assert code == 3 or code == 0 and said["outcome"] == "replay"
        (plan,) = [p for p in said["frames"] if p["frame"].startswith("forward")]
        assert any(named in entry for entry in plan["inputs"]) and not any("[1, 16]" in e for e in plan["inputs"])
        assert report["loaded"] and [c for c in report["compiled"] if c.startswith("forward")]
        assert any("[1, 16]" in note or "--lengths" in note for note in said["notes"])
        return
    assert code == 4 and said["outcome"] == "refused"
    assert any(named in difference for difference in said["differences"]), said["differences"]
    assert not report["loaded"] and any(named in difference for difference in report["differences"])
    if edit:
        assert [p["outcome"] for p in said["frames"] if p["frame"].startswith("forward")] == ["compiles"]


def test_check_on_a_fleet_names_the_entry_this_host_takes_or_the_factor_that_differs(
    captured: dict[str, Path], tmp_path: Path, server: int
) -> None:
    from dynamo_replay.fleet.entries import FleetEntries
    from dynamo_replay.fleet.session import comparable_environment, environment_digest, upload_store
    from dynamo_replay.fleet.url import parse_fleet_url

    url = f"redis://127.0.0.1:{server}/0?name=serve&wait=0"
    elsewhere = tmp_path / "elsewhere.dynrep"
    copy_store(captured["8"], elsewhere, {"torch.git_version": "0123abc"})
    entries = FleetEntries(parse_fleet_url(url))
    with Store.open(str(elsewhere)) as store:
        raw = next(store.get_blob(a.blob_key) for a in store.records(Artifact) if a.name == schema.REPLAY_DATA_NAME)
    other = environment_digest(comparable_environment(json.loads(raw)["environment"]))
    upload_store(entries, other, elsewhere)
    code, said = check(url, inductor=tmp_path / "inductor")
    assert code == 4 and said["fleet"]["entry"] is None
    assert any("torch.git_version" in line for entry in said["fleet"]["entries"] for line in entry["differences"])
    report = serve(url, tmp_path / "first", "8")  # what the prediction says: no entry, this host captures
    assert not report.get("loaded")
    code, said = check(url, inductor=tmp_path / "inductor")
    assert code in (0, 3) and said["fleet"]["entry"] is not None and said["outcome"] != "refused"
    assert serve(url, tmp_path / "second", "8")["loaded"]


# --- updates ---------------------------------------------------------------------------------


def test_an_update_killed_at_any_point_leaves_the_old_store_whole(captured: dict[str, Path], tmp_path: Path) -> None:
    store = tmp_path / "job.dynrep"
    copy_store(captured["8"], store)
    old = store.read_bytes()

    def updater() -> int:
        pid = os.fork()
        if pid == 0:  # the updater, in a process of its own
            try:
                with store_lock(str(store)):
                    merge_update(str(store), str(captured["16"]), None, Limits(), {})
            finally:
                os._exit(0)
        return pid

    start_time = time.perf_counter()
    os.waitpid(updater(), 0)
    duration = time.perf_counter() - start_time
    assert generations_of(store) == [0, 1]
    rng = random.Random(0)
    outcomes = set()
    for attempt in range(40):  # killed at a random point of its run, until kills fell on both sides
        if attempt >= 12 and len(outcomes) == 2:
            break
        store.write_bytes(old)
        pid = updater()
        time.sleep(rng.uniform(0, duration * 1.5))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        with Store.open(str(store)) as reopened:  # a reader sees the old store or the whole new one
            assert reopened.info().state == "finished"
        unchanged = store.read_bytes() == old
        assert unchanged or generations_of(store) == [0, 1]
        outcomes.add(unchanged)
    # The lock died with its holder, and the next updates go through and clear what it left.
    for delta in ([captured["16"]] if generations_of(store) == [0] else []) + [captured["24"]]:
        with store_lock(str(store), wait=5):
            merge_update(str(store), str(delta), None, Limits(), {})
    from dynamo_replay.update.files import remove_leftovers

    remove_leftovers(str(store))
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name or ".update-" in p.name]
    report = serve(str(store), tmp_path / "after", "8,16,24", job=captured["job"])
    assert report["loaded"] and report["compiled"] == [], report["compiled"]
    assert outcomes == {True, False}, "the kills should fall both before and after the store was replaced"


def test_two_concurrent_updates_lose_nothing(captured: dict[str, Path], tmp_path: Path) -> None:
    store = tmp_path / "job.dynrep"
    copy_store(captured["8"], store)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    both = [
        start(str(store), tmp_path / "a" / "report.json", "8,16", "--update", job=captured["job"]),
        start(str(store), tmp_path / "b" / "report.json", "8,24", "--update", job=captured["job"]),
    ]
    reports = [finish(process) for process in both]
    assert all(r["updated"].startswith("generation") for r in reports), [r["updated"] for r in reports]
    assert generations_of(store) == [0, 1, 2]
    report = serve(str(store), tmp_path / "after", "8,16,24", job=captured["job"])
    assert report["compiled"] == [] and report["generations"] == 3


def test_eviction_drops_the_generation_unused_the_longest(captured: dict[str, Path], tmp_path: Path) -> None:
    store = tmp_path / "job.dynrep"
    copy_store(captured["8"], store)
    with store_lock(str(store)):
        merge_update(str(store), str(captured["16"]), None, Limits(), {})
    usage = {"generations": {"0": {"last_used": 100.0}, "1": {"last_used": 50.0}}}
    with store_lock(str(store)):
        done = merge_update(str(store), str(captured["24"]), None, Limits(max_generations=2), usage)
    assert "evicted" in done and generations_of(store) == [0, 2]
    report = serve(str(store), tmp_path / "after", "8,24", job=captured["job"])
    assert report["compiled"] == []
    with Store.open(str(store)) as reopened:
        names = [a.name for a in reopened.records(Artifact)]
    assert not [name for name in names if name.startswith("generation/1/")]


# --- the fleet --------------------------------------------------------------------------------


def test_fleet_update_publishes_a_new_generation_and_gc_keeps_the_recently_used(
    captured: dict[str, Path], tmp_path: Path, server: int
) -> None:
    url = f"redis://127.0.0.1:{server}/0?name=serve&wait=0"
    cache = {"DYNAMO_REPLAY_CACHE": str(tmp_path / "cache")}
    serve(url, tmp_path / "first", "8", **cache)  # captures the entry
    report = serve(url, tmp_path / "second", "8,16", "--update", **cache)
    assert report["loaded"] and "published as entry" in report["updated"], report["updated"]
    report = serve(url, tmp_path / "third", "8,16", **cache)
    assert report["loaded"] and report["compiled"] == []
    listing = subprocess.run(
        [sys.executable, "-m", "dynamo_replay", "fleet", "ls", url],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_environment(tmp_path / "inductor"),
    )
    assert listing.returncode == 0, listing.stderr
    (row,) = [line.split() for line in listing.stdout.splitlines()[1:] if line.split()[0] != "total:"]
    header = listing.stdout.splitlines()[0].split()
    assert row[header.index("GEN")] == "2" and int(row[header.index("HITS")]) > 0
    assert row[header.index("STARTS")] == "1"  # the third start replayed it; the second replayed the one before

    # A second job's entries, one never used: gc keeps the one replayed last within the byte limit.
    from dynamo_replay.fleet.entries import FleetEntries
    from dynamo_replay.fleet.session import upload_store
    from dynamo_replay.fleet.url import parse_fleet_url

    other = FleetEntries(parse_fleet_url(f"redis://127.0.0.1:{server}/0?name=other"))
    ids = [upload_store(other, "digest", captured[n]) for n in ("8", "16", "24")]
    other.record_use("digest", ids[0], 5)
    limit = max(m["size"] for m in other.manifests("digest"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dynamo_replay",
            "fleet",
            "gc",
            f"redis://127.0.0.1:{server}/0?name=other",
            "--max-bytes",
            str(limit),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_environment(tmp_path / "inductor"),
    )
    assert done.returncode == 0, done.stderr
    assert [m["id"] for m in other.manifests("digest")] == [ids[0]]
    assert len(FleetEntries(parse_fleet_url(url)).manifests(FleetEntries(parse_fleet_url(url)).digests()[0])) == 1


# --- the serving job --------------------------------------------------------------------------


def test_a_serving_job_with_update_compiles_each_new_length_once_across_restarts(tmp_path: Path) -> None:
    store = str(tmp_path / "gpt2.dynrep")
    first = serve(store, tmp_path / "1", "8", "--model", "gpt2", "--update")
    assert "captured" in first["updated"] and not first["loaded"]
    seen = []
    for restart, lengths in enumerate(("8,16", "8,16,24"), start=2):
        report = serve(store, tmp_path / str(restart), lengths, "--model", "gpt2", "--update")
        assert report["loaded"], report.get("refused")
        seen.append(len(report["compiled"]))
        assert report["updated"].startswith(f"generation {restart - 1} added"), report["updated"]
    assert seen == [1, 1], "each restart compiles its one new length, and none it met before"
