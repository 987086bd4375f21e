"""A job that forks while dynamo-replay is on (a pre-fork server, a DataLoader worker) keeps
working: the child runs the compiled code and leaves through the end of the block and sys.exit
(atexit handlers run in it too), and neither fails nor touches what belongs to its parent (the
store, the Inductor cache directory the parent's kernels load from, the fleet lease and upload).
One line per way to turn dynamo-replay on (jobs/forked_job.py). About 60 s: fresh processes, two
of them compile with Inductor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import dynamo_replay as dr

sys.path.insert(0, str(Path(__file__).parent))
from redis_server import free_port, start_redis  # noqa: E402

JOB = Path(__file__).parent / "jobs" / "forked_job.py"

# (id, the interpreter's arguments, what the parent must have done). {store} is the store this
# case writes, {captured} the one the first case wrote, {url} a fleet URL on a fresh redis-server.
CASES = [
    ("capture block", ["{job}", "capture", "{store}", "{out}"], "captured"),
    ("capture command", ["-m", "dynamo_replay", "capture", "-o", "{store}", "{job}", "none", "-", "{out}"], "captured"),
    ("replay block", ["{job}", "replay", "{captured}", "{out}"], "replayed"),
    ("DYNAMO_REPLAY", ["{job}", "none", "-", "{out}"], "replayed"),
    ("fleet, capturing", ["{job}", "replay", "{url}", "{out}"], "captured"),
    ("fleet, replaying", ["{job}", "replay", "{url}", "{out}"], "replayed"),
]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory):
    port = free_port()
    server = start_redis(port, tmp_path_factory.mktemp("redis"), "--appendonly", "no")
    yield f"redis://127.0.0.1:{port}/0?name=forked"
    server.kill()
    server.wait()


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("forked")


@pytest.mark.parametrize("name, argv, expect", CASES, ids=[c[0] for c in CASES])
def test_a_forked_child_neither_fails_nor_touches_its_parent_s_state(name: str, argv: list[str], expect: str,
                                                                      url: str, work: Path) -> None:
    slug = name.replace(" ", "_").replace(",", "")
    out, store, captured = work / slug, work / f"{slug}.dynrep", work / "capture_block.dynrep"
    fill = {"job": str(JOB), "store": str(store), "captured": str(captured), "url": url, "out": str(out)}
    args = [a.format(**fill) for a in argv]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DYNAMO_REPLAY", "TORCHINDUCTOR_"))}
    env.update(TORCHINDUCTOR_CACHE_DIR=str(work / f"{slug}-inductor"), DYNAMO_REPLAY_CACHE=str(work / "fleet-cache"))
    if name == "DYNAMO_REPLAY":
        env["DYNAMO_REPLAY"] = str(work / "capture_command.dynrep")
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["child"] == 0 and report["same"], report
    assert report["cache_kept"], "the child removed the Inductor cache directory its parent compiled into"
    if expect == "replayed":
        assert report["traced"] == [], report
        assert done.stderr.count("dynamo-replay: ") <= 1, done.stderr  # the summary is the parent's alone
    else:
        assert report["traced"] == ["scaled"], report
    if expect == "captured" and not name.startswith("fleet"):
        with dr.Store.open(store) as kept:
            assert kept.info().state == "finished"
            kernels = [a for a in kept.records(dr.Artifact) if a.name.endswith(".so")]
            assert kernels, "the store lost the kernel libraries the parent compiled"
