"""Jobs of many ranks as they run: real torchrun launches of 2 ranks on loopback (gloo, CPU),
each rank a fresh process running jobs/ranks/train_step.py (GPT-2 under DDP or FSDP2, or a
3 MB MLP under DDP or FSDP2). Every launch has a timeout (300 s) below any wait it could hit
(the fleet's is 600 s; the job's process group times out after 60 s, its rank agreement after
120 s): a hang fails the test. A rank still running after 200 s prints its threads' stacks and
exits (train_step.py), so the failure says where it hung.
About 15 minutes on a 2-core machine."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

sys.path.insert(0, str(Path(__file__).parent))
from job_environment import job_environment  # noqa: E402
from redis_server import free_port, start_redis  # noqa: E402
from shared_captures import copy_of, shared  # noqa: E402

JOB = Path(__file__).parent / "jobs" / "ranks" / "train_step.py"
LAUNCH_TIMEOUT_S = 300


def torchrun(
    out: Path,
    *job_args: str,
    tool: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    ranks: int = 2,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """One launch: `torchrun [-m dynamo_replay TOOL...] train_step.py OUT ARGS`, in an
    environment without the caller's dynamo-replay settings and with an Inductor cache of its own."""
    environment = job_environment(f"{out}-inductor", DYNAMO_REPLAY_CACHE=f"{out}-cache", **(env or {}))
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(ranks),
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        *(["-m", "dynamo_replay", *tool] if tool else []),
        str(JOB),
        str(out),
        *job_args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=LAUNCH_TIMEOUT_S)
    if check:
        assert done.returncode == 0, done.stderr[-4000:]
    return done


def results(out: Path, ranks: int = 2) -> list[dict]:
    found = [json.loads((out / f"rank-{rank}.json").read_text()) for rank in range(ranks)]
    assert [r["rank"] for r in found] == list(range(ranks))
    return found


def captured_by_two_ranks(
    name: str, args: tuple[str, ...], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[dict]]:
    """A capture by torchrun's 2 ranks, made once a build (shared_captures), and copied: a rank
    that compiles at replay writes a store of its own beside the one it read."""

    def capture(folder: Path) -> None:
        torchrun(folder / "capture", *args, tool=("capture", "-o", str(folder / "job.dynrep")))
        for scratch in ("capture-inductor", "capture-cache"):
            shutil.rmtree(folder / scratch, ignore_errors=True)

    folder = copy_of(shared(f"torchrun-{name}", capture, inputs=[__file__]), tmp_path_factory.mktemp(name))
    return folder / "job.dynrep", results(folder / "capture")


def numbers(found: list[dict]) -> list[tuple]:
    """What must be bitwise equal: each rank's losses (hex floats) and final parameters."""
    return [(r["losses"], r["parameters"]) for r in found]


# One line per model and wrapper: (id, train_step arguments, frames every rank replays (None:
# every frame: no rank traces any). That capture changes no number is shown once, with the MLP
# (test_every_rank_replays_the_one_store's launch without dynamo-replay).
MODELS = [
    ("gpt2-ddp", ("--model", "gpt2", "--wrap", "ddp"), None),
    ("gpt2-fsdp", ("--model", "gpt2", "--wrap", "fsdp"), None),
]


@pytest.mark.parametrize("args,replayed", [m[1:] for m in MODELS], ids=[m[0] for m in MODELS])
def test_capture_command_then_every_rank_replays(
    tmp_path: Path, args: tuple[str, ...], replayed: set[str] | None
) -> None:
    store = tmp_path / "job.dynrep"
    torchrun(tmp_path / "capture", *args, tool=("capture", "-o", str(store)))
    plain = results(tmp_path / "capture")
    assert numbers(plain)[0] == numbers(plain)[1]
    assert store.exists()

    done = torchrun(tmp_path / "replay", *args, tool=("replay", str(store)))
    replay = results(tmp_path / "replay")
    assert numbers(replay) == numbers(plain)
    assert replay[0]["traced"] == replay[1]["traced"], "the ranks compiled different frames"
    if replayed is None:
        assert replay[0]["traced"] == [], done.stderr[-3000:]
    else:
        assert not replayed & set(replay[0]["traced"]), done.stderr[-3000:]
    assert not list(tmp_path.glob("job.dynrep.rank-*")), "rank 1's compile is rank 0's: no store of its own"
    assert done.stderr.count("dynamo-replay: ") >= 2  # each rank's summary


@pytest.fixture(scope="module")
def mlp_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """An MLP under DDP, its optimizer's step compiled too, captured by torchrun's 2 ranks, and
    what the capture computed."""
    return captured_by_two_ranks("mlp", MLP, tmp_path_factory)


# The MLP job of the tests below: its optimizer's step is compiled too, and replays on every rank.
MLP = ("--model", "mlp", "--compile-optimizer")

# One line per way to turn replay on for a job of many ranks: (id, how); and a launch without
# dynamo-replay, which compiles every frame and computes the captured numbers (capture changes
# no number of the job).
ENTRY_POINTS = [("command", "tool"), ("DYNAMO_REPLAY", "env"), ("without dynamo-replay", "none")]


