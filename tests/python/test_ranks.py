"""Jobs of many ranks, in one process: which rank a process is, which store it reads, and the
agreement by which every rank uses its store or none does (dynamo_replay/ranks.py). The
ranks of the agreement are threads sharing one c10d store, as a job's ranks share theirs;
test_torchrun.py runs the same under torchrun."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dynamo_replay import ranks

# One line per way a launcher says where a process stands: (environment, rank, world size).
LAUNCHERS = [
    ({"RANK": "1", "WORLD_SIZE": "4", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}, 1, 4),  # torchrun
    ({"RANK": "0", "WORLD_SIZE": "2", "TORCHELASTIC_RUN_ID": "job-7"}, 0, 2),
    ({"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "8"}, 3, 8),  # mpirun (Open MPI)
    ({"PMI_RANK": "2", "PMI_SIZE": "3"}, 2, 3),  # MPICH, Intel MPI
    ({"RANK": "0", "WORLD_SIZE": "1"}, None, None),  # one rank: a job by itself
    ({"RANK": "x", "WORLD_SIZE": "2"}, None, None),  # unreadable: not a rank
    ({"RANK": "2", "WORLD_SIZE": "2"}, None, None),  # outside the world
    ({"LOCAL_RANK": "1"}, None, None),  # a local rank alone says nothing of the job
    ({}, None, None),
]


@pytest.mark.parametrize("environ,rank,world", LAUNCHERS, ids=[str(i) for i in range(len(LAUNCHERS))])
def test_job_rank_from_the_launchers_variables(environ: dict[str, str], rank: int | None, world: int | None) -> None:
    found = ranks.job_rank(environ)
    assert (found.rank if found else None, found.world_size if found else None) == (rank, world)


def test_two_launches_have_different_names_and_ranks_of_one_launch_the_same() -> None:
    rank0 = ranks.job_rank({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"})
    rank1 = ranks.job_rank({"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "1"})
    other = ranks.job_rank({"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "h", "MASTER_PORT": "2"})
    assert rank0 and rank1 and other
    assert rank0.job == rank1.job != other.job
    assert rank0.writes_store and not rank1.writes_store


class _SharedStore(ranks.Agreement):
    """An agreement whose c10d store is the test's, with the same key prefix on every rank."""

    def __init__(self, rank: int, world: int, store: object) -> None:
        super().__init__(ranks.JobRank(rank, world, "test"))
        self._prefix, self._shared = "dynamo-replay/agreement/test", store

    def _store(self) -> object:
        return self._shared


def _agree(votes: list[str | None], wait: str = "30") -> list[str | None]:
    """Each rank's decision: "use" ranks call use() on a thread of their own, a reason refuses,
    None never answers."""
    import torch.distributed as dist

    store = dist.HashStore()
    agreements = [_SharedStore(rank, len(votes), store) for rank in range(len(votes))]
    decisions: list[str | None] = [None] * len(votes)

    def run(rank: int, vote: str | None) -> None:
        if vote == "use":
            decisions[rank] = agreements[rank].use()
        elif vote is not None:
            agreements[rank].refuse(vote)
            decisions[rank] = agreements[rank].decision

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(ranks.AGREEMENT_WAIT_ENV, wait)
        threads = [threading.Thread(target=run, args=(rank, vote)) for rank, vote in enumerate(votes)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads), "a rank is still waiting"
    return decisions


# One line per way the ranks can vote: (votes by rank, every answering rank's decision).
AGREEMENTS = [
    (["use", "use"], "use"),
    (["use", "use", "use", "use"], "use"),
    (["use", "store refused: torch build differs"], "rank 1: store refused: torch build differs"),
    (["signature does not verify", "use", "use"], "rank 0: signature does not verify"),
    (["use", "use", "no store"], "rank 2: no store"),
]


