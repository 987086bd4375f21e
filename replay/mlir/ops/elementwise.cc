// Elementwise operators: each is a body over scalars in the compute type (float32 for float16
// and bfloat16, as PyTorch's CPU kernels compute), broadcast as PyTorch broadcasts. Most are rows
// of kMapRows (a scalar body over the operands); those that read more of the call are rows of
// kCallRows. The scalar arithmetic is ops/scalar_math.cc's.
#include <cmath>

#include "ops.h"
#include "scalar_math.h"

namespace dynrep::replay::lowering {

namespace {

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

// a + alpha * b (add, sub with alpha); rsub(a, b, alpha) is b - alpha * a.
Value addLike(OpCall& c, std::string (*combine)(Scalars&, const std::string&, const std::string&, DType),
              bool reversed = false) {
  DType t = arithmeticType(c, 2);
  std::vector<Value> ins = {c.arg(reversed ? 1 : 0), c.arg(reversed ? 0 : 1)};
  bool alpha = c.args.size() > 2 && !c.none(2) && !(c.arg(2).isConst() && c.arg(2).number == 1);
  if (alpha) ins.push_back(c.arg(2));
  return c.e.elementwise(c.out(), ins, t, [&](Scalars& s, std::vector<std::string>& v) {
    return combine(s, v[0], alpha ? mul(s, v[1], v[2], t) : v[1], t);
  });
}

// div, its rounding mode from the call; floor_divide is div's floor mode.
Value div(OpCall& c, const std::string& fixedMode = "") {
  std::string mode = fixedMode;
  if (c.names.size() > 2 && c.names[2] == "rounding_mode" && c.arg(2).kind == Value::Kind::Text) mode = c.arg(2).text;
  DType t = arithmeticType(c, 2);
  if (mode.empty() && !isFloat(t)) t = computeType(c.out().dtype);
  return c.e.elementwise(c.out(), {c.arg(0), c.arg(1)}, t, [&](Scalars& s, std::vector<std::string>& v) {
    return divide(s, v[0], v[1], t, c.out().dtype, mode);
  });
}

bool tanhApproximation(const OpCall& c) {
  size_t i = c.index("approximate");
  return c.arg(i).kind == Value::Kind::Text && c.arg(i).text == "tanh";
}

// The dtype an elementwise row computes in.
enum class ComputeIn {
  Arithmetic,  // arithmeticType: the result's, or the operands' where the result is a predicate
  Comparison,  // the promoted dtype of both sides; a number beside a bool tensor as int64 or float
  Bool,        // i1: the logical operators
  Result,      // the result's: selects
};

// Comparisons are computed in the promoted dtype of both sides, giving bool; a number beside a
// bool tensor compares as int64 or float (True < 2), not as a bool.
DType comparisonType(const OpCall& c) {
  DType d = c.arg(0).isTensor() ? c.arg(0).type.dtype : DType::F32;
  if (c.arg(1).isTensor())
    d = promote(d, c.arg(1).type.dtype);
  else if (c.arg(1).kind == Value::Kind::Float && !isFloat(d) && !isComplex(d))
    d = DType::F32;
  else if (c.arg(1).kind == Value::Kind::Int && d == DType::Bool)
    d = DType::I64;
  return computeType(d);
}

DType rowDType(const OpCall& c, ComputeIn in, size_t arity) {
  switch (in) {
    case ComputeIn::Arithmetic: return arithmeticType(c, arity);
    case ComputeIn::Comparison: return comparisonType(c);
    case ComputeIn::Bool: return DType::Bool;
    case ComputeIn::Result: return computeType(c.out().dtype);
  }
  throw Unsupported("an elementwise row without a compute dtype");  // not reached: every rule is handled above
}

// The first `arity` arguments, broadcast, through `body` in dtype t.
Value mapped(OpCall& c, size_t arity, DType t, const std::function<std::string(Scalars&, Strings&)>& body,
             bool boolResult = false) {
  std::vector<Value> ins;
  for (size_t i = 0; i < arity; ++i) ins.push_back(c.arg(i));
  return c.e.elementwise(c.out(), ins, t, body, boolResult);
}

struct MapRow;
// A row's scalar body over its operands `v` in dtype `t`.
using ScalarBody = std::string (*)(Scalars& s, Strings& v, DType t, const MapRow& row);

// An elementwise operator whose result is a scalar body over its first `arity` arguments,
// broadcast as PyTorch broadcasts: one row per aten overload.
struct MapRow {
  const char* name;  // aten::exp.default
  size_t arity;
  ScalarBody body;
  const char* op = nullptr;     // the MLIR op, or float predicate, of a body shared by rows: math.exp, oeq
  const char* intOp = nullptr;  // a comparison's signed integer predicate: slt
  ComputeIn in = ComputeIn::Arithmetic;
  bool boolResult = false;  // a predicate: i1 whatever the operands' dtype
};

// The bodies rows share, each building the row's op.
std::string mathBody(Scalars& s, Strings& v, DType t, const MapRow& row) {
  if (isComplex(t)) throw Unsupported(std::string(row.op) + " of a complex tensor is not lowered");
  if (!isFloat(t)) throw Unsupported(std::string(row.op) + " of an integer tensor");
  return s.unary(row.op, v[0], t);
}
// ceil, floor, round, trunc: an integer tensor is returned as it is, as PyTorch does.
std::string roundingBody(Scalars& s, Strings& v, DType t, const MapRow& row) {
  if (isComplex(t)) throw Unsupported(std::string(row.op) + " of a complex tensor (PyTorch rejects it)");
  return isFloat(t) ? s.unary(row.op, v[0], t) : v[0];
}
std::string compareBody(Scalars& s, Strings& v, DType t, const MapRow& row) {
  return compareOf(s, row.op, row.intOp, v[0], v[1], t);
}
std::string logicalBody(Scalars& s, Strings& v, DType, const MapRow& row) {
  return s.op(row.op, v[0], v[1], DType::Bool);
}
std::string bitwiseBody(Scalars& s, Strings& v, DType t, const MapRow& row) {
  if (isFloat(t)) throw Unsupported("bitwise operation on a float tensor");
  return s.op(row.op, v[0], v[1], t);
}
std::string shiftLeftBody(Scalars& s, Strings& v, DType t, const MapRow&) { return shift(s, v[0], v[1], t, true); }
std::string shiftRightBody(Scalars& s, Strings& v, DType t, const MapRow&) { return shift(s, v[0], v[1], t, false); }
std::string mulBody(Scalars& s, Strings& v, DType t, const MapRow&) { return mul(s, v[0], v[1], t); }
std::string maxBody(Scalars& s, Strings& v, DType t, const MapRow&) { return maxOf(s, v[0], v[1], t); }
std::string minBody(Scalars& s, Strings& v, DType t, const MapRow&) { return minOf(s, v[0], v[1], t); }
std::string remainderBody(Scalars& s, Strings& v, DType t, const MapRow&) { return remainder(s, v[0], v[1], t); }
std::string fmodBody(Scalars& s, Strings& v, DType t, const MapRow&) { return fmod(s, v[0], v[1], t); }
// sign: 0 for 0 and NaN, as PyTorch's (0 < x) - (x < 0); sgn is sign on real tensors.
std::string signBody(Scalars& s, Strings& v, DType d, const MapRow&) {
  if (d == DType::Bool) return v[0];
  std::string zero = s.constant(0, d);
  std::string r = s.select(compareOf(s, "ogt", "sgt", v[0], zero, d), s.constant(1, d), zero, d);
  return isUnsigned(d) ? r : s.select(compareOf(s, "olt", "slt", v[0], zero, d), s.constant(-1, d), r, d);
}

const MapRow kMapRows[] = {
    {"aten::mul.Tensor", 2, mulBody},
    {"aten::mul.Scalar", 2, mulBody},
    // (a * b) + c, as the eager prims.fma computes it (Inductor's decompositions of optimizers and lerp leave it).
    {"prims::fma.default", 3,
     [](Scalars& s, Strings& v, DType d, const MapRow&) { return add(s, mul(s, v[0], v[1], d), v[2], d); }},
    {"aten::remainder.Tensor", 2, remainderBody},
    {"aten::remainder.Scalar", 2, remainderBody},
    {"aten::fmod.Tensor", 2, fmodBody},
    {"aten::fmod.Scalar", 2, fmodBody},
    {"aten::neg.default", 1,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {
       if (d == DType::Bool) throw Unsupported("negation of a bool tensor (PyTorch rejects it)");
       if (isComplex(d)) return s.unary("complex.neg", v[0], d);
       return isFloat(d) ? s.unary("arith.negf", v[0], d) : s.op("arith.subi", s.constant(0, d), v[0], d);
     }},
    {"aten::abs.default", 1,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {
       if (isUnsigned(d)) return v[0];
       return isFloat(d) ? s.unary("math.absf", v[0], d) : s.unary("math.absi", v[0], d);
     }},
    {"aten::sign.default", 1, signBody},
    {"aten::sgn.default", 1, signBody},
    {"aten::exp.default", 1, mathBody, "math.exp"},
    {"aten::log.default", 1, mathBody, "math.log"},
    {"aten::sqrt.default", 1, mathBody, "math.sqrt"},
    {"aten::rsqrt.default", 1, mathBody, "math.rsqrt"},
    {"aten::tanh.default", 1, mathBody, "math.tanh"},
    {"aten::erf.default", 1, mathBody, "math.erf"},
    {"aten::sin.default", 1, mathBody, "math.sin"},
    {"aten::cos.default", 1, mathBody, "math.cos"},
    {"aten::exp2.default", 1, mathBody, "math.exp2"},
    {"aten::log2.default", 1, mathBody, "math.log2"},
    {"aten::log10.default", 1, mathBody, "math.log10"},
    {"aten::tan.default", 1, mathBody, "math.tan"},
    {"aten::atan.default", 1, mathBody, "math.atan"},
    {"aten::asin.default", 1, mathBody, "math.asin"},
    {"aten::acos.default", 1, mathBody, "math.acos"},
    {"aten::sinh.default", 1, mathBody, "math.sinh"},
    {"aten::cosh.default", 1, mathBody, "math.cosh"},
    {"aten::asinh.default", 1, mathBody, "math.asinh"},
    {"aten::acosh.default", 1, mathBody, "math.acosh"},
    {"aten::atanh.default", 1, mathBody, "math.atanh"},
    {"aten::floor.default", 1, roundingBody, "math.floor"},
    {"aten::ceil.default", 1, roundingBody, "math.ceil"},
    {"aten::trunc.default", 1, roundingBody, "math.trunc"},
    {"aten::round.default", 1, roundingBody, "math.roundeven"},
    {"aten::expm1.default", 1,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {
       if (!isFloat(d)) throw Unsupported("expm1 of an integer tensor");
       return expm1(s, v[0], d);
     }},
    {"aten::log1p.default", 1,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {
       if (!isFloat(d)) throw Unsupported("log1p of an integer tensor");
       return log1p(s, v[0], d);
     }},
    {"aten::atan2.default", 2,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {
       if (!isFloat(d)) throw Unsupported("atan2 of integers into an integer result");
       return s.op("math.atan2", v[0], v[1], d);
     }},
    {"aten::reciprocal.default", 1,
     [](Scalars& s, Strings& v, DType d, const MapRow&) { return s.op("arith.divf", s.constant(1, d), v[0], d); }},
    {"aten::sigmoid.default", 1, [](Scalars& s, Strings& v, DType d, const MapRow&) { return sigmoid(s, v[0], d); }},
    {"aten::silu.default", 1,
     [](Scalars& s, Strings& v, DType d, const MapRow&) { return s.op("arith.mulf", v[0], sigmoid(s, v[0], d), d); }},
    {"aten::relu.default", 1,
     [](Scalars& s, Strings& v, DType d, const MapRow&) { return maxOf(s, v[0], s.constant(0, d), d); }},
    // hardtanh(x, min, max) is clamp, NaN kept.
    {"aten::hardtanh.default", 3,
     [](Scalars& s, Strings& v, DType d, const MapRow&) { return minOf(s, maxOf(s, v[0], v[1], d), v[2], d); }},
    {"aten::hardtanh_backward.default", 4,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {  // g where min < x < max
       std::string outside = s.op("arith.ori", compareOf(s, "ole", "sle", v[1], v[2], d),
                                  compareOf(s, "oge", "sge", v[1], v[3], d), DType::Bool);
       return s.select(outside, s.constant(0, d), v[0], d);
     }},
    {"aten::leaky_relu.default", 2,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {
       return s.select(compareOf(s, "ogt", "sgt", v[0], s.constant(0, d), d), v[0], mul(s, v[0], v[1], d), d);
     }},
    {"aten::leaky_relu_backward.default", 3,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {  // x > 0 ? g : g * slope
       return s.select(compareOf(s, "ogt", "sgt", v[1], s.constant(0, d), d), v[0], mul(s, v[0], v[2], d), d);
     }},
    // elu: x * scale for x > 0, else (exp(x * input_scale) - 1) * alpha * scale.
    {"aten::elu.default", 4,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {
       if (!isFloat(d)) throw Unsupported("elu of an integer tensor");
       std::string negative =
           s.op("arith.mulf", expm1(s, s.op("arith.mulf", v[0], v[3], d), d), s.op("arith.mulf", v[1], v[2], d), d);
       return s.select(s.cmp("ole", v[0], s.constant(0, d), d), negative, s.op("arith.mulf", v[0], v[2], d), d);
     }},
    {"aten::tanh_backward.default", 2,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {  // g * (1 - y^2)
       return s.op("arith.mulf", v[0], s.op("arith.subf", s.constant(1, d), s.op("arith.mulf", v[1], v[1], d), d), d);
     }},
    {"aten::sigmoid_backward.default", 2,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {  // g * y (1 - y)
       return s.op("arith.mulf", v[0], s.op("arith.mulf", v[1], s.op("arith.subf", s.constant(1, d), v[1], d), d), d);
     }},
    {"aten::threshold_backward.default", 3,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {  // g where x > threshold
       return s.select(compareOf(s, "ogt", "sgt", v[1], v[2], d), v[0], s.constant(0, d), d);
     }},
    {"aten::maximum.default", 2, maxBody},
    {"aten::max.other", 2, maxBody},
    {"aten::clamp_min.default", 2, maxBody},
    {"aten::clamp_min.Tensor", 2, maxBody},
    {"aten::minimum.default", 2, minBody},
    {"aten::min.other", 2, minBody},
    {"aten::clamp_max.default", 2, minBody},
    {"aten::clamp_max.Tensor", 2, minBody},
    {"aten::eq.Tensor", 2, compareBody, "oeq", "eq", ComputeIn::Comparison, true},
    {"aten::eq.Scalar", 2, compareBody, "oeq", "eq", ComputeIn::Comparison, true},
    {"aten::ne.Tensor", 2, compareBody, "une", "ne", ComputeIn::Comparison, true},
    {"aten::ne.Scalar", 2, compareBody, "une", "ne", ComputeIn::Comparison, true},
    {"aten::lt.Tensor", 2, compareBody, "olt", "slt", ComputeIn::Comparison, true},
    {"aten::lt.Scalar", 2, compareBody, "olt", "slt", ComputeIn::Comparison, true},
    {"aten::le.Tensor", 2, compareBody, "ole", "sle", ComputeIn::Comparison, true},
    {"aten::le.Scalar", 2, compareBody, "ole", "sle", ComputeIn::Comparison, true},
    {"aten::gt.Tensor", 2, compareBody, "ogt", "sgt", ComputeIn::Comparison, true},
    {"aten::gt.Scalar", 2, compareBody, "ogt", "sgt", ComputeIn::Comparison, true},
    {"aten::ge.Tensor", 2, compareBody, "oge", "sge", ComputeIn::Comparison, true},
    {"aten::ge.Scalar", 2, compareBody, "oge", "sge", ComputeIn::Comparison, true},
    {"aten::logical_and.default", 2, logicalBody, "arith.andi", nullptr, ComputeIn::Bool, true},
    {"aten::logical_or.default", 2, logicalBody, "arith.ori", nullptr, ComputeIn::Bool, true},
    {"aten::logical_xor.default", 2, logicalBody, "arith.xori", nullptr, ComputeIn::Bool, true},
    {"aten::logical_not.default", 1,
     [](Scalars& s, Strings& v, DType, const MapRow&) {
       return s.op("arith.xori", v[0], s.constant(1, DType::Bool), DType::Bool);
     },
     nullptr, nullptr, ComputeIn::Bool, true},
    {"aten::isnan.default", 1,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {
       if (isComplex(d)) throw Unsupported("isnan of a complex tensor is not lowered");
       return isFloat(d) ? s.cmp("uno", v[0], v[0], d) : s.constant(0, DType::Bool);
     },
     nullptr, nullptr, ComputeIn::Arithmetic, true},
    {"aten::isinf.default", 1,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {
       if (isComplex(d)) throw Unsupported("isinf of a complex tensor is not lowered");
       return isFloat(d) ? s.cmp("oeq", s.unary("math.absf", v[0], d), s.constant(HUGE_VAL, d), d)
                         : s.constant(0, DType::Bool);
     },
     nullptr, nullptr, ComputeIn::Arithmetic, true},
    {"aten::bitwise_and.Tensor", 2, bitwiseBody, "arith.andi"},
    {"aten::bitwise_or.Tensor", 2, bitwiseBody, "arith.ori"},
    {"aten::bitwise_xor.Tensor", 2, bitwiseBody, "arith.xori"},
    {"aten::bitwise_and.Scalar", 2, bitwiseBody, "arith.andi"},
    {"aten::bitwise_or.Scalar", 2, bitwiseBody, "arith.ori"},
    {"aten::bitwise_xor.Scalar", 2, bitwiseBody, "arith.xori"},
    {"aten::__lshift__.Tensor", 2, shiftLeftBody},
    {"aten::__lshift__.Scalar", 2, shiftLeftBody},
    {"aten::bitwise_left_shift.Tensor", 2, shiftLeftBody},
    {"aten::bitwise_left_shift.Tensor_Scalar", 2, shiftLeftBody},
    {"aten::bitwise_left_shift.Scalar_Tensor", 2, shiftLeftBody},
    {"aten::__rshift__.Tensor", 2, shiftRightBody},
    {"aten::__rshift__.Scalar", 2, shiftRightBody},
    {"aten::bitwise_right_shift.Tensor", 2, shiftRightBody},
    {"aten::bitwise_right_shift.Tensor_Scalar", 2, shiftRightBody},
    {"aten::bitwise_right_shift.Scalar_Tensor", 2, shiftRightBody},
    {"aten::bitwise_not.default", 1,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {
       if (isFloat(d)) throw Unsupported("bitwise_not of a float tensor");
       return s.op("arith.xori", v[0], s.constant(d == DType::Bool ? 1 : -1, d), d);
     }},
    {"aten::masked_fill.Scalar", 3,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {
       return s.select(s.cast(v[1], d, DType::Bool), v[2], v[0], d);
     },
     nullptr, nullptr, ComputeIn::Result},
    {"aten::masked_fill.Tensor", 3,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {
       return s.select(s.cast(v[1], d, DType::Bool), v[2], v[0], d);
     },
     nullptr, nullptr, ComputeIn::Result},
    {"aten::native_dropout_backward.default", 3,
     [](Scalars& s, Strings& v, DType d, const MapRow&) {  // g * mask * scale
       return s.op("arith.mulf", s.op("arith.mulf", v[0], v[1], d), v[2], d);
     }},
};

LowerFn lowerRow(const MapRow& row) {
  return [&row](OpCall& c) {
    DType t = rowDType(c, row.in, row.arity);
    return mapped(c, row.arity, t, [&](Scalars& s, Strings& v) { return row.body(s, v, t, row); }, row.boolResult);
  };
}

// elu_backward(g, alpha, scale, input_scale, is_result, self_or_result): for y <= 0 the slope is
// input_scale * (y + alpha * scale) from the result y, input_scale * alpha * scale * exp(x * input_scale) from x.
Value eluBackward(OpCall& c) {
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
}

Value power(OpCall& c) {
  const Value& e = c.arg(1);
  DType d = arithmeticType(c, 2);
  return c.e.elementwise(c.out(), {c.arg(0), e}, d, [&](Scalars& s, std::vector<std::string>& v) {
    if (e.isConst() && e.number == 2) return mul(s, v[0], v[0], d);
    if (e.isConst() && e.number == 0.5 && isFloat(d)) return s.unary("math.sqrt", v[0], d);
    if (!isFloat(d)) return integerPow(s, v[0], v[1], d);
    return s.op("math.powf", v[0], v[1], d);
  });
}

Value clamp(OpCall& c) {
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
}

Value where(OpCall& c) {
  DType d = computeType(c.out().dtype);
  return c.e.elementwise(c.out(), {c.arg(0), c.arg(1), c.arg(2)}, d, [&](Scalars& s, std::vector<std::string>& v) {
    std::string cond = c.arg(0).isTensor() ? s.cast(v[0], d, DType::Bool) : v[0];
    return s.select(cond, v[1], v[2], d);
  });
}

// Copies and casts: the IR's output dtype says what to convert to.
// uint8 and int8 are both MLIR's i8: a cast between them keeps the bytes and takes the new dtype
// (the outputs' dtypes say which the bytes are).
Value castCopy(OpCall& c) {
  const Value& x = c.tensor(0);
  if (x.type.str() != c.out().str()) return c.e.copyInto(x, c.out());
  Value y = x;
  y.type = c.out();
  return y;
}

// Dropout that drops nothing (p = 0, or eval): the mask is all true. Dropout that draws is
// not lowered here: its outputs are inputs of the lowered function (random_ops.h).
Value dropout(OpCall& c) {
  double p = c.real(1);
  bool train = c.none(2) || c.flag(2);
  if (p != 0 && train) throw Unsupported("dropout with a symbolic p");
  Value y = c.e.copyInto(c.tensor(0), c.out(0));
  Value mask = Value::tensor(c.e.fill(c.out(1), 1), c.out(1));
  return Value::list({y, mask});
}

// The elementwise operators whose lowering reads more of the call than its operands.
const OpRow kCallRows[] = {
    {"aten::add.Tensor", [](OpCall& c) { return addLike(c, add); }},
    {"aten::add.Scalar", [](OpCall& c) { return addLike(c, add); }},
    {"aten::sub.Tensor", [](OpCall& c) { return addLike(c, sub); }},
    {"aten::sub.Scalar", [](OpCall& c) { return addLike(c, sub); }},
    {"aten::rsub.Tensor", [](OpCall& c) { return addLike(c, sub, /*reversed=*/true); }},
    {"aten::rsub.Scalar", [](OpCall& c) { return addLike(c, sub, /*reversed=*/true); }},
    {"aten::div.Tensor", [](OpCall& c) { return div(c); }},
    {"aten::div.Scalar", [](OpCall& c) { return div(c); }},
    {"aten::div.Tensor_mode", [](OpCall& c) { return div(c); }},
    {"aten::div.Scalar_mode", [](OpCall& c) { return div(c); }},
    {"aten::floor_divide.default", [](OpCall& c) { return div(c, "floor"); }},
    {"aten::floor_divide.Scalar", [](OpCall& c) { return div(c, "floor"); }},
    {"aten::elu_backward.default", eluBackward},
    {"aten::gelu.default",
     [](OpCall& c) {
       bool approx = tanhApproximation(c);
       DType d = arithmeticType(c, 1);
       return mapped(c, 1, d, [&](Scalars& s, Strings& v) { return gelu(s, v[0], d, approx); });
     }},
    {"aten::gelu_backward.default",
     [](OpCall& c) {
       bool approx = tanhApproximation(c);
       DType d = arithmeticType(c, 2);
       return mapped(c, 2, d, [&](Scalars& s, Strings& v) { return geluGrad(s, v[0], v[1], d, approx); });
     }},
    {"aten::pow.Tensor_Scalar", power},
    {"aten::pow.Tensor_Tensor", power},
    {"aten::pow.Scalar", power},
    {"aten::clamp.default", clamp},
    {"aten::clamp.Tensor", clamp},
    {"aten::where.self", where},
    {"aten::where.ScalarSelf", where},
    {"aten::where.ScalarOther", where},
    {"aten::where.Scalar", where},
    {"aten::clone.default", castCopy},
    {"aten::_to_copy.default", castCopy},
    {"aten::lift_fresh_copy.default", castCopy},
    {"aten::detach.default", castCopy},
    {"aten::alias.default", castCopy},
    {"aten::contiguous.default", castCopy},
    {"aten::_copy.default", castCopy},
    {"prims::convert_element_type.default", castCopy},
    {"aten::to.dtype", castCopy},
    {"aten::type_as.default", castCopy},
    {"aten::positive.default", castCopy},
    // copy_(dst, src): the functional result is src broadcast into dst's shape and dtype.
    {"aten::copy_.default", [](OpCall& c) { return c.e.copyInto(c.tensor(1), c.out()); }},
    {"aten::copy.default", [](OpCall& c) { return c.e.copyInto(c.tensor(1), c.out()); }},
    {"aten::native_dropout.default", dropout},
};

}  // namespace

void addElementwiseOps(OpTable& t) {
  for (const MapRow& row : kMapRows) t[row.name] = lowerRow(row);
  addRows(t, kCallRows);
}

}  // namespace dynrep::replay::lowering
