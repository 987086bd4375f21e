// Parsing, evaluating and spelling PyTorch's printed size expressions (size_expr.h): a recursive
// descent with Python's precedences, since sympy prints Python (`-s0**2` is -(s0**2)).
#include "dynrep/replay/query/size_expr.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <stdexcept>

namespace dynrep::replay {

namespace {

using Kind = SizeExpr::Kind;

SizeExpr node(Kind kind, std::vector<SizeExpr> args) {
  SizeExpr e;
  e.kind = kind;
  e.args = std::move(args);
  return e;
}

SizeExpr integer(int64_t v) {
  SizeExpr e;
  e.value = v;
  return e;
}

// Stored texts are untrusted: bound the recursion instead of the stack.
constexpr int kMaxDepth = 200;

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  SizeExpr parse() {
    SizeExpr e = relation();
    skip();
    if (pos_ != text_.size()) fail("unexpected '" + text_.substr(pos_) + "'");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("size expression '" + text_ + "': " + why);
  }
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool peek(const std::string& token) {
    skip();
    return text_.compare(pos_, token.size(), token) == 0;
  }
  bool eat(const std::string& token) {
    if (!peek(token)) return false;
    pos_ += token.size();
    return true;
  }
  void expect(const std::string& token) {
    if (!eat(token))
      fail("expected '" + token + "'" + (pos_ < text_.size() ? " at '" + text_.substr(pos_) + "'" : " at the end"));
  }
  // One level deeper for as long as the guard lives.
  struct Depth {
    Parser& p;
    explicit Depth(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxDepth) p.fail("nested deeper than " + std::to_string(kMaxDepth));
    }
    ~Depth() { --p.depth_; }
  };