@pytest.mark.parametrize("votes,decision", AGREEMENTS, ids=[str(i) for i in range(len(AGREEMENTS))])
def test_every_rank_decides_the_same(votes: list[str], decision: str) -> None:
    assert _agree(votes) == [decision] * len(votes)


def test_a_rank_that_never_answers_makes_every_rank_compile_after_the_wait() -> None:
    decisions = _agree(["use", None], wait="0.5")
    assert decisions == ["rank 1 gave no answer within 0.5 s", None]


def test_a_rank_arriving_after_the_decision_takes_it() -> None:
    import torch.distributed as dist

    store = dist.HashStore()
    first = _SharedStore(0, 2, store)
    assert first.refuse("its store was not found")
    late = _SharedStore(1, 2, store)
    assert late.use() == "rank 0: its store was not found"


def test_before_the_process_group_exists_each_rank_decides_alone() -> None:
    alone = _SharedStore(0, 2, None)
    assert alone.use() == "use"
    assert alone.refuse("anything") is False  # tried again at the next compile


def _store_with_keys(path: Path, keys: list[str], frames: list[str], *updates: tuple[list[str], list[str]]) -> None:
    """A store whose generation 0 holds these PyTorch cache keys and frames, and each update
    (keys, frames) a later generation, laid out as dynamo_replay.update writes them."""
    from dynamo_replay import Artifact, Store, generations, schema
    from dynamo_replay.replay_data import ReplayData

    with Store.create(str(path), overwrite=True) as store:
        for generation, (its_keys, its_frames) in enumerate([(keys, frames), *updates]):
            data = ReplayData(frames=its_frames, cache_keys=its_keys).to_json()
            for name, media_type, payload in (
                (schema.REPLAY_DATA_NAME, schema.REPLAY_DATA_MEDIA_TYPE, data),
                (schema.MEGA_CACHE_NAME, "application/octet-stream", b"cache artifacts"),
            ):
                store.put(
                    Artifact(
                        name=generations.artifact_name(generation, name),
                        media_type=media_type,
                        blob_key=store.put_blob(payload),
                        size=len(payload),
                    )
                )


# One line per side store against rank 0's: (side keys, side frames, rank 0 keys, rank 0 frames,
# rank 0's later generations (keys, frames) written by replay --update, kept).
SIDE_STORES = [
    (["inductor:a"], ["f (x.py:1)"], ["inductor:a", "inductor:b"], ["f (x.py:1)"], [], False),  # the same compile
    (["inductor:c"], ["f (x.py:1)"], ["inductor:a"], ["f (x.py:1)"], [], True),  # another graph
    (["inductor:a"], ["g (x.py:9)"], ["inductor:a"], ["f (x.py:1)"], [], True),  # another frame
    # rank 0's update added the side store's compile: generation 1 covers it
    (["inductor:b"], ["g (x.py:9)"], ["inductor:a"], ["f (x.py:1)"], [(["inductor:b"], ["g (x.py:9)"])], False),
    # covered by generations 1 and 2 together
    (
        ["inductor:b", "inductor:c"],
        ["f (x.py:1)", "g (x.py:9)"],
        ["inductor:a"],
        ["f (x.py:1)"],
        [(["inductor:b"], ["g (x.py:9)"]), (["inductor:c"], [])],
        False,
    ),
    # rank 0's update added another graph: the side store still holds what rank 0's lacks
    (["inductor:c"], ["g (x.py:9)"], ["inductor:a"], ["f (x.py:1)"], [(["inductor:b"], ["g (x.py:9)"])], True),
]