@pytest.mark.parametrize("how", [e[1] for e in ENTRY_POINTS], ids=[e[0] for e in ENTRY_POINTS])
def test_every_rank_replays_the_one_store(mlp_store: tuple[Path, list[dict]], tmp_path: Path, how: str) -> None:
    store, captured = mlp_store
    if how == "tool":
        torchrun(tmp_path / "out", *MLP, tool=("replay", str(store)))
    elif how == "env":
        torchrun(tmp_path / "out", *MLP, env={"DYNAMO_REPLAY": str(store)})
    else:
        torchrun(tmp_path / "out", *MLP)
    found = results(tmp_path / "out")
    assert numbers(found) == numbers(captured)
    if how == "none":
        assert all(r["traced"] for r in found), "a plain launch compiles"
        return
    # Every frame replays on each rank: the one DDPOptimizer splits, the optimizer's step, the rest.
    assert [r["traced"] for r in found] == [[], []]


# One line per change to how DDP splits the graph the store holds (captured with 1 MB buckets on
# 2 ranks): (id, train_step arguments, ranks, the frames every rank compiles, what the summary
# says). Each is a real difference: the split frame compiles on every rank, with the numbers of
# a plain compile. (Another world size: SHARDING_CHANGES' world-size row, for FSDP2.)
SPLIT_CHANGES = [
    (
        "bucket-cap",
        ("--bucket-cap-mb", "2"),
        2,
        ["forward"],
        "its saved graph is split for DDP's bucket cap of 1048576 bytes and world size 2; here DDP's "
        "bucket cap is 2097152 bytes and its world size 2",
    ),
]


@pytest.mark.parametrize(
    "args,ranks,compiled,reason", [c[1:] for c in SPLIT_CHANGES], ids=[c[0] for c in SPLIT_CHANGES]
)
def test_a_changed_split_compiles_the_split_frame(
    mlp_store: tuple[Path, list[dict]],
    tmp_path: Path,
    args: tuple[str, ...],
    ranks: int,
    compiled: list[str],
    reason: str,
) -> None:
    store, _ = mlp_store
    torchrun(tmp_path / "plain", *MLP, *args, ranks=ranks)
    done = torchrun(tmp_path / "out", *MLP, *args, ranks=ranks, env={"DYNAMO_REPLAY": str(store)})
    found = results(tmp_path / "out", ranks)
    assert numbers(found) == numbers(results(tmp_path / "plain", ranks))
    assert [r["traced"] for r in found] == [compiled] * ranks, done.stderr[-3000:]
    assert reason in done.stderr


@pytest.fixture(scope="module")
def fsdp_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    """The MLP under FSDP2 (fully_shard on its layers and on the model), captured by 2 ranks,
    and what the capture computed."""
    return captured_by_two_ranks("fsdp", FSDP_MLP, tmp_path_factory)


FSDP_MLP = ("--model", "mlp", "--wrap", "fsdp")

# One line per change to the sharding the store was captured with (FSDP2's defaults, 2 ranks):
# (id, train_step arguments, ranks, the part of FSDP's state the summary names as changed). Each
# is a real difference: the frames whose guards check FSDP's hooks compile, with the numbers of
# a plain compile. (GPT-2 under FSDP2 unchanged replays every frame: test_capture_command_...)
SHARDING_CHANGES = [
    ("reshard-after-forward", ("--no-reshard-after-forward",), 2, "reshard after forward False"),
    ("world-size", (), 1, "group 0: mesh FSDPMeshInfo(cpu (1,) shard_mesh_size=1)"),
]


@pytest.mark.parametrize("args,ranks,changed", [c[1:] for c in SHARDING_CHANGES], ids=[c[0] for c in SHARDING_CHANGES])
def test_a_changed_sharding_compiles_the_frames_that_check_it(
    fsdp_store: tuple[Path, list[dict]], tmp_path: Path, args: tuple[str, ...], ranks: int, changed: str
) -> None:
    torchrun(tmp_path / "plain", *FSDP_MLP, *args, ranks=ranks)
    done = torchrun(tmp_path / "out", *FSDP_MLP, *args, ranks=ranks, env={"DYNAMO_REPLAY": str(fsdp_store[0])})
    found = results(tmp_path / "out", ranks)
    assert numbers(found) == numbers(results(tmp_path / "plain", ranks))
    assert all("step" in r["traced"] for r in found), done.stderr[-3000:]
    assert f"is ...; {changed}" in done.stderr, done.stderr[-3000:]


# One line per wrapper: (id, train_step arguments, the fixture whose 2 real ranks computed the
# reference numbers). One process captures for both ranks (capture --world-size 2: PyTorch's fake
# process group, collectives doing nothing), and a real 2-rank launch replays its store.
ONE_CAPTURE = [("ddp", MLP, "mlp_store"), ("fsdp", FSDP_MLP, "fsdp_store")]


