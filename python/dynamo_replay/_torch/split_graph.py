"""A DDP split graph as the store holds it (ddp_split.py saves it): a backend artifact of
PyTorch's precompile, which the loader accepts only as a BackendCacheArtifact, so this module
imports torch and is imported only where torch is."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable
from typing import Any

import torch
from torch._dynamo.precompile_context import BackendCacheArtifact


@dataclasses.dataclass
class SplitGraph:
    """A frame's split graph as saved: the split module (each piece a bare placeholder
    module, pickled as code), each piece's bundled AOTAutograd artifact with whether its output
    is unwrapped from a one-element tuple, and what DDP split it for."""

    module: bytes
    pieces: dict[str, tuple[Any, bool]]
    bucket_bytes_cap: int
    world_size: int

    def rebuild(self) -> Any:
        module = pickle.loads(self.module)
        for name, (artifact, unwrap) in self.pieces.items():
            setattr(module, name, SplitPiece(artifact.after_deserialization(), unwrap))
        return module

    def describe(self) -> str:
        return f"DDP's bucket cap of {self.bucket_bytes_cap} bytes and world size {self.world_size}"


class SplitGraphArtifact(BackendCacheArtifact[Any]):
    """The frame's backend: the split graph rebuilt, each piece from its own artifact."""

    def after_deserialization(self) -> Any:
        return self.content.rebuild()


class SplitPiece(torch.nn.Module):
    """One bucket's compiled piece, called as DDPOptimizer calls it."""

    def __init__(self, compiled: Callable[..., Any], unwrap: bool) -> None:
        super().__init__()
        self.compiled = compiled
        self.unwrap = unwrap

    def forward(self, *args: Any) -> Any:
        out = self.compiled(*args)
        return out[0] if self.unwrap and isinstance(out, (tuple, list)) else out