@pytest.mark.parametrize(
    "side_keys,side_frames,keys,frames,updates,kept",
    SIDE_STORES,
    ids=["same", "graph differs", "frame differs", "an update covers it", "two updates cover it", "update differs"],
)
def test_a_side_store_is_kept_only_while_it_holds_what_rank_0s_lacks(
    tmp_path: Path,
    side_keys: list[str],
    side_frames: list[str],
    keys: list[str],
    frames: list[str],
    updates: list[tuple[list[str], list[str]]],
    kept: bool,
) -> None:
    main = tmp_path / "job.dynrep"
    _store_with_keys(main, keys, frames, *updates)
    _store_with_keys(Path(ranks.side_store(str(main), 1)), side_keys, side_frames)
    path, note = ranks.store_for_rank(str(main), ranks.JobRank(1, 2, "test"))
    assert (path == ranks.side_store(str(main), 1)) is kept
    assert Path(ranks.side_store(str(main), 1)).exists() is kept
    assert (note is not None) is kept
    assert ranks.store_for_rank(str(main), ranks.JobRank(0, 2, "test")) == (str(main), None)


# One line per process that imports torch: (its command line, whether DYNAMO_REPLAY acts in it).
PROCESSES = [
    (["python", "/venv/bin/torchrun", "--nproc-per-node", "2", "train.py"], False),  # torchrun's agent
    (["python", "-m", "torch.distributed.run", "--nproc-per-node", "2", "train.py"], False),
    (["python", "-u", "-m", "torch.distributed.launch", "train.py"], False),
    (["python", "/venv/lib/python3.11/site-packages/torch/_inductor/compile_worker/__main__.py", "--pickler=x"], False),
    (["python", "-X", "importtime", "/venv/bin/torchrun", "train.py"], False),
    (["python", "-u", "/job/train.py", "--nproc-per-node", "2"], True),  # a rank
    (["python", "-m", "dynamo_replay", "replay", "job.dynrep", "train.py"], True),
    (["python", "-m", "torch.utils.collect_env"], True),
    (["python", "-c", "import torch"], True),
    (["python"], True),
]


@pytest.mark.parametrize("command,acts", PROCESSES, ids=[str(i) for i in range(len(PROCESSES))])
def test_dynamo_replay_acts_in_the_jobs_processes_only(command: list[str], acts: bool) -> None:
    from dynamo_replay._autoload import is_pytorch_helper

    assert is_pytorch_helper(command) is not acts


# One line per capture --world-size that cannot run: (id, N, extra environment, what the error
# says). Nothing runs: the job is not started, and no store is written.
ONE_CAPTURE_REFUSED = [
    ("under a launcher", "2", {"WORLD_SIZE": "2", "RANK": "0"}, "this process is already a rank of a launched job"),
    ("no ranks", "0", {}, "N must be 1 or more"),
]


@pytest.mark.parametrize(
    "n,environ,error", [c[1:] for c in ONE_CAPTURE_REFUSED], ids=[c[0] for c in ONE_CAPTURE_REFUSED]
)
def test_capture_for_every_rank_refuses_what_it_cannot_be(
    tmp_path: Path, n: str, environ: dict[str, str], error: str
) -> None:
    job = tmp_path / "job.py"
    job.write_text("open(__file__ + '.ran', 'w').close()\n")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    command = [sys.executable, "-m", "dynamo_replay", "capture", "--world-size", n, "-o", str(tmp_path / "s.dynrep")]
    done = subprocess.run([*command, str(job)], capture_output=True, text=True, env={**env, **environ}, timeout=60)
    assert done.returncode == 2
    assert f"error: capture --world-size {n}: {error}" in done.stderr
    assert not (tmp_path / "job.py.ran").exists() and not (tmp_path / "s.dynrep").exists()


# One line per compiled function of jobs/ranks/rank_reads.py (rank 0 of a fake process group of
# 2): (its name, whether its trace reads the process's rank, whether it reads the world size,
# whether a replay at the same world size runs it from the store). Dynamo puts either number
# into the graph with no guard. A frame holding the rank is not saved: each rank compiles it,
# and capture says so. One holding the world size is saved; a job of another world size
# compiles it, saying why. A rank passed in as an argument is guarded like any int: saved, and
# replayed. A device mesh read in a compiled function is guarded by a function PyTorch does not
# save (an opaque object's guard): that frame compiles, named.
RANK_READS = [
    ("get_rank", True, False, False),
    ("get_rank_of_group", True, False, False),
    ("group_rank", True, False, False),
    ("mesh_local_rank", True, False, False),
    ("mesh_rank", True, False, False),
    ("mesh_coordinate", True, False, False),
    ("world_size", False, True, True),
    ("mesh_size", False, True, False),
    ("rank_argument", False, False, True),
    ("no_rank", False, False, True),
]