  // One comparison at most: sympy prints no chains.
  SizeExpr relation() {
    SizeExpr left = sum();
    static const std::pair<const char*, Kind> kRelations[] = {{"==", Kind::Eq}, {"!=", Kind::Ne}, {"<=", Kind::Le},
                                                              {">=", Kind::Ge}, {"<", Kind::Lt},  {">", Kind::Gt}};
    for (const auto& [token, kind] : kRelations)
      if (eat(token)) return node(kind, {std::move(left), sum()});
    return left;
  }
  SizeExpr sum() {
    SizeExpr e = term();
    for (;;) {
      if (eat("+"))
        e = node(Kind::Add, {std::move(e), term()});
      else if (eat("-"))
        e = node(Kind::Sub, {std::move(e), term()});
      else
        return e;
    }
  }
  SizeExpr term() {
    SizeExpr e = unary();
    for (;;) {
      if (eat("//"))
        e = node(Kind::FloorDiv, {std::move(e), unary()});
      else if (eat("*"))
        e = node(Kind::Mul, {std::move(e), unary()});
      else if (eat("%"))
        e = node(Kind::Mod, {std::move(e), unary()});
      else if (peek("/"))
        fail("true division '/' is not an integer size");
      else
        return e;
    }
  }
  SizeExpr unary() {
    Depth depth(*this);
    if (eat("-")) return node(Kind::Neg, {unary()});
    if (eat("+")) return unary();
    return power();
  }
  // Right-associative, and tighter than a unary minus on its left only.
  SizeExpr power() {
    SizeExpr base = atom();
    if (!eat("**")) return base;
    return node(Kind::Pow, {std::move(base), unary()});
  }
  SizeExpr atom() {
    skip();
    if (eat("(")) {
      SizeExpr e = relation();
      expect(")");
      return e;
    }
    size_t start = pos_;
    auto at = [&](size_t i) { return i < text_.size() ? static_cast<unsigned char>(text_[i]) : 0; };
    if (std::isdigit(at(pos_))) {
      while (std::isdigit(at(pos_))) ++pos_;
      if (at(pos_) == '.' || at(pos_) == 'e' || at(pos_) == 'E') fail("a float is not an integer size");
      std::string digits = text_.substr(start, pos_ - start);
      try {
        return integer(std::stoll(digits));
      } catch (const std::out_of_range&) {
        fail("the integer " + digits + " is outside int64");
      }
    }
    while (std::isalnum(at(pos_)) || at(pos_) == '_') ++pos_;
    std::string name = text_.substr(start, pos_ - start);
    if (name.empty()) fail(pos_ < text_.size() ? "unexpected '" + text_.substr(pos_) + "'" : "unexpected end");
    if (eat("(")) return call(name);
    if (name == "oo" || name == "int_oo" || name == "zoo" || name == "nan")
      fail("the unbounded value " + name + " is not a size");
    SizeExpr e;
    e.kind = Kind::Symbol;
    e.name = name;
    return e;
  }
  std::vector<SizeExpr> arguments(const std::string& name, size_t least, size_t most) {
    std::vector<SizeExpr> args;
    if (!peek(")")) {
      args.push_back(relation());
      while (eat(",")) args.push_back(relation());
    }
    expect(")");
    if (args.size() < least || args.size() > most)
      fail(name + " takes " + std::to_string(least) + (least == most ? "" : " or more") + " arguments, not " +
           std::to_string(args.size()));
    return args;
  }
  // After `name(`: PyTorch's integer functions (torch/utils/_sympy/functions.py) and sympy's.
  SizeExpr call(const std::string& name) {
    Depth depth(*this);
    auto many = std::numeric_limits<size_t>::max();
    if (name == "Max" || name == "Min") return node(name == "Max" ? Kind::Max : Kind::Min, arguments(name, 1, many));
    if (name == "FloorDiv" || name == "CleanDiv") return node(Kind::FloorDiv, arguments(name, 2, 2));
    if (name == "CeilDiv") return node(Kind::CeilDiv, arguments(name, 2, 2));
    if (name == "Mod" || name == "PythonMod") return node(Kind::Mod, arguments(name, 2, 2));
    if (name == "PowByNatural") return node(Kind::Pow, arguments(name, 2, 2));
    if (name == "Eq" || name == "Ne") return node(name == "Eq" ? Kind::Eq : Kind::Ne, arguments(name, 2, 2));
    if (name == "Where") return node(Kind::Where, arguments(name, 3, 3));
    if (name == "ModularIndexing") {
      std::vector<SizeExpr> a = arguments(name, 3, 3);
      return node(Kind::Mod, {node(Kind::FloorDiv, {std::move(a[0]), std::move(a[1])}), std::move(a[2])});
    }
    if (name == "LShift" || name == "RShift") {
      std::vector<SizeExpr> a = arguments(name, 2, 2);
      SizeExpr scale = node(Kind::Pow, {integer(2), std::move(a[1])});
      return node(name == "LShift" ? Kind::Mul : Kind::FloorDiv, {std::move(a[0]), std::move(scale)});
    }
    if (name == "CeilToInt" || name == "FloorToInt" || name == "TruncToInt" || name == "RoundToInt") {
      // IntTrueDiv is a float, so it is read only here, where it is rounded back to an integer.
      size_t mark = pos_;
      if (!eat("IntTrueDiv") || !eat("(")) {
        pos_ = mark;
        return std::move(arguments(name, 1, 1)[0]);
      }
      if (name == "RoundToInt") fail("unsupported function RoundToInt of IntTrueDiv (rounds half to even)");
      std::vector<SizeExpr> a = arguments("IntTrueDiv", 2, 2);
      expect(")");
      return node(name == "CeilToInt"    ? Kind::CeilDiv
                  : name == "FloorToInt" ? Kind::FloorDiv
                                         : Kind::TruncDiv,
                  std::move(a));
    }
    if (name == "Identity") return std::move(arguments(name, 1, 1)[0]);
    if (name == "IntTrueDiv") fail("IntTrueDiv is a float: read only inside CeilToInt, FloorToInt or TruncToInt");
    fail("unsupported function " + name);
  }

  const std::string& text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// Sizes are int64 in PyTorch; sympy's unbounded integers past that are no size.
int64_t checked(bool overflowed, int64_t v) {
  if (overflowed) throw std::runtime_error("the value is outside int64");
  return v;
}
int64_t add(int64_t a, int64_t b) {
  int64_t out = 0;
  bool overflowed = __builtin_add_overflow(a, b, &out);
  return checked(overflowed, out);
}
int64_t sub(int64_t a, int64_t b) {
  int64_t out = 0;
  bool overflowed = __builtin_sub_overflow(a, b, &out);
  return checked(overflowed, out);
}
int64_t mul(int64_t a, int64_t b) {
  int64_t out = 0;
  bool overflowed = __builtin_mul_overflow(a, b, &out);
  return checked(overflowed, out);
}

int64_t floorDiv(int64_t a, int64_t b) {
  if (b == 0) throw std::runtime_error("division by zero");
  if (b == -1) return sub(0, a);
  int64_t q = a / b;
  return a % b != 0 && ((a < 0) != (b < 0)) ? q - 1 : q;
}

int64_t ceilDiv(int64_t a, int64_t b) {
  if (b == 0) throw std::runtime_error("division by zero");
  if (b == -1) return sub(0, a);
  int64_t q = a / b;
  return a % b != 0 && ((a < 0) == (b < 0)) ? q + 1 : q;
}

// Floor modulo: the remainder takes the divisor's sign, as Python's %.
int64_t floorMod(int64_t a, int64_t b) {
  if (b == 0) throw std::runtime_error("modulo by zero");
  if (b == -1) return 0;  // and INT64_MIN % -1 is undefined in C++
  int64_t r = a % b;
  return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
}

int64_t power(int64_t base, int64_t exponent) {
  if (exponent < 0) throw std::runtime_error("a negative exponent is not an integer size");
  int64_t result = 1;
  for (; exponent > 0; exponent >>= 1) {
    if (exponent & 1) result = mul(result, base);
    if (exponent > 1) base = mul(base, base);
  }
  return result;
}

}  // namespace

