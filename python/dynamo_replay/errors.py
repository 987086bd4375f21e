"""Exceptions raised by dynamo_replay. Every message names the store file, and where it
applies the record offset and the field that is wrong."""

from __future__ import annotations

__all__ = [
    "StoreError",
    "CorruptStoreError",
    "UnsupportedVersionError",
    "StoreLockedError",
    "MissingKeyError",
    "StoreNotFoundError",
    "StoreExistsError",
    "NotAStoreError",
    "StoreUsageError",
    "StoreIOError",
    "GraphError",
    "ReplayError",
    "ReplayRefusedError",
    "ReplayWarning",
]


class StoreError(Exception):
    """Base class of every error about a store file."""


class CorruptStoreError(StoreError):
    """The file is not a store, or its bytes fail a checksum, hash or structural check."""


class UnsupportedVersionError(StoreError):
    """The store was written in a format major version this reader does not read."""


class StoreLockedError(StoreError):
    """Another writer holds the store's lock."""


class MissingKeyError(StoreError, KeyError):
    """No blob with that key is in the store."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class StoreNotFoundError(StoreError, FileNotFoundError):
    """The store file does not exist."""


class StoreExistsError(StoreError, FileExistsError):
    """Store.create found a store at the path and overwrite was not given."""


class NotAStoreError(StoreError, IsADirectoryError):
    """The path names a directory or another non-regular file."""


class StoreUsageError(StoreError, ValueError):
    """A call that cannot work on this store as opened (e.g. a put on a store opened to read)."""


class StoreIOError(StoreError, OSError):
    """The operating system refused a read or write."""


class GraphError(Exception):
    """A stored graph that is not there, or that cannot be rebuilt or run (names the node)."""


class ReplayError(Exception):
    """Base class of replay's errors."""


class ReplayRefusedError(ReplayError):
    """Strict replay could not use the store; the message names every reason."""


class ReplayWarning(UserWarning):
    """Replay did not load a store and the job compiles as usual; the message says why."""


class CaptureWarning(UserWarning):
    """Capture records nothing (a PyTorch release it does not support); the job runs as usual."""
