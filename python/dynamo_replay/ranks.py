"""Jobs of many ranks (torchrun, mpirun, torch.multiprocessing with init_process_group): which
rank this process is, which store file it writes and reads, and the agreement that makes every
rank of a job use its store, or none of them.

The rules (docs/usage.md, "Jobs of many ranks"; docs/fleet.md):
- Rank 0 writes the store. Rank K > 0 captures into STORE.rank-K, its own file, and keeps it
  only while it holds a compile rank 0's store lacks (PyTorch's own cache keys and the frames
  compiled): in an SPMD job every rank compiles the same, and the file is deleted when the
  capture ends, or by the first replay that finds it covered.
- At replay, rank K reads STORE.rank-K where it is kept, STORE otherwise.
- No rank waits for a peer before the job's own rendezvous. The ranks agree at the first
  call of a compiled function, on the job's own c10d store (Agreement): one rank's refusal
  makes every rank compile, so no rank enters a compile-time collective that the others skip.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

AGREEMENT_WAIT_ENV = "DYNAMO_REPLAY_RANK_WAIT"
_DEFAULT_AGREEMENT_WAIT_S = 120.0
_POLL_S = 0.02

# Launchers, by the variables they set for each process: (rank, world size).
_LAUNCHERS = (("RANK", "WORLD_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"))


@dataclass(frozen=True)
class JobRank:
    """This process's place in a job of `world_size` > 1 ranks. `job` names the launch (the
    same on every rank of it, different for two jobs running at once)."""

    rank: int
    world_size: int
    job: str

    @property
    def writes_store(self) -> bool:
        return self.rank == 0


def job_rank(environ: dict[str, str] | None = None) -> JobRank | None:
    """This process's rank, from its launcher's variables or else from an initialized default
    process group; None for a process that is a job by itself."""
    env = os.environ if environ is None else environ
    for rank_name, size_name in _LAUNCHERS:
        try:
            rank, size = int(env[rank_name]), int(env[size_name])
        except (KeyError, ValueError):
            continue
        return JobRank(rank, size, _job_name(env)) if size > 1 and 0 <= rank < size else None
    if environ is None:
        from dynamo_replay import _torch

        found = _torch.ranks.process_group_rank()
        if found is not None and found[1] > 1:
            return JobRank(found[0], found[1], _job_name(env))
    return None


def _job_name(env: Any) -> str:
    """torchrun's run id and rendezvous address: what every rank of one launch shares."""
    run = env.get("TORCHELASTIC_RUN_ID") or env.get("OMPI_MCA_orte_jobid") or ""
    where = f"{env.get('MASTER_ADDR', '')}:{env.get('MASTER_PORT', '')}"
    return f"{run}@{where}" if run or where != ":" else f"pid {os.getppid()}"


def side_store(path: str, rank: int) -> str:
    """Where rank `rank` (> 0) keeps a compile that differs from rank 0's."""
    return f"{path}.rank-{rank}"


def cache_keys(path: str) -> tuple[set[str], set[str]] | None:
    """(PyTorch's cache keys, frames compiled) of a finished store, or None when it cannot be
    read (missing, unfinished, locked by its writer, or from before the keys were recorded)."""
    from dynamo_replay import schema
    from dynamo_replay.store_view import StoreView

    try:  # every generation's keys: an update adds compiles rank 0's store then covers
        view = StoreView.open(path, only=(schema.REPLAY_DATA_NAME,))
        data = view.replay_data() if view.finished else None
    except Exception:  # any reason it cannot be read: nothing is decided from it
        return None
    if data is None or data.cache_keys is None:
        return None
    return set(data.cache_keys), set(data.frames)


def covered(side: str, main: str) -> bool:
    """Whether rank 0's store `main` holds every compile of the side store `side`."""
    mine, theirs = cache_keys(side), cache_keys(main)
    return mine is not None and theirs is not None and mine[0] <= theirs[0] and mine[1] <= theirs[1]


def store_for_rank(path: str, job: JobRank | None) -> tuple[str, str | None]:
    """(the store this rank replays, a note for the summary or None). A side store that rank
    0's store covers is deleted: the rank's compile is the same as rank 0's."""
    if job is None or job.writes_store:
        return path, None
    side = side_store(path, job.rank)
    if not os.path.exists(side):
        return path, None
    if covered(side, path):
        Path(side).unlink(missing_ok=True)
        return path, None
    note = f"rank {job.rank} compiles differently from rank 0: its own store {side} is replayed"
    difference = rank_difference(path, side)
    return side, note + (f"; what differs (rank 0's, then rank {job.rank}'s): {difference}" if difference else "")


