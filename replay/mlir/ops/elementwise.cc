// Elementwise operators: each is a body over scalars in the compute type (float32 for float16
// and bfloat16, as PyTorch's CPU kernels compute), broadcast as PyTorch broadcasts.
#include <cmath>

#include "ops.h"

namespace dynrep::replay::lowering {

namespace {

using Body = std::function<std::string(Scalars&, std::vector<std::string>&, DType)>;

// The dtype arithmetic happens in: the result's (a bool tensor plus an int is int64, an int
// tensor divided is float), unless that is bool or an integer from floats, where it is the
// promoted dtype of the tensor operands (a comparison, isnan).
DType arithmeticType(const OpCall& c, size_t operands) {
  std::optional<DType> t;
  for (size_t i = 0; i < operands && i < c.args.size(); ++i)
    if (c.args[i].isTensor()) t = t ? promote(*t, c.args[i].type.dtype) : c.args[i].type.dtype;
  DType out = c.out().dtype;
  if (!t || isComplex(out) || (out != DType::Bool && (isFloat(out) || !isFloat(*t)))) t = out;
  return computeType(*t);
}

// Bool and uint8 hold unsigned values (True is 1 in i1, not -1): their integer comparisons,
// min/max and divisions take the unsigned forms. `op` is the signed one ("slt", "arith.maxsi").
std::string integerOp(const std::string& op, DType t) {
  if (!isUnsigned(t)) return op;
  if (op == "slt" || op == "sle" || op == "sgt" || op == "sge") return "u" + op.substr(1);
  size_t si = op.rfind("si");
  return si != std::string::npos && si + 2 == op.size() ? op.substr(0, si) + "ui" : op;
}

std::string compareOf(Scalars& s, const char* floatPred, const char* intPred, const std::string& a,
                      const std::string& b, DType t) {
  return s.cmp(isFloat(t) ? floatPred : integerOp(intPred, t), a, b, t);
}

// op(self, other, ...) for the first `operands` arguments.
LowerFn map(size_t operands, Body body, bool boolResult = false) {
  return [operands, body, boolResult](OpCall& c) {
    std::vector<Value> ins(c.args.begin(), c.args.begin() + static_cast<long>(operands));
    DType t = arithmeticType(c, operands);
    return c.e.elementwise(
        c.out(), ins, t, [&](Scalars& s, std::vector<std::string>& v) { return body(s, v, t); }, boolResult);
  };
}

Body math(const char* op) {
  return [=](Scalars& s, std::vector<std::string>& v, DType t) {
    if (isComplex(t)) throw Unsupported(std::string(op) + " of a complex tensor is not lowered");
    if (!isFloat(t)) throw Unsupported(std::string(op) + " of an integer tensor");
    return s.unary(op, v[0], t);
  };
}

// ceil, floor, round, trunc: an integer tensor is returned as it is, as PyTorch does.
Body rounding(const char* op) {
  return [=](Scalars& s, std::vector<std::string>& v, DType t) {
    if (isComplex(t)) throw Unsupported(std::string(op) + " of a complex tensor (PyTorch rejects it)");
    return isFloat(t) ? s.unary(op, v[0], t) : v[0];
  };
}

Body compare(const char* floatPred, const char* intPred) {
  return
      [=](Scalars& s, std::vector<std::string>& v, DType t) { return compareOf(s, floatPred, intPred, v[0], v[1], t); };
}

// On bool, PyTorch's + is logical or and * logical and (i1's addi would make True + True
// False); - is an error there.
std::string add(Scalars& s, const std::string& a, const std::string& b, DType t) {
  if (t == DType::Bool) return s.op("arith.ori", a, b, t);
  if (isComplex(t)) return s.op("complex.add", a, b, t);
  return s.op(isFloat(t) ? "arith.addf" : "arith.addi", a, b, t);
}
std::string sub(Scalars& s, const std::string& a, const std::string& b, DType t) {
  if (t == DType::Bool) throw Unsupported("subtraction of bool tensors (PyTorch rejects it)");
  if (isComplex(t)) return s.op("complex.sub", a, b, t);
  return s.op(isFloat(t) ? "arith.subf" : "arith.subi", a, b, t);
}
std::string mul(Scalars& s, const std::string& a, const std::string& b, DType t) {
  if (t == DType::Bool) return s.op("arith.andi", a, b, t);
  if (isComplex(t)) return s.op("complex.mul", a, b, t);
  return s.op(isFloat(t) ? "arith.mulf" : "arith.muli", a, b, t);
}

// a + alpha * b (add, sub with alpha); rsub(a, b, alpha) is b - alpha * a.
LowerFn addLike(std::string (*combine)(Scalars&, const std::string&, const std::string&, DType),
                bool reversed = false) {
  return [=](OpCall& c) {
    DType t = arithmeticType(c, 2);
    std::vector<Value> ins = {c.arg(reversed ? 1 : 0), c.arg(reversed ? 0 : 1)};
    bool alpha = c.args.size() > 2 && !c.none(2) && !(c.arg(2).isConst() && c.arg(2).number == 1);
    if (alpha) ins.push_back(c.arg(2));
    return c.e.elementwise(c.out(), ins, t, [&](Scalars& s, std::vector<std::string>& v) {
      return combine(s, v[0], alpha ? mul(s, v[1], v[2], t) : v[1], t);
    });
  };
}

// An integer divisor of 0 made 1: PyTorch raises ZeroDivisionError there (so no stored sample
// divides by 0), and x86 traps, which would kill the process rather than fail the check.
std::string divisor(Scalars& s, const std::string& b, DType t) {
  return s.select(s.cmp("eq", b, s.constant(0, t), t), s.constant(1, t), b, t);
}

// x rounded to `storage` and back: float16 and bfloat16 results PyTorch rounds op by op.
std::string narrow(Scalars& s, const std::string& x, DType t, DType storage) {
  return storage == t || !isFloat(storage) ? x : s.cast(s.cast(x, t, storage), storage, t);
}

// PyTorch's div_floor_floating: the quotient from fmod, so that a quotient rounded up to an
// integer is not floored to it; float16 and bfloat16 round after each step, as PyTorch's
// kernel computes in them. A zero divisor gives a / b.
std::string floorDivide(Scalars& s, const std::string& a, const std::string& b, DType t, DType storage) {
  std::string zero = s.constant(0, t), one = s.constant(1, t);
  std::string mod = s.op("arith.remf", a, b, t);
  std::string q = narrow(s, s.op("arith.divf", narrow(s, s.op("arith.subf", a, mod, t), t, storage), b, t), t, storage);
  std::string signsDiffer = s.cmp("ne", s.cmp("olt", b, zero, t), s.cmp("olt", mod, zero, t), DType::Bool);
  std::string adjust = s.op("arith.andi", s.cmp("une", mod, zero, t), signsDiffer, DType::Bool);
  q = s.select(adjust, narrow(s, s.op("arith.subf", q, one, t), t, storage), q, t);
  std::string f = s.unary("math.floor", q, t);
  std::string up = s.cmp("ogt", narrow(s, s.op("arith.subf", q, f, t), t, storage), s.constant(0.5, t), t);
  f = s.select(up, narrow(s, s.op("arith.addf", f, one, t), t, storage), f, t);
  std::string quotient = narrow(s, s.op("arith.divf", a, b, t), t, storage);
  f = s.select(s.cmp("une", q, zero, t), f, s.op("math.copysign", zero, quotient, t), t);
  return s.select(s.cmp("oeq", b, zero, t), quotient, f, t);
}

// `storage` is the result's dtype, t the one computed in.
std::string divide(Scalars& s, const std::string& a, const std::string& b, DType t, DType storage,
                   const std::string& mode) {
  if (isComplex(t)) {
    if (!mode.empty()) throw Unsupported("division of complex values with rounding mode " + mode);
    return s.op("complex.div", a, b, t);
  }
  if (!isFloat(t)) {
    std::string d = divisor(s, b, t);
    if (isUnsigned(t)) return s.op("arith.divui", a, d, t);  // floor and trunc alike
    if (mode == "floor") return s.op("arith.floordivsi", a, d, t);
    if (mode == "trunc") return s.op("arith.divsi", a, d, t);
    throw Unsupported("true division of integers into an integer result");
  }
  if (mode == "floor") return floorDivide(s, a, b, t, storage);
  std::string q = s.op("arith.divf", a, b, t);
  if (mode == "trunc") return s.unary("math.trunc", narrow(s, q, t, storage), t);
  return q;
}

// div, its rounding mode from the call; floor_divide is div's floor mode.
LowerFn div(const std::string& fixedMode = "") {
  return [fixedMode](OpCall& c) {
    std::string mode = fixedMode;
    if (c.names.size() > 2 && c.names[2] == "rounding_mode" && c.arg(2).kind == Value::Kind::Text) mode = c.arg(2).text;
    DType t = arithmeticType(c, 2);
    if (mode.empty() && !isFloat(t)) t = computeType(c.out().dtype);
    return c.e.elementwise(c.out(), {c.arg(0), c.arg(1)}, t, [&](Scalars& s, std::vector<std::string>& v) {
      return divide(s, v[0], v[1], t, c.out().dtype, mode);
    });
  };
}

// fmod: C's, the sign of the dividend (LLVM's frem is fmod).
std::string fmod(Scalars& s, const std::string& a, const std::string& b, DType t) {
  if (isFloat(t)) return s.op("arith.remf", a, b, t);
  return s.op(integerOp("arith.remsi", t), a, divisor(s, b, t), t);
}

// remainder: Python's, the sign of the divisor; PyTorch's CPU kernel corrects fmod the same way.
std::string remainder(Scalars& s, const std::string& a, const std::string& b, DType t) {
  std::string r = fmod(s, a, b, t);
  if (isUnsigned(t)) return r;
  std::string zero = s.constant(0, t);
  const char* ne = isFloat(t) ? "une" : "ne";
  const char* lt = isFloat(t) ? "olt" : "slt";
  std::string fix = s.op("arith.andi", s.cmp(ne, r, zero, t),
                         s.cmp("ne", s.cmp(lt, r, zero, t), s.cmp(lt, b, zero, t), DType::Bool), DType::Bool);
  return s.select(fix, add(s, r, b, t), r, t);
}

// x ** n in integers as PyTorch's powi: wrapping products, and for n < 0 1 where x = 1, +-1
// where x = -1, else 0. math.ipowi (outlined by convert-math-to-funcs) sees n >= 0 only: its
// own n < 0 case divides by x.
std::string integerPow(Scalars& s, const std::string& x, const std::string& n, DType t) {
  if (t == DType::Bool) throw Unsupported("pow of bool tensors (PyTorch does not implement it)");
  if (isUnsigned(t)) {  // uint8 in i32, where ipowi's signed reading of the exponent holds; the low byte is the same
    std::string p = s.op("math.ipowi", s.cast(x, t, DType::I32), s.cast(n, t, DType::I32), DType::I32);
    return s.cast(p, DType::I32, t);
  }
  std::string zero = s.constant(0, t), one = s.constant(1, t), minusOne = s.constant(-1, t);
  std::string negative = s.cmp("slt", n, zero, t);
  std::string p = s.op("math.ipowi", x, s.select(negative, zero, n, t), t);
  std::string odd = s.cmp("ne", s.op("arith.andi", n, one, t), zero, t);
  std::string inverse = s.select(s.cmp("eq", x, one, t), one,
                                 s.select(s.cmp("eq", x, minusOne, t), s.select(odd, minusOne, one, t), zero, t), t);
  return s.select(negative, inverse, p, t);
}

// expm1 and log1p exact near 0 (convert-math-to-llvm spells them exp(x) - 1 and log(1 + x),
// which lose a small x's digits): Kahan's and Goldberg's corrections, inf kept.
std::string expm1(Scalars& s, const std::string& x, DType t) {
  std::string u = s.unary("math.exp", x, t), one = s.constant(1, t);
  std::string um1 = s.op("arith.subf", u, one, t);
  std::string r = s.op("arith.divf", s.op("arith.mulf", um1, x, t), s.unary("math.log", u, t), t);
  r = s.select(s.cmp("oeq", u, s.constant(HUGE_VAL, t), t), u, r, t);
  r = s.select(s.cmp("oeq", um1, s.constant(-1, t), t), um1, r, t);
  return s.select(s.cmp("oeq", u, one, t), x, r, t);
}
std::string log1p(Scalars& s, const std::string& x, DType t) {
  std::string one = s.constant(1, t);
  std::string u = s.op("arith.addf", one, x, t);
  std::string r =
      s.op("arith.divf", s.op("arith.mulf", s.unary("math.log", u, t), x, t), s.op("arith.subf", u, one, t), t);
  r = s.select(s.cmp("oeq", u, s.constant(HUGE_VAL, t), t), u, r, t);
  return s.select(s.cmp("oeq", u, one, t), x, r, t);
}

std::string erf(Scalars& s, const std::string& x, DType t) { return s.unary("math.erf", x, t); }

// gelu: 0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation.
std::string gelu(Scalars& s, const std::string& x, DType t, bool tanh) {
  std::string half = s.constant(0.5, t), one = s.constant(1, t);
  std::string inner;
  if (tanh) {
    std::string x3 = s.op("arith.mulf", s.op("arith.mulf", x, x, t), x, t);
    std::string u = s.op("arith.mulf", s.constant(std::sqrt(2.0 / M_PI), t),
                         s.op("arith.addf", x, s.op("arith.mulf", s.constant(0.044715, t), x3, t), t), t);
    inner = s.unary("math.tanh", u, t);
  } else {
    inner = erf(s, s.op("arith.mulf", x, s.constant(M_SQRT1_2, t), t), t);
  }
  return s.op("arith.mulf", s.op("arith.mulf", half, x, t), s.op("arith.addf", one, inner, t), t);
}

std::string geluGrad(Scalars& s, const std::string& g, const std::string& x, DType t, bool tanh) {
  if (tanh) {
    // d/dx 0.5x(1+tanh(u)), u = k(x + c x^3)
    double k = std::sqrt(2.0 / M_PI), c3 = 0.044715;
    std::string x2 = s.op("arith.mulf", x, x, t);
    std::string u =
        s.op("arith.mulf", s.constant(k, t),
             s.op("arith.addf", x, s.op("arith.mulf", s.constant(c3, t), s.op("arith.mulf", x2, x, t), t), t), t);
    std::string th = s.unary("math.tanh", u, t);
    std::string one = s.constant(1, t), half = s.constant(0.5, t);
    std::string left = s.op("arith.mulf", half, s.op("arith.addf", one, th, t), t);
    std::string sech2 = s.op("arith.subf", one, s.op("arith.mulf", th, th, t), t);
    std::string du = s.op("arith.mulf", s.constant(k, t),
                          s.op("arith.addf", one, s.op("arith.mulf", s.constant(3 * c3, t), x2, t), t), t);
    std::string right = s.op("arith.mulf", s.op("arith.mulf", s.op("arith.mulf", half, x, t), sech2, t), du, t);
    return s.op("arith.mulf", g, s.op("arith.addf", left, right, t), t);
  }
  std::string cdf =
      s.op("arith.mulf", s.constant(0.5, t),
           s.op("arith.addf", s.constant(1, t), erf(s, s.op("arith.mulf", x, s.constant(M_SQRT1_2, t), t), t), t), t);
  std::string pdf =
      s.op("arith.mulf", s.constant(0.5 * M_2_SQRTPI * M_SQRT1_2, t),
           s.unary("math.exp", s.op("arith.mulf", s.constant(-0.5, t), s.op("arith.mulf", x, x, t), t), t), t);
  return s.op("arith.mulf", g, s.op("arith.addf", cdf, s.op("arith.mulf", x, pdf, t), t), t);
}

std::string sigmoid(Scalars& s, const std::string& x, DType t) {
  std::string one = s.constant(1, t);
  std::string e = s.unary("math.exp", s.op("arith.subf", s.constant(0, t), x, t), t);
  return s.op("arith.divf", one, s.op("arith.addf", one, e, t), t);
}

bool tanhApproximation(const OpCall& c) {
  size_t i = c.index("approximate");
  return c.arg(i).kind == Value::Kind::Text && c.arg(i).text == "tanh";
}

// a << b or a >> b as PyTorch's CPU kernels shift: a count below zero or of the bit width or
// more gives 0 (left) or the sign fill, a >> (bits - 1) (right); unsigned types shift logically.
std::string shift(Scalars& s, const std::string& a, const std::string& b, DType t, bool left) {
  if (isFloat(t) || t == DType::Bool) throw Unsupported("a shift of a float or bool tensor (PyTorch rejects it)");
  bool u = isUnsigned(t);
  std::string bits = s.constant(bitWidth(t), t), zero = s.constant(0, t);
  std::string out = s.cmp(u ? "uge" : "sge", b, bits, t);
  if (!u) out = s.op("arith.ori", out, s.cmp("slt", b, zero, t), DType::Bool);
  const char* right = u ? "arith.shrui" : "arith.shrsi";
  std::string count = s.select(out, left ? zero : s.constant(bitWidth(t) - 1, t), b, t);
  std::string shifted = s.op(left ? "arith.shli" : right, a, count, t);
  return left ? s.select(out, zero, shifted, t) : shifted;
}

std::string maxOf(Scalars& s, const std::string& a, const std::string& b, DType t) {
  return s.op(isFloat(t) ? "arith.maximumf" : integerOp("arith.maxsi", t), a, b, t);
}
std::string minOf(Scalars& s, const std::string& a, const std::string& b, DType t) {
  return s.op(isFloat(t) ? "arith.minimumf" : integerOp("arith.minsi", t), a, b, t);
}

}  // namespace

void addElementwiseOps(OpTable& t) {
  for (const char* name : {"aten::add.Tensor", "aten::add.Scalar"}) t[name] = addLike(add);
  for (const char* name : {"aten::sub.Tensor", "aten::sub.Scalar"}) t[name] = addLike(sub);
  for (const char* name : {"aten::rsub.Tensor", "aten::rsub.Scalar"}) t[name] = addLike(sub, /*reversed=*/true);
  for (const char* name : {"aten::mul.Tensor", "aten::mul.Scalar"})
    t[name] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) { return mul(s, v[0], v[1], d); });
  // (a * b) + c, as the eager prims.fma computes it (Inductor's decompositions of optimizers and lerp leave it).
  t["prims::fma.default"] =
      map(3, [](Scalars& s, std::vector<std::string>& v, DType d) { return add(s, mul(s, v[0], v[1], d), v[2], d); });
  for (const char* name : {"aten::div.Tensor", "aten::div.Scalar", "aten::div.Tensor_mode", "aten::div.Scalar_mode"})
    t[name] = div();
  for (const char* name : {"aten::floor_divide.default", "aten::floor_divide.Scalar"}) t[name] = div("floor");
  for (const char* name : {"aten::remainder.Tensor", "aten::remainder.Scalar"})
    t[name] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) { return remainder(s, v[0], v[1], d); });
  for (const char* name : {"aten::fmod.Tensor", "aten::fmod.Scalar"})
    t[name] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) { return fmod(s, v[0], v[1], d); });
  t["aten::neg.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    if (d == DType::Bool) throw Unsupported("negation of a bool tensor (PyTorch rejects it)");
    if (isComplex(d)) return s.unary("complex.neg", v[0], d);
    return isFloat(d) ? s.unary("arith.negf", v[0], d) : s.op("arith.subi", s.constant(0, d), v[0], d);
  });
  t["aten::abs.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    if (isUnsigned(d)) return v[0];
    return isFloat(d) ? s.unary("math.absf", v[0], d) : s.unary("math.absi", v[0], d);
  });
  // sign: 0 for 0 and NaN, as PyTorch's (0 < x) - (x < 0); sgn is sign on real tensors.
  t["aten::sign.default"] = t["aten::sgn.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    if (d == DType::Bool) return v[0];
    std::string zero = s.constant(0, d);
    std::string r = s.select(compareOf(s, "ogt", "sgt", v[0], zero, d), s.constant(1, d), zero, d);
    return isUnsigned(d) ? r : s.select(compareOf(s, "olt", "slt", v[0], zero, d), s.constant(-1, d), r, d);
  });
  for (auto [name, op] : {std::pair{"aten::exp.default", "math.exp"}, {"aten::log.default", "math.log"},
                          {"aten::sqrt.default", "math.sqrt"},        {"aten::rsqrt.default", "math.rsqrt"},
                          {"aten::tanh.default", "math.tanh"},        {"aten::erf.default", "math.erf"},
                          {"aten::sin.default", "math.sin"},          {"aten::cos.default", "math.cos"},
                          {"aten::exp2.default", "math.exp2"},        {"aten::log2.default", "math.log2"},
                          {"aten::log10.default", "math.log10"},      {"aten::tan.default", "math.tan"},
                          {"aten::atan.default", "math.atan"},        {"aten::asin.default", "math.asin"},
                          {"aten::acos.default", "math.acos"},        {"aten::sinh.default", "math.sinh"},
                          {"aten::cosh.default", "math.cosh"},        {"aten::asinh.default", "math.asinh"},
                          {"aten::acosh.default", "math.acosh"},      {"aten::atanh.default", "math.atanh"}})
    t[name] = map(1, math(op));
  for (auto [name, op] : {std::pair{"aten::floor.default", "math.floor"},
                          {"aten::ceil.default", "math.ceil"},
                          {"aten::trunc.default", "math.trunc"},
                          {"aten::round.default", "math.roundeven"}})
    t[name] = map(1, rounding(op));
  t["aten::expm1.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    if (!isFloat(d)) throw Unsupported("expm1 of an integer tensor");
    return expm1(s, v[0], d);
  });
  t["aten::log1p.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    if (!isFloat(d)) throw Unsupported("log1p of an integer tensor");
    return log1p(s, v[0], d);
  });
  t["aten::atan2.default"] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) {
    if (!isFloat(d)) throw Unsupported("atan2 of integers into an integer result");
    return s.op("math.atan2", v[0], v[1], d);
  });
  t["aten::reciprocal.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    return s.op("arith.divf", s.constant(1, d), v[0], d);
  });
  t["aten::sigmoid.default"] =
      map(1, [](Scalars& s, std::vector<std::string>& v, DType d) { return sigmoid(s, v[0], d); });
  t["aten::silu.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    return s.op("arith.mulf", v[0], sigmoid(s, v[0], d), d);
  });
  t["aten::relu.default"] =
      map(1, [](Scalars& s, std::vector<std::string>& v, DType d) { return maxOf(s, v[0], s.constant(0, d), d); });
  // hardtanh(x, min, max) is clamp, NaN kept.
  t["aten::hardtanh.default"] = map(
      3, [](Scalars& s, std::vector<std::string>& v, DType d) { return minOf(s, maxOf(s, v[0], v[1], d), v[2], d); });
  t["aten::hardtanh_backward.default"] =
      map(4, [](Scalars& s, std::vector<std::string>& v, DType d) {  // g where min < x < max
        std::string outside = s.op("arith.ori", compareOf(s, "ole", "sle", v[1], v[2], d),
                                   compareOf(s, "oge", "sge", v[1], v[3], d), DType::Bool);
        return s.select(outside, s.constant(0, d), v[0], d);
      });
  t["aten::leaky_relu.default"] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) {
    return s.select(compareOf(s, "ogt", "sgt", v[0], s.constant(0, d), d), v[0], mul(s, v[0], v[1], d), d);
  });
  t["aten::leaky_relu_backward.default"] =
      map(3, [](Scalars& s, std::vector<std::string>& v, DType d) {  // x > 0 ? g : g * slope
        return s.select(compareOf(s, "ogt", "sgt", v[1], s.constant(0, d), d), v[0], mul(s, v[0], v[2], d), d);
      });
  // elu: x * scale for x > 0, else (exp(x * input_scale) - 1) * alpha * scale.
  t["aten::elu.default"] = map(4, [](Scalars& s, std::vector<std::string>& v, DType d) {
    if (!isFloat(d)) throw Unsupported("elu of an integer tensor");
    std::string negative =
        s.op("arith.mulf", expm1(s, s.op("arith.mulf", v[0], v[3], d), d), s.op("arith.mulf", v[1], v[2], d), d);
    return s.select(s.cmp("ole", v[0], s.constant(0, d), d), negative, s.op("arith.mulf", v[0], v[2], d), d);
  });
  // elu_backward(g, alpha, scale, input_scale, is_result, self_or_result): for y <= 0 the slope is
  // input_scale * (y + alpha * scale) from the result y, input_scale * alpha * scale * exp(x * input_scale) from x.
  t["aten::elu_backward.default"] = [](OpCall& c) {
    bool isResult = c.flag(4);
    DType d = arithmeticType(c, 6);
    return c.e.elementwise(
        c.out(), {c.arg(0), c.arg(1), c.arg(2), c.arg(3), c.arg(5)}, d, [&](Scalars& s, std::vector<std::string>& v) {
          if (!isFloat(d)) throw Unsupported("elu_backward of an integer tensor");
          std::string negcoef = s.op("arith.mulf", v[1], v[2], d), y = v[4];
          std::string slope = isResult ? s.op("arith.mulf", v[3], s.op("arith.addf", y, negcoef, d), d)
                                       : s.op("arith.mulf", s.op("arith.mulf", v[3], negcoef, d),
                                              s.unary("math.exp", s.op("arith.mulf", y, v[3], d), d), d);
          std::string negative = s.op("arith.mulf", v[0], slope, d);
          return s.select(s.cmp("ole", y, s.constant(0, d), d), negative, s.op("arith.mulf", v[0], v[2], d), d);
        });
  };
  t["aten::gelu.default"] = [](OpCall& c) {
    bool approx = tanhApproximation(c);
    return map(1, [approx](Scalars& s, std::vector<std::string>& v, DType d) { return gelu(s, v[0], d, approx); })(c);
  };
  t["aten::gelu_backward.default"] = [](OpCall& c) {
    bool approx = tanhApproximation(c);
    return map(2, [approx](Scalars& s, std::vector<std::string>& v, DType d) {
      return geluGrad(s, v[0], v[1], d, approx);
    })(c);
  };
  t["aten::tanh_backward.default"] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) {  // g * (1 - y^2)
    return s.op("arith.mulf", v[0], s.op("arith.subf", s.constant(1, d), s.op("arith.mulf", v[1], v[1], d), d), d);
  });
  t["aten::sigmoid_backward.default"] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) {  // g * y (1 - y)
    return s.op("arith.mulf", v[0], s.op("arith.mulf", v[1], s.op("arith.subf", s.constant(1, d), v[1], d), d), d);
  });
  t["aten::threshold_backward.default"] =
      map(3, [](Scalars& s, std::vector<std::string>& v, DType d) {  // g where x > threshold
        return s.select(compareOf(s, "ogt", "sgt", v[1], v[2], d), v[0], s.constant(0, d), d);
      });
  for (const char* name : {"aten::pow.Tensor_Scalar", "aten::pow.Tensor_Tensor", "aten::pow.Scalar"})
    t[name] = [](OpCall& c) {
      const Value& e = c.arg(1);
      DType d = arithmeticType(c, 2);
      return c.e.elementwise(c.out(), {c.arg(0), e}, d, [&](Scalars& s, std::vector<std::string>& v) {
        if (e.isConst() && e.number == 2) return mul(s, v[0], v[0], d);
        if (e.isConst() && e.number == 0.5 && isFloat(d)) return s.unary("math.sqrt", v[0], d);
        if (!isFloat(d)) return integerPow(s, v[0], v[1], d);
        return s.op("math.powf", v[0], v[1], d);
      });
    };
  for (const char* name : {"aten::maximum.default", "aten::max.other"})
    t[name] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) { return maxOf(s, v[0], v[1], d); });
  for (const char* name : {"aten::minimum.default", "aten::min.other"})
    t[name] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) { return minOf(s, v[0], v[1], d); });
  for (const char* name : {"aten::clamp_min.default", "aten::clamp_min.Tensor"})
    t[name] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) { return maxOf(s, v[0], v[1], d); });
  for (const char* name : {"aten::clamp_max.default", "aten::clamp_max.Tensor"})
    t[name] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) { return minOf(s, v[0], v[1], d); });
  for (const char* name : {"aten::clamp.default", "aten::clamp.Tensor"})
    t[name] = [](OpCall& c) {
      DType d = arithmeticType(c, 1);
      std::vector<Value> ins = {c.arg(0)};
      bool lo = !c.none(1), hi = !c.none(2);
      if (lo) ins.push_back(c.arg(1));
      if (hi) ins.push_back(c.arg(2));
      return c.e.elementwise(c.out(), ins, d, [&](Scalars& s, std::vector<std::string>& v) {
        std::string x = v[0];
        if (lo) x = maxOf(s, x, v[1], d);
        if (hi) x = minOf(s, x, v[lo ? 2 : 1], d);
        return x;
      });
    };
  // Comparisons: computed in the promoted dtype of both sides, giving bool; a number beside a
  // bool tensor compares as int64 or float (True < 2), not as a bool.
  for (auto [op, f, i] : {std::tuple{"eq", "oeq", "eq"},
                          {"ne", "une", "ne"},
                          {"lt", "olt", "slt"},
                          {"le", "ole", "sle"},
                          {"gt", "ogt", "sgt"},
                          {"ge", "oge", "sge"}})
    for (const char* overload : {".Tensor", ".Scalar"}) {
      auto body = compare(f, i);
      t[std::string("aten::") + op + overload] = [body](OpCall& c) {
        DType d = c.arg(0).isTensor() ? c.arg(0).type.dtype : DType::F32;
        if (c.arg(1).isTensor())
          d = promote(d, c.arg(1).type.dtype);
        else if (c.arg(1).kind == Value::Kind::Float && !isFloat(d) && !isComplex(d))
          d = DType::F32;
        else if (c.arg(1).kind == Value::Kind::Int && d == DType::Bool)
          d = DType::I64;
        d = computeType(d);
        return c.e.elementwise(
            c.out(), {c.arg(0), c.arg(1)}, d, [&](Scalars& s, std::vector<std::string>& v) { return body(s, v, d); },
            true);
      };
    }
  for (auto [name, op] : {std::pair{"aten::logical_and.default", "arith.andi"},
                          {"aten::logical_or.default", "arith.ori"},
                          {"aten::logical_xor.default", "arith.xori"}})
    t[name] = [op = std::string(op)](OpCall& c) {
      return c.e.elementwise(
          c.out(), {c.arg(0), c.arg(1)}, DType::Bool,
          [&](Scalars& s, std::vector<std::string>& v) { return s.op(op, v[0], v[1], DType::Bool); }, true);
    };
  t["aten::isnan.default"] = map(
      1,
      [](Scalars& s, std::vector<std::string>& v, DType d) {
        if (isComplex(d)) throw Unsupported("isnan of a complex tensor is not lowered");
        return isFloat(d) ? s.cmp("uno", v[0], v[0], d) : s.constant(0, DType::Bool);
      },
      true);
  t["aten::isinf.default"] = map(
      1,
      [](Scalars& s, std::vector<std::string>& v, DType d) {
        if (isComplex(d)) throw Unsupported("isinf of a complex tensor is not lowered");
        return isFloat(d) ? s.cmp("oeq", s.unary("math.absf", v[0], d), s.constant(HUGE_VAL, d), d)
                          : s.constant(0, DType::Bool);
      },
      true);
  t["aten::logical_not.default"] = [](OpCall& c) {
    return c.e.elementwise(
        c.out(), {c.arg(0)}, DType::Bool,
        [&](Scalars& s, std::vector<std::string>& v) {
          return s.op("arith.xori", v[0], s.constant(1, DType::Bool), DType::Bool);
        },
        true);
  };
  for (auto [name, op] : {std::pair{"aten::bitwise_and.Tensor", "arith.andi"},
                          {"aten::bitwise_or.Tensor", "arith.ori"},
                          {"aten::bitwise_xor.Tensor", "arith.xori"},
                          {"aten::bitwise_and.Scalar", "arith.andi"},
                          {"aten::bitwise_or.Scalar", "arith.ori"},
                          {"aten::bitwise_xor.Scalar", "arith.xori"}})
    t[name] = map(2, [op = std::string(op)](Scalars& s, std::vector<std::string>& v, DType d) {
      if (isFloat(d)) throw Unsupported("bitwise operation on a float tensor");
      return s.op(op, v[0], v[1], d);
    });
  for (bool left : {true, false}) {
    std::string py = left ? "aten::__lshift__" : "aten::__rshift__";
    std::string named = left ? "aten::bitwise_left_shift" : "aten::bitwise_right_shift";
    for (const std::string& name :
         {py + ".Tensor", py + ".Scalar", named + ".Tensor", named + ".Tensor_Scalar", named + ".Scalar_Tensor"})
      t[name] =
          map(2, [left](Scalars& s, std::vector<std::string>& v, DType d) { return shift(s, v[0], v[1], d, left); });
  }
  t["aten::bitwise_not.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    if (isFloat(d)) throw Unsupported("bitwise_not of a float tensor");
    return s.op("arith.xori", v[0], s.constant(d == DType::Bool ? 1 : -1, d), d);
  });
  for (const char* name :
       {"aten::where.self", "aten::where.ScalarSelf", "aten::where.ScalarOther", "aten::where.Scalar"})
    t[name] = [](OpCall& c) {
      DType d = computeType(c.out().dtype);
      return c.e.elementwise(c.out(), {c.arg(0), c.arg(1), c.arg(2)}, d, [&](Scalars& s, std::vector<std::string>& v) {
        std::string cond = c.arg(0).isTensor() ? s.cast(v[0], d, DType::Bool) : v[0];
        return s.select(cond, v[1], v[2], d);
      });
    };
  t["aten::masked_fill.Scalar"] = t["aten::masked_fill.Tensor"] = [](OpCall& c) {
    DType d = computeType(c.out().dtype);
    return c.e.elementwise(c.out(), {c.arg(0), c.arg(1), c.arg(2)}, d, [&](Scalars& s, std::vector<std::string>& v) {
      return s.select(s.cast(v[1], d, DType::Bool), v[2], v[0], d);
    });
  };
  // Copies and casts: the IR's output dtype says what to convert to.
  for (const char* name :
       {"aten::clone.default", "aten::_to_copy.default", "aten::lift_fresh_copy.default", "aten::detach.default",
        "aten::alias.default", "aten::contiguous.default", "aten::_copy.default", "prims::convert_element_type.default",
        "aten::to.dtype", "aten::type_as.default", "aten::positive.default"})
    t[name] = [](OpCall& c) {
      const Value& x = c.tensor(0);
      return x.type.str() == c.out().str() ? x : c.e.copyInto(x, c.out());
    };
  // copy_(dst, src): the functional result is src broadcast into dst's shape and dtype.
  t["aten::copy_.default"] = t["aten::copy.default"] = [](OpCall& c) { return c.e.copyInto(c.tensor(1), c.out()); };
  // Dropout that drops nothing (p = 0, or eval): the mask is all true. Dropout that draws is
  // not lowered here: its outputs are inputs of the lowered function (random_ops.h).
  t["aten::native_dropout.default"] = [](OpCall& c) {
    double p = c.real(1);
    bool train = c.none(2) || c.flag(2);
    if (p != 0 && train) throw Unsupported("dropout with a symbolic p");
    Value y = c.e.copyInto(c.tensor(0), c.out(0));
    Value mask = Value::tensor(c.e.fill(c.out(1), 1), c.out(1));
    return Value::list({y, mask});
  };
  t["aten::native_dropout_backward.default"] =
      map(3, [](Scalars& s, std::vector<std::string>& v, DType d) {  // g * mask * scale
        return s.op("arith.mulf", s.op("arith.mulf", v[0], v[1], d), v[2], d);
      });
}

}  // namespace dynrep::replay::lowering
