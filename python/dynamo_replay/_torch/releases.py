"""The PyTorch releases dynamo-replay supports, and the adapter of the one this process runs,
chosen once, at import, from torch.__version__. Where releases differ in their private layout,
the difference is a field of Release; nothing outside _torch/ asks which release runs.

A release outside the matrix gets no adapter: capture records nothing and replay refuses, each
with one warning naming the release, and the job compiles as usual (never a failure)."""

from __future__ import annotations

import dataclasses
import re

# How _torch/guards.py's GUARD_TABLE rows read: (what replay does, why).
GuardRow = tuple[str, str]


@dataclasses.dataclass(frozen=True)
class Release:
    """What one PyTorch release line needs of dynamo-replay beyond what 2.13 needs."""

    line: str  # "2.15"
    tested: str  # the version the tests run on: "2.15.0"
    # Guard kinds (GuardBuilder methods) this line has that 2.13 has not, with their table rows.
    guard_kinds: dict[str, GuardRow] = dataclasses.field(default_factory=dict)


_COW = (
    "compiled",
    "PyTorch's saved frame keeps no real tensor for it to read, and its guards do not load "
    "(`COW_TENSOR_MATCH requires a plain Tensor`): the frame compiles, named in the summary",
)
_STREAM = ("kept", "whether the stream is the device's current one is saved by value; PyTorch checks it on every call")
_REVERSED = ("kept", "the reversed list iterator's remaining length is saved by value")

RELEASES: dict[str, Release] = {
    r.line: r
    for r in (
        Release(line="2.13", tested="2.13.0"),
        Release(line="2.14", tested="2.14.1", guard_kinds={"COW_TENSOR_MATCH": _COW}),
        Release(
            line="2.15",
            tested="2.15.0",
            guard_kinds={
                "COW_TENSOR_MATCH": _COW,
                "CURRENT_STREAM_MATCH": _STREAM,
                "LIST_REVERSEITERATOR_LEN": _REVERSED,
            },
        ),
    )
}


def release_line(version: str) -> str:
    """ "2.15" for "2.15.0+cu132"; the version itself when it does not start with two numbers."""
    found = re.match(r"(\d+)\.(\d+)", version)
    return f"{found.group(1)}.{found.group(2)}" if found else version


def release_for(version: str) -> Release | None:
    """The adapter of a torch version, or None for a release outside the matrix."""
    return RELEASES.get(release_line(version))


def unsupported_message(version: str) -> str:
    return (
        f"PyTorch {version} is not a release dynamo-replay supports ({', '.join(r.tested for r in RELEASES.values())})"
    )


def _current() -> tuple[str, Release | None]:
    import torch

    return torch.__version__, release_for(torch.__version__)


# Chosen once, at import. None: this torch is outside the matrix (see the module docstring).
VERSION, CURRENT = _current()
