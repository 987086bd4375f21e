// The scalar arithmetic of elementwise lowerings (ops/elementwise.cc): the MLIR ops that compute
// one element as PyTorch's CPU kernels do, each in the compute type it is given.
#include "scalar_math.h"

#include <cmath>

namespace dynrep::replay::lowering {

namespace {

// Bool and uint8 hold unsigned values (True is 1 in i1, not -1): their integer comparisons,
// min/max and divisions take the unsigned forms. `op` is the signed one ("slt", "arith.maxsi").
std::string integerOp(const std::string& op, DType t) {
  if (!isUnsigned(t)) return op;
  if (op == "slt" || op == "sle" || op == "sgt" || op == "sge") return "u" + op.substr(1);
  size_t si = op.rfind("si");
  return si != std::string::npos && si + 2 == op.size() ? op.substr(0, si) + "ui" : op;
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

std::string erf(Scalars& s, const std::string& x, DType t) { return s.unary("math.erf", x, t); }

}  // namespace

std::string compareOf(Scalars& s, const char* floatPred, const char* intPred, const std::string& a,
                      const std::string& b, DType t) {
  return s.cmp(isFloat(t) ? floatPred : integerOp(intPred, t), a, b, t);
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

}  // namespace dynrep::replay::lowering
