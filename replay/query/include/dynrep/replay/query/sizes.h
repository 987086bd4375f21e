// Symbolic sizes: the values of a graph's symbols (s0, u1) and the sizes they give. Shapes in
// the graph IR keep PyTorch's printed expressions: `s0`, `2*s0`, `s0 + 1`, `(s0//2)`, `Max(1, s1)`,
// read by size_expr.h. Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "dynrep/store/status.h"

namespace dynrep::replay {

using Symbols = std::map<std::string, int64_t>;

// The expression's value, or InvalidArgument naming a symbol that has no value, or an
// expression the evaluator does not read.
Result<int64_t> evaluate(const std::string& expression, const Symbols& symbols);

// "s0=7,s1=3" -> {s0: 7, s1: 3}, or InvalidArgument naming the malformed entry.
Result<Symbols> parseSizes(const std::string& text);

}  // namespace dynrep::replay
