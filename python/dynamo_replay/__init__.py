"""dynamo-replay: capture everything a torch.compile job produces into one store file,
then replay, inspect and re-lower it offline.

The store API (this module) needs no PyTorch; capture, replay and load_graph import it when used.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

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
    GraphError,
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

if TYPE_CHECKING:
    import torch.fx


def load_graph(store: str | os.PathLike[str], compile_id: str, graph: str = "forward",
               inputs: bool = True) -> torch.fx.GraphModule:
    """The graph `graph` ("forward", "backward", "inference" or "dynamo") of compile `compile_id`
    ("0/0") in `store`, rebuilt from its graph IR as a torch.fx.GraphModule that runs without
    the original model: `example_inputs`, `expected_outputs`, `check(rtol, atol)` -> [] when
    the outputs match the stored ones. See dynamo_replay.graphs.load_graph; GraphError says
    what is missing."""
    from dynamo_replay.graphs import load_graph as load  # imports torch

    return load(store, compile_id, graph, inputs=inputs)


__all__ = [
    "Artifact",
    "BlobReader",
    "CodeObject",
    "CorruptStoreError",
    "GraphError",
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
    "load_graph",
    "replay",
]
