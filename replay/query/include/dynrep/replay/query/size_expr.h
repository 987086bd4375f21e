// The one reader of PyTorch's printed size expressions (`2*s0 + 1`, `(s0//2)`, `Max(1, s1)`):
// text -> a small tree, its value, and spellings of it (MLIR ops, affine text, Python) by callback.
// Thread-safety: pure functions; a SizeExpr is a plain value.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dynrep/store/status.h"

namespace dynrep::replay {

// Integer-valued nodes with Python's (and sympy's) floor semantics. Sympy names that are
// spellings of these are folded in while parsing: CleanDiv is FloorDiv, PythonMod is Mod,
// ModularIndexing(a, b, c) is Mod(FloorDiv(a, b), c), PowByNatural is Pow, LShift and RShift
// are Mul and FloorDiv by 2**b, CeilToInt/FloorToInt/TruncToInt(IntTrueDiv(a, b)) are CeilDiv,
// FloorDiv and TruncDiv, and those of an integer are the integer.
struct SizeExpr {
  enum class Kind {
    Integer,  // value; never negative (a negative literal is Neg)
    Symbol,   // name
    Add,
    Sub,
    Mul,
    Neg,
    FloorDiv,  // a // b: rounds toward -inf
    CeilDiv,   // rounds toward +inf
    TruncDiv,  // rounds toward 0 (C's /): TruncToInt(IntTrueDiv(a, b))
    Mod,       // a % b: the sign of b, as sympy's Mod and PyTorch's PythonMod
    Pow,       // a ** b, b >= 0
    Max,
    Min,  // one or more operands
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,     // 1 or 0, as Python's bool is an int
    Where,  // Where(c, a, b): a if c else b
  };
  Kind kind = Kind::Integer;
  int64_t value = 0;  // Integer
  std::string name;   // Symbol
  std::vector<SizeExpr> args;
};

// The tree of `text`, or InvalidArgument naming the text and what is wrong: a malformed
// expression, or a function that is not an integer size (TruncToFloat, `/`).
Result<SizeExpr> parseSizeExpr(const std::string& text);

// The value at `symbols`, as sympy computes it, or InvalidArgument on a symbol with no value,
// division by zero, a negative exponent, or a result outside int64.
Result<int64_t> evaluate(const SizeExpr& expr, const std::map<std::string, int64_t>& symbols);

// Spells `expr` bottom-up: `spell` gets each node with its operands already spelled, in order.
using SizeSpelling = std::function<std::string(const SizeExpr& node, const std::vector<std::string>& operands)>;
std::string spellSize(const SizeExpr& expr, const SizeSpelling& spell);

// How tightly `kind` binds in Python's grammar (higher binds tighter), for printers to decide
// where brackets go: relations < Add, Sub < Mul, FloorDiv, Mod < Neg < Pow < calls and leaves.
int bindingPower(SizeExpr::Kind kind);

}  // namespace dynrep::replay
