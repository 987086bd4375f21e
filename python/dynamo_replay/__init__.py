"""dynamo-replay: capture everything a torch.compile job produces into one store file,
then replay, inspect and re-lower it offline.

The store API (this module) needs no PyTorch, and importing the package imports none:
capture, replay and load_graph import it when first used (tests/python/test_imports.py lists
what each entry imports).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

# The two packages, bound here before the functions of the same name below: a package imported
# later would take the name of the function (Python binds a submodule on its parent). Both import
# torch only when their block is first used.
import dynamo_replay.capture  # noqa: F401
import dynamo_replay.replay  # noqa: F401
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
from dynamo_replay.errors import (
    CaptureWarning,
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
from dynamo_replay.fleet.url import is_fleet_url as _is_fleet_url
from dynamo_replay.replay.summary import ReplaySummary

if TYPE_CHECKING:
    import torch.fx


def replay(
    path: str | os.PathLike[str],
    *,
    strict: bool = False,
    key: str | bytes | None = None,
    verbose: bool = True,
    update: bool | None = None,
) -> Any:
    """Run the torch.compile work in a `with` block from the store at `path` instead of
    compiling (dynamo_replay.replay.replay). A `redis://HOST:PORT/DB?name=JOB` URL names a
    fleet store: this host's entry is replayed, or captured under the job's lease while the
    fleet's other processes wait (dynamo_replay.fleet). `update=True` (or DYNAMO_REPLAY_UPDATE=1)
    adds what compiles during the run to the store, as a new generation (dynamo_replay.update)."""
    if update is None:
        update = os.environ.get("DYNAMO_REPLAY_UPDATE", "") not in ("", "0")
    if _is_fleet_url(path):
        from dynamo_replay.fleet import fleet_replay

        return fleet_replay(str(path), strict=strict, key=key, verbose=verbose, update=update)
    if update:
        from dynamo_replay.update import updating_replay

        return updating_replay(str(path), strict=strict, key=key, verbose=verbose)
    from dynamo_replay.replay import replay as local_replay  # imports torch

    return local_replay(path, strict=strict, key=key, verbose=verbose)


def capture(path: str | os.PathLike[str], **options: Any) -> Any:
    """Record every torch.compile compilation in a `with` block (or a decorated call) into the
    store at `path` (dynamo_replay.capture.capture, which lists the options). A redis:// URL
    uploads the store as a new entry of the job."""
    if _is_fleet_url(path):
        from dynamo_replay.fleet import fleet_capture

        return fleet_capture(str(path), **options)
    from dynamo_replay.capture import capture as local_capture  # imports torch

    return local_capture(path, **options)


def load_graph(
    store: str | os.PathLike[str], compile_id: str, graph: str = "forward", inputs: bool = True
) -> torch.fx.GraphModule:
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
    "CaptureWarning",
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
