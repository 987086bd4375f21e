"""The artifacts a capture stores for replay: PyTorch's Mega-Cache, the kernel libraries Inductor
built and the compiler's identity, the replay data, and the signature over all of them."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dynamo_replay import kernels, schema, signing
from dynamo_replay._core import Artifact, Store
from dynamo_replay.replay_data import ReplayData


class Artifacts:
    def __init__(self, store: Store, signing_key: bytes | None, note_failure: Callable[[str], None]) -> None:
        self._store = store
        self._note_failure = note_failure
        self.signing_key = signing_key
        self.signed: dict[str, tuple[str, bytes]] = {}  # name -> (media type, bytes), kept only when signing

    def put(self, name: str, media_type: str, data: bytes, attributes: dict[str, str] | None = None) -> None:
        self._store.put(
            Artifact(
                name=name,
                media_type=media_type,
                blob_key=self._store.put_blob(data),
                size=len(data),
                attributes=attributes or {},
            )
        )
        if self.signing_key:  # the bytes are kept only when they will be signed
            self.signed[name] = (media_type, data)

    def save_mega_cache(self, replay_data: ReplayData) -> list[tuple[str, int]]:
        """Stores PyTorch's own cache artifacts (Mega-Cache: Inductor FX graphs, AOTAutograd
        entries, autotuning, PGO and precompile packages) for replay to load later. Returns
        (qualname, first line) of each function whose package PyTorch left a frame out of."""
        left_out: list[tuple[str, int]] = []
        try:
            from dynamo_replay import _torch

            _torch.save_split_graphs()  # their pieces are complete once their backward has compiled
            saved, left_out = _torch.save_cache_artifacts()
            if saved is None:
                return left_out
            data, info = saved
            counts = {kind: str(len(keys)) for kind, keys in sorted(info.artifacts.items())}
            replay_data.cache_keys = sorted(f"{kind}:{key}" for kind, keys in info.artifacts.items() for key in keys)
            self.put(schema.MEGA_CACHE_NAME, schema.MEGA_CACHE_MEDIA_TYPE, data, counts)
        except Exception:
            self._note_failure("save_cache_artifacts")
        return left_out

    def save_kernels(self, cache: Any) -> None:
        """Stores the kernel libraries Inductor built or loaded (found in `cache`, a
        kernels.PrivateCacheDir or CurrentCacheDir) and, when there are any, the compiler's
        identity (asking it costs an import and two processes)."""
        if not kernels.inductor_used():
            return
        try:
            libraries = cache.kernel_libraries()
            for name, path in libraries.items():
                self.put(name, schema.KERNEL_MEDIA_TYPE, path.read_bytes())
            if libraries:
                identity = kernels.compiler_identity()
                self.put(
                    schema.TOOLCHAIN_NAME,
                    schema.TOOLCHAIN_MEDIA_TYPE,
                    json.dumps(identity).encode(),
                    {"name": identity["name"]},
                )
        except Exception:
            self._note_failure("kernel libraries")

    def save_replay_data(self, data: ReplayData) -> None:
        """The replay data artifact: put before the signature, so the signature covers it."""
        self.put(schema.REPLAY_DATA_NAME, schema.REPLAY_DATA_MEDIA_TYPE, data.to_json())

    def sign(self) -> None:
        """Adds the signature over every artifact put so far (none may follow it)."""
        signature = signing.sign(self.signing_key, self.signed).encode()
        self.put(
            schema.SIGNATURE_NAME,
            schema.SIGNATURE_MEDIA_TYPE,
            signature,
            {"algorithm": signing.ALGORITHM, "covers": str(len(self.signed))},
        )
