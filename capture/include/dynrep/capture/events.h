// The names of the events capture adds to PyTorch's structured trace (TraceEvent records whose
// name starts with "dynamo_replay."), specified in docs/capture-schema.md "Capture's own events".
// python/dynamo_replay/schema.py writes them under the same names (EVENT_*); events_test.cc
// checks the two agree. Only added, never renamed: stores written with them stay readable.
// Thread-safety: constants only.
#pragma once

#include <string_view>

namespace dynrep::capture::events {

inline constexpr std::string_view kSummary = "dynamo_replay.summary";
inline constexpr std::string_view kError = "dynamo_replay.error";
inline constexpr std::string_view kGraphIr = "dynamo_replay.graph_ir";
inline constexpr std::string_view kGuards = "dynamo_replay.guards";
inline constexpr std::string_view kSample = "dynamo_replay.sample";
inline constexpr std::string_view kSymbols = "dynamo_replay.symbols";
inline constexpr std::string_view kDroppedGuard = "dynamo_replay.dropped_guard";
inline constexpr std::string_view kNotPackaged = "dynamo_replay.not_packaged";
inline constexpr std::string_view kSymbolOrigin = "dynamo_replay.symbol_origin";
inline constexpr std::string_view kShapeGuard = "dynamo_replay.shape_guard";
inline constexpr std::string_view kCompileFailure = "dynamo_replay.compile_failure";
inline constexpr std::string_view kRecompile = "dynamo_replay.recompile";
inline constexpr std::string_view kHits = "dynamo_replay.hits";
inline constexpr std::string_view kCoreAtenGraphIr = "dynamo_replay.core_aten_graph_ir";
inline constexpr std::string_view kJob = "dynamo_replay.job";
inline constexpr std::string_view kCallSite = "dynamo_replay.call_site";
inline constexpr std::string_view kGraphBreak = "dynamo_replay.graph_break";
inline constexpr std::string_view kRuntimeFailure = "dynamo_replay.runtime_failure";
inline constexpr std::string_view kSymbolValues = "dynamo_replay.symbol_values";
// Which generation of the store added a compile: 0 the capture, G the G-th update.
inline constexpr std::string_view kGeneration = "dynamo_replay.generation";

// Every name above, for code and tests that need the whole set.
inline constexpr std::string_view kAll[] = {
    kSummary,     kError,        kGraphIr,    kGuards,         kSample,       kSymbols,   kDroppedGuard,
    kNotPackaged, kSymbolOrigin, kShapeGuard, kCompileFailure, kRecompile,    kHits,      kCoreAtenGraphIr,
    kJob,         kCallSite,     kGraphBreak, kRuntimeFailure, kSymbolValues, kGeneration};

}  // namespace dynrep::capture::events