namespace {

// The value, throwing std::runtime_error; evaluate() below is the boundary that catches.
int64_t valueOf(const SizeExpr& e, const std::map<std::string, int64_t>& symbols) {
  auto arg = [&](size_t i) { return valueOf(e.args.at(i), symbols); };
  switch (e.kind) {
    case Kind::Integer: return e.value;
    case Kind::Symbol: {
      auto it = symbols.find(e.name);
      if (it == symbols.end())
        throw std::runtime_error("no value for symbol " + e.name + " (give one with --sizes " + e.name + "=N)");
      return it->second;
    }
    case Kind::Add: return add(arg(0), arg(1));
    case Kind::Sub: return sub(arg(0), arg(1));
    case Kind::Mul: return mul(arg(0), arg(1));
    case Kind::Neg: return sub(0, arg(0));
    case Kind::FloorDiv: return floorDiv(arg(0), arg(1));
    case Kind::CeilDiv: return ceilDiv(arg(0), arg(1));
    case Kind::TruncDiv: {
      int64_t a = arg(0), b = arg(1);
      if (b == 0) throw std::runtime_error("division by zero");
      return b == -1 ? sub(0, a) : a / b;
    }
    case Kind::Mod: return floorMod(arg(0), arg(1));
    case Kind::Pow: return power(arg(0), arg(1));
    case Kind::Max:
    case Kind::Min: {
      int64_t out = arg(0);
      for (size_t i = 1; i < e.args.size(); ++i)
        out = e.kind == Kind::Max ? std::max(out, arg(i)) : std::min(out, arg(i));
      return out;
    }
    case Kind::Eq: return arg(0) == arg(1);
    case Kind::Ne: return arg(0) != arg(1);
    case Kind::Lt: return arg(0) < arg(1);
    case Kind::Le: return arg(0) <= arg(1);
    case Kind::Gt: return arg(0) > arg(1);
    case Kind::Ge: return arg(0) >= arg(1);
    case Kind::Where: return arg(0) != 0 ? arg(1) : arg(2);  // only the branch taken: the other may divide by zero
  }
  throw std::logic_error("size expression: unknown node kind");
}

}  // namespace

Result<SizeExpr> parseSizeExpr(const std::string& text) {
  try {
    return Parser(text).parse();
  } catch (const std::runtime_error& e) {
    return Status::invalidArgument(e.what());
  }
}

Result<int64_t> evaluate(const SizeExpr& expr, const std::map<std::string, int64_t>& symbols) {
  try {
    return valueOf(expr, symbols);
  } catch (const std::runtime_error& e) {
    return Status::invalidArgument(e.what());
  }
}

std::string spellSize(const SizeExpr& e, const SizeSpelling& spell) {
  std::vector<std::string> operands;
  operands.reserve(e.args.size());
  for (const SizeExpr& a : e.args) operands.push_back(spellSize(a, spell));
  return spell(e, operands);
}

int bindingPower(Kind kind) {
  switch (kind) {
    case Kind::Eq:
    case Kind::Ne:
    case Kind::Lt:
    case Kind::Le:
    case Kind::Gt:
    case Kind::Ge: return 1;
    case Kind::Add:
    case Kind::Sub: return 2;
    case Kind::Mul:
    case Kind::FloorDiv:
    case Kind::Mod: return 3;
    case Kind::Neg: return 4;
    case Kind::Pow: return 5;
    case Kind::Integer:
    case Kind::Symbol:
    case Kind::CeilDiv:
    case Kind::TruncDiv:
    case Kind::Max:
    case Kind::Min:
    case Kind::Where: return 6;
  }
  return 6;
}

}  // namespace dynrep::replay