@pytest.fixture(scope="module")
def rank_reads(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, dict]]:
    """The job captured at world size 2, then replayed in a fresh process at world size 2 and,
    its process group made again, at 4: each run's stderr and results, by name."""
    sys.path.insert(0, str(Path(__file__).parent))
    from job_environment import job_environment

    folder = tmp_path_factory.mktemp("rank-reads")
    job = Path(__file__).parent / "jobs" / "ranks" / "rank_reads.py"
    runs = {}
    for name, tool, worlds in (("capture", ("capture", "-o"), ["2"]), ("replay", ("replay",), ["2", "4"])):
        env = job_environment(f"{folder}/{name}-inductor", DYNAMO_REPLAY_CACHE=f"{folder}/{name}-cache")
        out = folder / f"{name}.json"
        command = [sys.executable, "-m", "dynamo_replay", *tool, str(folder / "s.dynrep"), str(job), str(out), *worlds]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
        assert done.returncode == 0, done.stderr[-4000:]
        runs[name] = (done.stderr, json.loads(out.read_text()))
    return runs


@pytest.mark.parametrize("function,reads_rank,reads_world,replays", RANK_READS, ids=[c[0] for c in RANK_READS])
def test_a_graph_holding_the_rank_or_world_size_never_runs_where_it_differs(
    rank_reads: dict[str, tuple[str, dict]], function: str, reads_rank: bool, reads_world: bool, replays: bool
) -> None:
    (captured, ran), (replayed, ran_again) = rank_reads["capture"], rank_reads["replay"]
    at_capture, found, in_4 = ran["2"], ran_again["2"], ran_again["4"]
    assert found["outputs"][function] == at_capture["outputs"][function]
    said = f"compiles at replay: {function} ("
    assert (said in captured) is reads_rank, captured[-3000:]
    assert (function in found["traced"]) is not replays, replayed[-3000:]
    if reads_rank:
        line = next(line for line in captured.splitlines() if said in line)
        assert "its graph holds this process's rank, read as Dynamo traced it" in line
        assert "so each rank compiles this frame" in line
    if not replays:
        assert f"{function} (" in replayed
    # In a world of 4 ranks (rank 0 still), every answer is right: x * 4 where the world size is read.
    expected = [[4.0 * v for v in range(4)]] * 2 if reads_world else at_capture["outputs"][function]
    assert in_4["outputs"][function] == expected
    if reads_world and replays:  # the saved entry, in force since world size 2, refuses the call
        assert function in in_4["traced"], replayed[-3000:]
        reason = "its graph holds the world size 2, read as Dynamo traced it (no guard checks it); this job's world size is 4"
        assert any(line.strip().startswith(f"{function} (") and reason in line for line in replayed.splitlines()), (
            replayed[-3000:]
        )


def test_a_refusal_reaches_the_other_ranks_with_its_first_factor() -> None:
    from dynamo_replay.replay.checks import Refused
    from dynamo_replay.replay.session import _in_one_line

    differences = ["torch.version: captured 2.15.0, now 2.14.1", "python: captured 3.11.7, now 3.11.9"]
    said = _in_one_line(Refused("this process differs from the one captured", differences))
    assert said == "this process differs from the one captured: torch.version: captured 2.15.0, now 2.14.1 (and 1 more)"
    assert _in_one_line(Refused("a signing key is set but the store is not signed")) == (
        "a signing key is set but the store is not signed"
    )
