"""dynamo-replay: capture everything a torch.compile job produces into one store file,
then replay, inspect and re-lower it offline.

The store API (this module) needs no PyTorch; capture and replay import it when used.
"""

from __future__ import annotations

from dynamo_replay._core import (
    Artifact,
    BlobReader,
    CodeObject,
    Manifest,
    Store,
    StoreInfo,
    TraceEvent,
    UnknownRecord,
    __version__,
)
from dynamo_replay.capture import capture
from dynamo_replay.replay import ReplaySummary, replay
from dynamo_replay.errors import (
    CorruptStoreError,
    MissingKeyError,
    ReplayError,
    ReplayRefusedError,
    ReplayWarning,
    StoreError,
    StoreExistsError,
    StoreLockedError,
    StoreNotFoundError,
    UnsupportedVersionError,
)

__all__ = [
    "Artifact",
    "BlobReader",
    "CodeObject",
    "CorruptStoreError",
    "Manifest",
    "MissingKeyError",
    "ReplayError",
    "ReplayRefusedError",
    "ReplaySummary",
    "ReplayWarning",
    "Store",
    "StoreError",
    "StoreExistsError",
    "StoreInfo",
    "StoreLockedError",
    "StoreNotFoundError",
    "TraceEvent",
    "UnknownRecord",
    "UnsupportedVersionError",
    "__version__",
    "capture",
    "replay",
]
