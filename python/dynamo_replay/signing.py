"""Optional store signatures: HMAC-SHA256 over every artifact replay would load.

Replay unpickles PyTorch's artifacts and dlopens kernel libraries, which runs code, so a store
must come from a trusted source. With a key (the `key=` argument or DYNAMO_REPLAY_KEY), capture
signs the store and replay refuses any store whose signature does not verify, before it loads
anything. The signature covers each artifact's name, media type and bytes, in name order; the
records replay-inspect reads are plain data and are not covered.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import struct

KEY_ENV = "DYNAMO_REPLAY_KEY"
ALGORITHM = "hmac-sha256"


def resolve_key(key: str | bytes | None) -> bytes | None:
    """The key given, else DYNAMO_REPLAY_KEY from the environment, else None."""
    if key is None:
        key = os.environ.get(KEY_ENV) or None
    if isinstance(key, str):
        key = key.encode()
    return key


def _field(mac: hmac.HMAC, data: bytes) -> None:
    mac.update(struct.pack("<Q", len(data)))
    mac.update(data)


def sign(key: bytes, artifacts: dict[str, tuple[str, bytes]]) -> str:
    """Hex HMAC-SHA256 over name -> (media type, bytes), length-prefixed so no two different
    sets of artifacts feed the same byte stream."""
    mac = hmac.new(key, digestmod=hashlib.sha256)
    for name in sorted(artifacts):
        media_type, data = artifacts[name]
        _field(mac, name.encode())
        _field(mac, media_type.encode())
        _field(mac, data)
    return mac.hexdigest()


def verify(key: bytes, artifacts: dict[str, tuple[str, bytes]], signature: str) -> bool:
    return hmac.compare_digest(sign(key, artifacts), signature)