# replay-inspect diff's answer for a side store starts by naming the rank: the rest is what differs.
_RANK_LEAD = re.compile(r"^Rank \d+ compiles differently from rank 0 \(was: rank 0, now: rank \d+\): ")


def rank_difference(main: str, side: str, timeout_s: float = 20.0) -> str | None:
    """What a rank's side store compiled differently from rank 0's store, in one line
    (`replay-inspect diff MAIN SIDE`'s answer), or None when it cannot be told: advice for the
    summary, never a reason to fail."""
    from dynamo_replay.tools import run_inspect

    try:
        done = run_inspect("diff", "--json", main, side, timeout=timeout_s)
        answer = json.loads(done.stdout).get("answer") if done.returncode in (0, 1) else None
    except Exception:  # the tool missing, slow or unreadable output: the summary says less
        return None
    if not isinstance(answer, str) or not answer:
        return None
    answer = _RANK_LEAD.sub("", answer.split(". ")[0].rstrip("."))
    return answer if len(answer) <= 400 else answer[:397] + "..."


class Agreement:
    """Every rank of a job uses its store or none does, decided on the job's own c10d store
    once its default process group exists.

    A rank whose store loaded votes when its first compiled function is first called, and waits
    until every rank has voted or one has refused (at most DYNAMO_REPLAY_RANK_WAIT seconds,
    120 by default, after which it refuses for all). A rank that refused decides at once for
    all, when it first compiles: a refusal never waits. The first decision written is
    everyone's (compare-and-set), so ranks that time out and ranks that counted the votes
    cannot decide differently. Before the process group exists there is nothing to agree on:
    each rank decides by itself, as no collective can be entered yet."""

    _sessions = 0  # agreements made in this process: the same count on every rank of an SPMD job

    def __init__(self, job: JobRank) -> None:
        Agreement._sessions += 1
        self.job = job
        self._prefix = f"dynamo-replay/agreement/{Agreement._sessions}"
        self.decision: str | None = None  # "use", or why every rank compiles

    def _store(self) -> Any:
        from dynamo_replay import _torch

        return _torch.ranks.default_store()

    def refuse(self, reason: str) -> bool:
        """This rank cannot use its store: every rank compiles. False when the job's process
        group does not exist yet (called again at the next compile)."""
        store = self._store()
        if store is None:
            return False
        self.decision = self._decide(store, f"rank {self.job.rank}: {reason}")
        return True

    def refuse_at_compile_start(self, reason: str) -> Callable[[], None]:
        """refuse(reason) as this rank first compiles (Dynamo's compile-start callback runs
        before any compile-time collective), until the job's process group exists; returns the undo."""
        from dynamo_replay import _torch

        def at_compile_start() -> None:
            if self.decision is None:
                try:
                    self.refuse(reason)
                except Exception:  # the job's own compile goes on regardless
                    pass

        return _torch.ranks.on_compile_start(at_compile_start)

    def use(self) -> str:
        """This rank's store loaded: "use" when every rank's did, else why every rank compiles."""
        if self.decision is not None:
            return self.decision
        store = self._store()
        if store is None:
            return "use"  # no process group yet: no collective to fall out of step in
        store.set(f"{self._prefix}/vote/{self.job.rank}", "use")
        votes = [f"{self._prefix}/vote/{rank}" for rank in range(self.job.world_size)]
        wait = float(os.environ.get(AGREEMENT_WAIT_ENV) or _DEFAULT_AGREEMENT_WAIT_S)
        deadline = time.monotonic() + wait
        while self.decision is None:
            if store.check([f"{self._prefix}/decision"]):
                self.decision = store.get(f"{self._prefix}/decision").decode()
            elif store.check(votes):
                self.decision = self._decide(store, "use")
            elif time.monotonic() >= deadline:
                missing = [str(rank) for rank, key in enumerate(votes) if not store.check([key])]
                self.decision = self._decide(store, f"rank {', '.join(missing)} gave no answer within {wait:g} s")
            else:
                time.sleep(_POLL_S)
        return self.decision

    def _decide(self, store: Any, decision: str) -> str:
        return store.compare_set(f"{self._prefix}/decision", "", decision).decode()


def manifest_fields(job: JobRank | None) -> dict[str, Any]:
    """What a fleet entry says of the job that captured it."""
    return {"world_size": job.world_size if job else 1, "rank": job.rank if job else 0}
