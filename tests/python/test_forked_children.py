"""A job that forks while dynamo-replay is on (a pre-fork server, a DataLoader worker) keeps
working: the child runs the compiled code, compiles a function of its own, and leaves through the
end of the block and sys.exit (atexit handlers run in it too), and neither fails nor touches what
belongs to its parent (the store, the Inductor cache directory the parent's kernels load from,
the fleet lease and upload). One line per way to turn dynamo-replay on (jobs/forked_job.py).
About 60 s: fresh processes, two of them compile with Inductor."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import dynamo_replay as dr
import tiers

sys.path.insert(0, str(Path(__file__).parent))
from job_environment import job_environment  # noqa: E402
from redis_server import free_port, start_redis  # noqa: E402

JOB = Path(__file__).parent / "jobs" / "forked_job.py"

# (id, the interpreter's arguments, extra environment, what the parent did), run in this order:
# a replay line reads the store a capture line above it wrote. {work}/ID.dynrep is a line's own
# store, {url} a fleet URL on a fresh redis-server (its second line replays the first's entry).
CASES = [
    ("capture_block", ["{job}", "capture", "{work}/capture_block.dynrep"], {}, "stored"),
    (
        "capture_command",
        ["-m", "dynamo_replay", "capture", "-o", "{work}/capture_command.dynrep", "{job}", "none", "-"],
        {},
        "stored",
    ),
    ("replay_block", ["{job}", "replay", "{work}/capture_block.dynrep"], {}, "replayed"),
    ("DYNAMO_REPLAY", ["{job}", "none", "-"], {"DYNAMO_REPLAY": "{work}/capture_command.dynrep"}, "replayed"),
    ("fleet_capturing", ["{job}", "replay", "{url}"], {}, "captured"),
    ("fleet_replaying", ["{job}", "replay", "{url}"], {}, "replayed"),
]


# A line that reads what another line wrote runs after it.
NEEDS = {"replay_block": "capture_block", "DYNAMO_REPLAY": "capture_command", "fleet_replaying": "fleet_capturing"}


@pytest.fixture(scope="module")
def runs(request, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[subprocess.CompletedProcess, Path]]:
    wanted = set(tiers.selected(request, "name"))
    wanted |= {NEEDS[name] for name in wanted if name in NEEDS}
    work = tmp_path_factory.mktemp("forked")
    port = free_port()
    server = start_redis(port, work, "--appendonly", "no")
    fill = {"job": str(JOB), "work": str(work), "url": f"redis://127.0.0.1:{port}/0?name=forked"}
    done = {}
    try:
        for name, argv, extra, _ in CASES:
            if name not in wanted:
                continue
            out = work / name
            env = job_environment(f"{out}-inductor", DYNAMO_REPLAY_CACHE=str(work / "fleet-cache"))
            env.update({k: v.format(**fill) for k, v in extra.items()})
            # Inductor's compile pool kept: its workers are child processes the package must leave alone.
            env.pop("TORCHINDUCTOR_COMPILE_THREADS", None)
            args = [a.format(**fill) for a in argv] + [str(out)]
            done[name] = (
                subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600, env=env),
                out,
            )
    finally:
        server.kill()
        server.wait()
    return done


@pytest.mark.parametrize("name, did", [(c[0], c[3]) for c in CASES], ids=[c[0] for c in CASES])
def test_a_forked_child_neither_fails_nor_touches_its_parent_s_state(name: str, did: str, runs: dict) -> None:
    done, out = runs[name]
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["child"] == 0 and report["same"], report
    assert report["cache_kept"], "the child removed the Inductor cache directory its parent compiled into"
    if did == "replayed":
        assert report["traced"] == [], report
        summaries = [line for line in done.stderr.splitlines() if line.startswith("dynamo-replay: /")]
        assert len(summaries) == 1, done.stderr  # the parent's; the child prints none
    else:
        assert report["traced"] == ["scaled"], report
    if did == "stored":
        with dr.Store.open(out.parent / f"{name}.dynrep") as kept:
            assert kept.info().state == "finished"
            kernels = [a for a in kept.records(dr.Artifact) if a.name.endswith(".so")]
            assert kernels, "the store lost the kernel libraries the parent compiled"
