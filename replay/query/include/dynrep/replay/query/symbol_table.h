// A compile's symbol table (dynamo_replay.symbols, docs/capture-schema.md "Symbols and samples of
// a compile"), read once into typed rows: the final range of each symbol, its source, hint and
// replacement. Every reader of the table (the lowering's entry checks, the runner's hints,
// replay-inspect's show, why, diff and report) takes these rows.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dynrep/replay/query/job.h"

namespace dynrep::replay {

// A bound or a hint as capture wrote it: an integer, a float (a float symbol's), or text
// ("int_oo", "-int_oo", "oo").
struct SymbolNumber {
  enum class Kind { Integer, Real, Text };
  Kind kind = Kind::Integer;
  int64_t integer = 0;
  double real = 0;
  std::string text;
  // The integer, or none for text (an unbounded end) and floats.
  std::optional<int64_t> asInteger() const {
    return kind == Kind::Integer ? std::optional<int64_t>(integer) : std::nullopt;
  }
};

// One row of a compile's symbol table, read after the job: final ranges.
struct SymbolEntry {
  std::string symbol;  // s0, u0
  bool unbacked = false;
  std::optional<std::pair<SymbolNumber, SymbolNumber>> range;  // [lower, upper], when recorded
  std::string source;                                          // L['x'].size()[0]; "" when none
  std::optional<SymbolNumber> hint;
  std::string replacedBy;  // the expression the symbol was replaced by; "" when it was not
};

// The compile's symbol table, in capture's order; empty when capture wrote none. Rows without a
// symbol name are skipped, a field of another type is left unset; Corruption when the blob
// cannot be read or is not a JSON list.
Result<std::vector<SymbolEntry>> readSymbols(const Job& job, const Compile& compile);

}  // namespace dynrep::replay
