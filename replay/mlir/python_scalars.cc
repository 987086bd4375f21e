// Python's semantics, not C's: // and % round toward -inf and % takes the divisor's sign, / is
// always a float, ** of two ints is an int, round() rounds half to even, int() truncates.
#include "python_scalars.h"

#include <cmath>
#include <map>
#include <optional>

namespace dynrep::replay::lowering {

namespace {

using K = Value::Kind;

DType typeOf(K k) { return k == K::Float ? DType::F64 : k == K::Bool ? DType::Bool : DType::I64; }

std::string functionName(const std::string& target) {
  std::string name = target.substr(target.rfind('.') + 1);
  if (name.rfind("_sym_", 0) == 0) return name.substr(5);    // torch._sym_sqrt
  if (name.rfind("sym_", 0) == 0) return name.substr(4);     // torch.sym_max
  if (!name.empty() && name.back() == '_') name.pop_back();  // operator.and_
  return name;
}

double pyFloorMod(double a, double b) { return a - b * std::floor(a / b); }

int64_t intPow(int64_t base, int64_t exp) {
  int64_t out = 1;
  for (; exp > 0; --exp) out *= base;
  return out;
}

// Every argument constant: the result computed here (ints in int64, floats in double), or
// nothing for a function folded only by emitting it.
std::optional<Value> fold(const std::string& f, const std::vector<Value>& a, K result) {
  auto num = [&](size_t i) { return a[i].number; };
  auto integer = [&](size_t i) { return static_cast<int64_t>(a[i].number); };
  auto out = [&](double v) {
    return result == K::Float  ? Value::real(v)
           : result == K::Bool ? Value::boolean(v != 0)
                               : Value::integer(static_cast<int64_t>(v));
  };
  bool ints = result == K::Int;
  if (f == "add") return out(num(0) + num(1));
  if (f == "sub") return out(num(0) - num(1));
  if (f == "mul") return out(num(0) * num(1));
  if (f == "truediv") return Value::real(num(0) / num(1));
  if (f == "floordiv") return out(std::floor(num(0) / num(1)));
  if (f == "mod")
    return ints ? Value::integer(integer(0) - integer(1) * static_cast<int64_t>(std::floor(num(0) / num(1))))
                : out(pyFloorMod(num(0), num(1)));
  if (f == "pow") return ints ? Value::integer(intPow(integer(0), integer(1))) : out(std::pow(num(0), num(1)));
  if (f == "eq") return Value::boolean(num(0) == num(1));
  if (f == "ne") return Value::boolean(num(0) != num(1));
  if (f == "lt") return Value::boolean(num(0) < num(1));
  if (f == "le") return Value::boolean(num(0) <= num(1));
  if (f == "gt") return Value::boolean(num(0) > num(1));
  if (f == "ge") return Value::boolean(num(0) >= num(1));
  if (f == "neg") return out(-num(0));
  if (f == "pos") return out(num(0));
  if (f == "abs") return out(std::fabs(num(0)));
  if (f == "floor") return out(std::floor(num(0)));
  if (f == "ceil") return out(std::ceil(num(0)));
  if (f == "trunc" || f == "int") return out(std::trunc(num(0)));
  if (f == "round") return out(std::nearbyint(num(0)));  // the default rounding mode: half to even
  if (f == "float") return Value::real(num(0));
  if (f == "max") return out(std::max(num(0), num(1)));
  if (f == "min") return out(std::min(num(0), num(1)));
  if (f == "lshift") return Value::integer(integer(0) << integer(1));
  if (f == "rshift") return Value::integer(integer(0) >> integer(1));
  if (f == "and") return out(static_cast<double>(integer(0) & integer(1)));
  if (f == "or") return out(static_cast<double>(integer(0) | integer(1)));
  if (f == "xor") return out(static_cast<double>(integer(0) ^ integer(1)));
  if (f == "not") return Value::boolean(num(0) == 0);
  if (f == "ite") return num(0) != 0 ? a[1] : a[2];
  return std::nullopt;
}

// Python's a % b from the C remainder r: r + b where r is nonzero and its sign differs from b's.
std::string pythonMod(Scalars& s, const std::string& a, const std::string& b, DType t) {
  bool real = isFloat(t);
  std::string r = s.op(real ? "arith.remf" : "arith.remsi", a, b, t), zero = s.constant(0, t);
  std::string nonzero = s.cmp(real ? "une" : "ne", r, zero, t);
  std::string differ =
      s.op("arith.xori", s.cmp(real ? "olt" : "slt", r, zero, t), s.cmp(real ? "olt" : "slt", b, zero, t), DType::Bool);
  std::string fix = s.op("arith.andi", nonzero, differ, DType::Bool);
  return s.select(fix, s.op(real ? "arith.addf" : "arith.addi", r, b, t), r, t);
}

// base ** exp for an int exponent known here: square and multiply.
std::string powByConstant(Scalars& s, const std::string& base, int64_t exp, DType t) {
  std::string out = s.constant(1, t), square = base;
  const char* mul = isFloat(t) ? "arith.mulf" : "arith.muli";
  for (; exp > 0; exp >>= 1) {
    if (exp & 1) out = s.op(mul, out, square, t);
    if (exp > 1) square = s.op(mul, square, square, t);
  }
  return out;
}

const std::map<std::string, const char*> kFloatFunctions = {
    {"sqrt", "math.sqrt"}, {"cos", "math.cos"},   {"sin", "math.sin"},   {"tan", "math.tan"},   {"acos", "math.acos"},
    {"asin", "math.asin"}, {"atan", "math.atan"}, {"cosh", "math.cosh"}, {"sinh", "math.sinh"}, {"tanh", "math.tanh"},
    {"log2", "math.log2"}, {"exp", "math.exp"},   {"log", "math.log"}};

}  // namespace

Value pythonScalar(Emitter& e, const std::string& target, const std::vector<Value>& given, K result) {
  std::string f = functionName(target);
  // torch.sym_sum takes one list
  std::vector<Value> args = f == "sum" && given.size() == 1 && given[0].kind == K::List ? given[0].items : given;
  if (f == "round" && args.size() == 2 && args[1].isNone()) args.pop_back();  // round(x, None) is round(x)
  if (f == "round" && args.size() != 1) throw Unsupported("round() to a number of digits is not lowered");
  for (const Value& a : args)
    if (!a.isScalar()) throw Unsupported(target + " on a value that is not a scalar");
  bool allConst = true;
  for (const Value& a : args) allConst = allConst && a.isConst();
  if (allConst)
    if (std::optional<Value> folded = fold(f, args, result)) return *folded;
  Scalars s = e.scalars();
  bool real = false;
  for (const Value& a : args) real = real || a.kind == K::Float;
  DType t = real ? DType::F64 : DType::I64, rt = typeOf(result);
  auto arg = [&](size_t i, DType as) { return s.of(args.at(i), as); };
  auto done = [&](const std::string& v, DType have) { return Value::scalar(result, s.cast(v, have, rt)); };
  static const std::map<std::string, std::pair<const char*, const char*>> kArith = {
      {"add", {"arith.addi", "arith.addf"}},
      {"sub", {"arith.subi", "arith.subf"}},
      {"mul", {"arith.muli", "arith.mulf"}},
      {"max", {"arith.maxsi", "arith.maximumf"}},
      {"min", {"arith.minsi", "arith.minimumf"}}};
  if (auto it = kArith.find(f); it != kArith.end() && args.size() == 2)
    return done(s.op(real ? it->second.second : it->second.first, arg(0, t), arg(1, t), t), t);
  static const std::map<std::string, std::pair<const char*, const char*>> kCompare = {
      {"eq", {"eq", "oeq"}},  {"ne", {"ne", "une"}},  {"lt", {"slt", "olt"}},
      {"le", {"sle", "ole"}}, {"gt", {"sgt", "ogt"}}, {"ge", {"sge", "oge"}}};
  if (auto it = kCompare.find(f); it != kCompare.end() && args.size() == 2)
    return done(s.cmp(real ? it->second.second : it->second.first, arg(0, t), arg(1, t), t), DType::Bool);
  if (f == "truediv") return done(s.op("arith.divf", arg(0, DType::F64), arg(1, DType::F64), DType::F64), DType::F64);
  if (f == "floordiv") {
    if (!real) return done(s.op("arith.floordivsi", arg(0, t), arg(1, t), t), t);
    return done(s.unary("math.floor", s.op("arith.divf", arg(0, t), arg(1, t), t), t), t);
  }
  if (f == "mod") return done(pythonMod(s, arg(0, t), arg(1, t), t), t);
  if (f == "pow") {
    const Value& exp = args.at(1);
    if (exp.isConst() && exp.number >= 0 && exp.number == std::floor(exp.number) && exp.number <= 64 &&
        (result == K::Int || exp.kind == K::Int))
      return done(powByConstant(s, arg(0, typeOf(result)), static_cast<int64_t>(exp.number), typeOf(result)),
                  typeOf(result));
    std::string p = s.op("math.powf", arg(0, DType::F64), arg(1, DType::F64), DType::F64);
    if (result == K::Int) p = s.unary("math.roundeven", p, DType::F64);  // exact below 2**53
    return done(p, DType::F64);
  }
  if (f == "neg")
    return done(real ? s.unary("arith.negf", arg(0, t), t) : s.op("arith.subi", s.constant(0, t), arg(0, t), t), t);
  if (f == "pos" || f == "float" || f == "int") return done(arg(0, t), t);
  if (f == "abs") return done(s.unary(real ? "math.absf" : "math.absi", arg(0, t), t), t);
  if (f == "floor" || f == "ceil" || f == "trunc" || f == "round") {
    if (!real) return done(arg(0, t), t);
    if (f == "trunc") {  // floor above 0, ceil below: exact, and in ops every runtime has (IREE's VM has no trunc)
      std::string x = arg(0, t);
      return done(
          s.select(s.cmp("oge", x, s.constant(0, t), t), s.unary("math.floor", x, t), s.unary("math.ceil", x, t), t),
          t);
    }
    const char* op = f == "round"   ? "math.roundeven"
                     : f == "floor" ? "math.floor"
                     : f == "ceil"  ? "math.ceil"
                                    : "math.trunc";
    return done(s.unary(op, arg(0, t), t), t);
  }
  if ((f == "lshift" || f == "rshift") && !real)
    return done(s.op(f == "lshift" ? "arith.shli" : "arith.shrsi", arg(0, t), arg(1, t), t), t);
  if ((f == "and" || f == "or" || f == "xor") && !real) {
    DType bt = result == K::Bool ? DType::Bool : DType::I64;
    return done(s.op("arith." + f + "i", arg(0, bt), arg(1, bt), bt), bt);
  }
  if (f == "not")
    return done(s.op("arith.xori", arg(0, DType::Bool), s.constant(1, DType::Bool), DType::Bool), DType::Bool);
  if (f == "ite") return done(s.select(arg(0, DType::Bool), arg(1, rt), arg(2, rt), rt), rt);
  if (f == "sum") {
    std::string total = s.constant(0, rt);
    for (size_t i = 0; i < args.size(); ++i)
      total = s.op(isFloat(rt) ? "arith.addf" : "arith.addi", total, arg(i, rt), rt);
    return done(total, rt);
  }
  if (auto it = kFloatFunctions.find(f); it != kFloatFunctions.end() && args.size() == 1)
    return done(s.unary(it->second, arg(0, DType::F64), DType::F64), DType::F64);
  throw Unsupported("the Python function " + target + " is not lowered");
}

}  // namespace dynrep::replay::lowering
