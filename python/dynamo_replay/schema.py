"""Names shared by capture, replay and the C++ tools: artifact names and media types, and the
names of the events dynamo-replay adds to PyTorch's structured trace (docs/capture-schema.md, "Capture's
own events"). Only added to, never renamed: stores written with them must stay readable."""

from __future__ import annotations

# Artifacts (Artifact records).
MEGA_CACHE_NAME = "torch/mega_cache.bin"
MEGA_CACHE_MEDIA_TYPE = "application/x-torch-mega-cache"
KERNEL_PREFIX = "inductor/"
KERNEL_MEDIA_TYPE = "application/x-sharedlib"
TOOLCHAIN_NAME = "toolchain/cxx"
TOOLCHAIN_MEDIA_TYPE = "application/json"
SIGNATURE_NAME = "dynamo_replay/signature"
SIGNATURE_MEDIA_TYPE = "text/plain"
# Everything replay decides by (replay_data.py): one artifact, so the signature covers it.
REPLAY_DATA_NAME = "dynamo_replay/replay.json"
REPLAY_DATA_MEDIA_TYPE = "application/json"

# Events capture adds (TraceEvent records).
EVENT_SUMMARY = "dynamo_replay.summary"
EVENT_ERROR = "dynamo_replay.error"
EVENT_GRAPH_IR = "dynamo_replay.graph_ir"
EVENT_GUARDS = "dynamo_replay.guards"
EVENT_SAMPLE = "dynamo_replay.sample"
# A compile's symbol table: each symbol, its source, its final value range and its hint.
EVENT_SYMBOLS = "dynamo_replay.symbols"
# A guard PyTorch's caching precompile left out of a saved frame, with what it checked.
EVENT_DROPPED_GUARD = "dynamo_replay.dropped_guard"
# A frame PyTorch's precompile could not save, and why (replay compiles it as usual).
EVENT_NOT_PACKAGED = "dynamo_replay.not_packaged"
# Where a symbol came from: the operator, FX node and user line that made it.
EVENT_SYMBOL_ORIGIN = "dynamo_replay.symbol_origin"
# A guard or runtime assert on symbols: its expression, kind, symbols and user line.
EVENT_SHAPE_GUARD = "dynamo_replay.shape_guard"
# A failed compile's facts apart from the message: the undecidable expression, its symbols, the line.
EVENT_COMPILE_FAILURE = "dynamo_replay.compile_failure"
# Why a compile happened again: each failed guard with the value expected and the value seen.
EVENT_RECOMPILE = "dynamo_replay.recompile"
# How many times a compile's code ran during capture.
EVENT_HITS = "dynamo_replay.hits"
# The job as it was started: working directory, argv, interpreter (why --verify runs it again).
EVENT_JOB = "dynamo_replay.job"
# The user line that called a compiled function, and what it calls each tensor input there.
EVENT_CALL_SITE = "dynamo_replay.call_site"
# A graph break's facts apart from its message: its type, the expression, the user line.
EVENT_GRAPH_BREAK = "dynamo_replay.graph_break"
# A compiled graph's call that raised: the exception, the symbols' values, the asserts that failed.
EVENT_RUNTIME_FAILURE = "dynamo_replay.runtime_failure"
# Real values unbacked symbols took: from a graph's outputs, or the failed compile's graph run on real inputs.
EVENT_SYMBOL_VALUES = "dynamo_replay.symbol_values"
# An aten graph decomposed to the Core ATen opset (capture/core_aten.py), or why it could not be.
EVENT_CORE_ATEN_GRAPH_IR = "dynamo_replay.core_aten_graph_ir"
# Which generation of the store added a compile: 0 the capture, G its G-th update (update/).
EVENT_GENERATION = "dynamo_replay.generation"

# Set by `why --verify` when it re-runs a job: capture() writes there instead of the job's own path.
VERIFY_STORE_ENV = "DYNAMO_REPLAY_VERIFY_STORE"

# Fingerprint entries: the CPU's feature flags and the vector ISAs Inductor's probe accepted.
FINGERPRINT_CPU_FLAGS = "cpu.flags"
FINGERPRINT_VEC_ISA = "inductor.vec_isa"


def frame_name(function: str, filename: str, line: int) -> str:
    """How a frame is named in events, replay's summary and replay-inspect: `fn (file:line)`,
    the function's name and first line, as PyTorch's compile metrics give them."""
    return f"{function} ({filename}:{line})"
