"""A store as the Python side reads it: opened once, its artifacts read once, and the replay data
of every generation decoded by one reader (generations.py) into one ReplayData. Replay, `check`,
the ranks' side stores and the fleet's upload all read a store through a StoreView, so none of
them can read generation 0 where another reads them all. No torch at import.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from dynamo_replay import generations, schema
from dynamo_replay._core import Artifact, Store
from dynamo_replay.replay_data import ReplayData


class UnreadableReplayData(ValueError):
    """The store holds no replay data, or replay data that does not parse: the message says which."""


@dataclass
class StoreView:
    """A store's state, the names of all its artifacts, and the artifacts read ({name: (media
    type, bytes)}), in one pass."""

    path: str
    state: str
    names: list[str]
    artifacts: dict[str, tuple[str, bytes]]
    _replay_data: ReplayData | None = field(default=None, repr=False)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, only: tuple[str, ...] = ()) -> StoreView:
        """Reads the store at path; with `only`, just the artifacts whose plain name (without its
        generation) is one of those. Raises dynamo_replay.StoreError when it cannot be read."""
        with Store.open(str(path)) as store:
            state = store.info().state
            records = list(store.records(Artifact))
            artifacts = {
                a.name: (a.media_type, store.get_blob(a.blob_key))
                for a in records
                if not only or generations.split_name(a.name)[1] in only
            }
        return cls(str(path), state, [a.name for a in records], artifacts)

    @property
    def finished(self) -> bool:
        return self.state == "finished"

    def generations(self) -> list[int]:
        return generations.generations(self.names)

    def replay_data(self) -> ReplayData:
        """The replay data of every generation, as one (generations.merged_replay_data).
        REQUIRES: the view read the replay data (`only` names it) and, where a key is set, the
        signature has verified. Raises UnreadableReplayData."""
        if self._replay_data is None:
            self._replay_data = merged_replay_data(self.artifacts, self.generations())
        return self._replay_data


def merged_replay_data(
    artifacts: dict[str, tuple[str, bytes]], generations_held: list[int] | None = None
) -> ReplayData:
    """The one decoder of a store's replay data: generation 0's, merged with each later one's
    (the generations the store holds: by default, those among `artifacts`)."""
    if schema.REPLAY_DATA_NAME not in artifacts:
        raise UnreadableReplayData(
            f"the store holds no replay data ({schema.REPLAY_DATA_NAME}): it was captured by an older "
            "dynamo-replay, or is not a capture; capture the job again"
        )
    try:
        base = ReplayData.from_json(artifacts[schema.REPLAY_DATA_NAME][1])
        held = generations.generations(artifacts) if generations_held is None else generations_held
        later = [(g, generations.read_generation(artifacts, g)) for g in held if g]
    except (ValueError, KeyError, TypeError) as error:
        raise UnreadableReplayData(
            f"the store's replay data cannot be read ({type(error).__name__}: {error})"
        ) from None
    return generations.merged_replay_data(base, later) if later else base
