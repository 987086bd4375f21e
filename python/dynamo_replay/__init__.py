"""dynamo-replay: capture everything a torch.compile job produces into one store file,
then replay, inspect and re-lower it offline.

The store API (this module) needs no PyTorch; capture and replay import it when used.
"""

from __future__ import annotations

from dynamo_replay._core import (
    Artifact,
    BlobReader,
    Manifest,
    Store,
    StoreInfo,
    UnknownRecord,
    __version__,
)
from dynamo_replay.errors import (
    CorruptStoreError,
    MissingKeyError,
    StoreError,
    StoreExistsError,
    StoreLockedError,
    StoreNotFoundError,
    UnsupportedVersionError,
)

__all__ = [
    "Artifact",
    "BlobReader",
    "CorruptStoreError",
    "Manifest",
    "MissingKeyError",
    "Store",
    "StoreError",
    "StoreExistsError",
    "StoreInfo",
    "StoreLockedError",
    "StoreNotFoundError",
    "UnknownRecord",
    "UnsupportedVersionError",
    "__version__",
]
