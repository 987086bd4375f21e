// Reading one line of the user's Python for the why-answer's patterns: the condition it tests, the
// opposite of a condition, and the name it gives a value. Private to replay/inspect/why.
// Thread-safety: pure functions.
#pragma once

#include <string>

namespace dynrep::replay::pyline {

bool has(const std::string& s, const std::string& part);
std::string trim(const std::string& s);

// The condition a line branches or asserts on: "if n.numel() == 0:" -> "n.numel() == 0";
// also elif, while, assert and `a if cond else b`. "" when the line has none.
std::string conditionOf(const std::string& code);
// An `if`, `elif`, `while` or `a if c else b` line.
bool isBranch(const std::string& code);
// A `for` or `while` line.
bool loopStatement(const std::string& code);
// The opposite of a condition: a lone comparison flips its operator, `not c` loses the not.
std::string negate(const std::string& cond);
// An operator that reads a Python number from tensor data: item, _local_scalar_dense, tolist.
bool scalarOp(const std::string& op);

}  // namespace dynrep::replay::pyline