@pytest.mark.parametrize("args,reference", [c[1:] for c in ONE_CAPTURE], ids=[c[0] for c in ONE_CAPTURE])
def test_one_process_captures_for_every_rank(
    request: pytest.FixtureRequest, tmp_path: Path, args: tuple[str, ...], reference: str
) -> None:
    _, by_real_ranks = request.getfixturevalue(reference)
    store = tmp_path / "one.dynrep"
    command = [sys.executable, "-m", "dynamo_replay", "capture", "--world-size", "2", "-o", str(store)]
    captured = subprocess.run(
        [*command, str(JOB), str(tmp_path / "capture"), *args],
        capture_output=True,
        text=True,
        env=job_environment(f"{tmp_path}/capture-inductor", DYNAMO_REPLAY_CACHE=f"{tmp_path}/capture-cache"),
        timeout=LAUNCH_TIMEOUT_S,
    )
    assert captured.returncode == 0, captured.stderr[-4000:]
    assert results(tmp_path / "capture", ranks=1)[0]["world"] == 2
    done = torchrun(tmp_path / "replay", *args, env={"DYNAMO_REPLAY": str(store)})
    found = results(tmp_path / "replay")
    assert [r["traced"] for r in found] == [[], []], done.stderr[-3000:]
    assert numbers(found) == numbers(by_real_ranks)


def test_one_rank_refusing_makes_every_rank_compile(mlp_store: tuple[Path, list[dict]], tmp_path: Path) -> None:
    """Rank 1 alone has a signing key, so it alone refuses the unsigned store. Deciding alone,
    rank 0 would replay while rank 1 compiles: in step only if they agree."""
    store, captured = mlp_store
    done = torchrun(tmp_path / "out", *MLP, "--key-on-rank", "1", env={"DYNAMO_REPLAY": str(store)})
    found = results(tmp_path / "out")
    assert numbers(found) == numbers(captured)
    assert found[0]["traced"] == found[1]["traced"]
    assert "step" in found[0]["traced"], "rank 0 replayed while rank 1 compiled"
    assert "not used on any rank of the job: rank 1:" in done.stderr


def test_a_rank_whose_compile_differs_keeps_a_store_of_its_own(tmp_path: Path) -> None:
    store = tmp_path / "branch.dynrep"
    torchrun(tmp_path / "capture", "--model", "mlp", "--rank-branch", tool=("capture", "-o", str(store)))
    captured = results(tmp_path / "capture")
    assert captured[0]["losses"] != captured[1]["losses"]  # rank 1 scales its loss: another graph
    assert Path(f"{store}.rank-1").exists()
    done = torchrun(tmp_path / "replay", "--model", "mlp", "--rank-branch", tool=("replay", str(store)))
    found = results(tmp_path / "replay")
    assert numbers(found) == numbers(captured)
    assert [r["traced"] for r in found] == [[], []]
    assert f"rank 1 compiles differently from rank 0: its own store {store}.rank-1 is replayed" in done.stderr
    # and what differs, in one line, as replay-inspect diff says it of the two stores offline
    assert "; what differs (rank 0's, then rank 1's): " in done.stderr, done.stderr[-3000:]
    assert Path(f"{store}.rank-1").exists()


def test_fleet_two_jobs_at_once_then_every_rank_replays(tmp_path: Path) -> None:
    """Two 2-rank jobs start at once on an empty fleet: one rank 0 captures, no rank waits
    (a wait before init_process_group would hold the job's rendezvous past its 60 s timeout),
    the other job compiles or replays, and one entry of world size 2 is published; the next
    start replays on every rank."""
    port = free_port()
    server = start_redis(port, tmp_path, "--appendonly", "no")
    try:
        url = f"redis://127.0.0.1:{port}/0?name=ddp"
        env = {"DYNAMO_REPLAY": url}
        jobs = [_start(tmp_path / f"first-{i}", env) for i in range(2)]
        for job in jobs:
            _, stderr = job.communicate(timeout=LAUNCH_TIMEOUT_S)
            assert job.returncode == 0, stderr[-4000:]
        first = [results(Path(job.args[-3])) for job in jobs]
        assert numbers(first[0]) == numbers(first[1])
        listing = subprocess.run(
            [sys.executable, "-m", "dynamo_replay", "fleet", "ls", url], capture_output=True, text=True, timeout=60
        )
        assert "total: 1 entries of job ddp" in listing.stdout, listing.stdout + listing.stderr
        entry = next(
            line
            for line in listing.stdout.splitlines()
            if line[:1].isalnum() and "lease" not in line and "ENVIRONMENT" not in line and "total" not in line
        )
        assert entry.split()[3] == "2", entry  # the world size of the job that captured it

        torchrun(tmp_path / "second", "--model", "mlp", env=env)
        second = results(tmp_path / "second")
        assert numbers(second) == numbers(first[0])
        assert [r["traced"] for r in second] == [[], []]
    finally:
        server.kill()
        server.wait()


def _start(out: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    environment = job_environment(f"{out}-inductor", DYNAMO_REPLAY_CACHE=f"{out}-cache", **env)
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        "2",
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        str(JOB),
        str(out),
        "--model",
        "mlp",
    ]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment)
