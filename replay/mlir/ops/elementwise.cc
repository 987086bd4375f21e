// Elementwise operators: each is a body over scalars in the compute type (float32 for float16
// and bfloat16, as PyTorch's CPU kernels compute), broadcast as PyTorch broadcasts.
#include <cmath>

#include "ops.h"

namespace dynrep::replay::lowering {

namespace {

using Body = std::function<std::string(Scalars&, std::vector<std::string>&, DType)>;

// The dtype arithmetic happens in: the promoted dtype of the tensor operands, or of the
// result where it is wider (an int tensor divided gives a float result).
DType arithmeticType(const OpCall& c, size_t operands) {
  std::optional<DType> t;
  for (size_t i = 0; i < operands && i < c.args.size(); ++i)
    if (c.args[i].isTensor()) t = t ? promote(*t, c.args[i].type.dtype) : c.args[i].type.dtype;
  DType out = c.out().dtype;
  if (!t || (out != DType::Bool && (isFloat(out) && !isFloat(*t)))) t = out;
  if (out != DType::Bool && isFloat(out) && isFloat(*t)) t = out;
  return computeType(*t);
}

// op(self, other, ...) for the first `operands` arguments.
LowerFn map(size_t operands, Body body, bool boolResult = false) {
  return [operands, body, boolResult](OpCall& c) {
    std::vector<Value> ins(c.args.begin(), c.args.begin() + static_cast<long>(operands));
    DType t = arithmeticType(c, operands);
    return c.e.elementwise(c.out(), ins, t, [&](Scalars& s, std::vector<std::string>& v) { return body(s, v, t); }, boolResult);
  };
}

Body arith(const char* floatOp, const char* intOp) {
  return [=](Scalars& s, std::vector<std::string>& v, DType t) { return s.op(isFloat(t) ? floatOp : intOp, v[0], v[1], t); };
}

Body math(const char* op) {
  return [=](Scalars& s, std::vector<std::string>& v, DType t) {
    if (!isFloat(t)) throw Unsupported(std::string(op) + " of an integer tensor");
    return s.unary(op, v[0], t);
  };
}

Body compare(const char* floatPred, const char* intPred) {
  return [=](Scalars& s, std::vector<std::string>& v, DType t) { return s.cmp(isFloat(t) ? floatPred : intPred, v[0], v[1], t); };
}

// a + alpha * b (add, sub with alpha)
LowerFn addLike(const char* floatOp, const char* intOp) {
  return [=](OpCall& c) {
    DType t = arithmeticType(c, 2);
    std::vector<Value> ins = {c.arg(0), c.arg(1)};
    bool alpha = c.args.size() > 2 && !c.none(2) && !(c.arg(2).isConst() && c.arg(2).number == 1);
    if (alpha) ins.push_back(c.arg(2));
    return c.e.elementwise(c.out(), ins, t, [&](Scalars& s, std::vector<std::string>& v) {
      std::string b = alpha ? s.op(isFloat(t) ? "arith.mulf" : "arith.muli", v[1], v[2], t) : v[1];
      return s.op(isFloat(t) ? floatOp : intOp, v[0], b, t);
    });
  };
}

std::string divide(Scalars& s, const std::string& a, const std::string& b, DType t, const std::string& mode) {
  if (!isFloat(t)) {
    if (mode == "floor") return s.op("arith.floordivsi", a, b, t);
    if (mode == "trunc") return s.op("arith.divsi", a, b, t);
    throw Unsupported("true division of integers into an integer result");
  }
  std::string q = s.op("arith.divf", a, b, t);
  if (mode == "floor") return s.unary("math.floor", q, t);
  if (mode == "trunc") return s.unary("math.trunc", q, t);
  return q;
}

LowerFn div() {
  return [](OpCall& c) {
    std::string mode;
    if (c.names.size() > 2 && c.names[2] == "rounding_mode" && c.arg(2).kind == Value::Kind::Text) mode = c.arg(2).text;
    DType t = arithmeticType(c, 2);
    if (mode.empty() && !isFloat(t)) t = computeType(c.out().dtype);
    return c.e.elementwise(c.out(), {c.arg(0), c.arg(1)}, t,
                           [&](Scalars& s, std::vector<std::string>& v) { return divide(s, v[0], v[1], t, mode); });
  };
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
    std::string u = s.op("arith.mulf", s.constant(k, t), s.op("arith.addf", x, s.op("arith.mulf", s.constant(c3, t), s.op("arith.mulf", x2, x, t), t), t), t);
    std::string th = s.unary("math.tanh", u, t);
    std::string one = s.constant(1, t), half = s.constant(0.5, t);
    std::string left = s.op("arith.mulf", half, s.op("arith.addf", one, th, t), t);
    std::string sech2 = s.op("arith.subf", one, s.op("arith.mulf", th, th, t), t);
    std::string du = s.op("arith.mulf", s.constant(k, t), s.op("arith.addf", one, s.op("arith.mulf", s.constant(3 * c3, t), x2, t), t), t);
    std::string right = s.op("arith.mulf", s.op("arith.mulf", s.op("arith.mulf", half, x, t), sech2, t), du, t);
    return s.op("arith.mulf", g, s.op("arith.addf", left, right, t), t);
  }
  std::string cdf = s.op("arith.mulf", s.constant(0.5, t),
                         s.op("arith.addf", s.constant(1, t), erf(s, s.op("arith.mulf", x, s.constant(M_SQRT1_2, t), t), t), t), t);
  std::string pdf = s.op("arith.mulf", s.constant(0.5 * M_2_SQRTPI * M_SQRT1_2, t),
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

std::string maxOf(Scalars& s, const std::string& a, const std::string& b, DType t) {
  return s.op(isFloat(t) ? "arith.maximumf" : "arith.maxsi", a, b, t);
}
std::string minOf(Scalars& s, const std::string& a, const std::string& b, DType t) {
  return s.op(isFloat(t) ? "arith.minimumf" : "arith.minsi", a, b, t);
}

}  // namespace

void addElementwiseOps(OpTable& t) {
  for (const char* name : {"aten::add.Tensor", "aten::add.Scalar"}) t[name] = addLike("arith.addf", "arith.addi");
  for (const char* name : {"aten::sub.Tensor", "aten::sub.Scalar"}) t[name] = addLike("arith.subf", "arith.subi");
  for (const char* name : {"aten::rsub.Tensor", "aten::rsub.Scalar"})
    t[name] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) { return s.op(isFloat(d) ? "arith.subf" : "arith.subi", v[1], v[0], d); });
  for (const char* name : {"aten::mul.Tensor", "aten::mul.Scalar"}) t[name] = map(2, arith("arith.mulf", "arith.muli"));
  for (const char* name : {"aten::div.Tensor", "aten::div.Scalar", "aten::div.Tensor_mode", "aten::div.Scalar_mode"}) t[name] = div();
  for (const char* name : {"aten::remainder.Tensor", "aten::remainder.Scalar"})
    t[name] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) {
      if (!isFloat(d)) {  // Python's mod: the sign of the divisor
        std::string r = s.op("arith.remsi", v[0], v[1], d);
        std::string zero = s.constant(0, d);
        std::string fix = s.op("arith.andi", s.cmp("ne", r, zero, d),
                               s.cmp("ne", s.cmp("slt", r, zero, d), s.cmp("slt", v[1], zero, d), DType::Bool), DType::Bool);
        return s.select(fix, s.op("arith.addi", r, v[1], d), r, d);
      }
      std::string q = s.unary("math.floor", s.op("arith.divf", v[0], v[1], d), d);
      return s.op("arith.subf", v[0], s.op("arith.mulf", q, v[1], d), d);
    });
  t["aten::neg.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    return isFloat(d) ? s.unary("arith.negf", v[0], d) : s.op("arith.subi", s.constant(0, d), v[0], d);
  });
  t["aten::abs.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    return isFloat(d) ? s.unary("math.absf", v[0], d) : s.unary("math.absi", v[0], d);
  });
  for (auto [name, op] : {std::pair{"aten::exp.default", "math.exp"}, {"aten::log.default", "math.log"}, {"aten::sqrt.default", "math.sqrt"},
                          {"aten::rsqrt.default", "math.rsqrt"}, {"aten::tanh.default", "math.tanh"}, {"aten::erf.default", "math.erf"},
                          {"aten::sin.default", "math.sin"}, {"aten::cos.default", "math.cos"}, {"aten::floor.default", "math.floor"},
                          {"aten::ceil.default", "math.ceil"}, {"aten::log1p.default", "math.log1p"}, {"aten::expm1.default", "math.expm1"},
                          {"aten::exp2.default", "math.exp2"}, {"aten::log2.default", "math.log2"}, {"aten::trunc.default", "math.trunc"},
                          {"aten::round.default", "math.roundeven"}, {"aten::tan.default", "math.tan"}, {"aten::atan.default", "math.atan"}})
    t[name] = map(1, math(op));
  t["aten::reciprocal.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) { return s.op("arith.divf", s.constant(1, d), v[0], d); });
  t["aten::sigmoid.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) { return sigmoid(s, v[0], d); });
  t["aten::silu.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) { return s.op("arith.mulf", v[0], sigmoid(s, v[0], d), d); });
  t["aten::relu.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) { return maxOf(s, v[0], s.constant(0, d), d); });
  t["aten::gelu.default"] = [](OpCall& c) {
    bool approx = tanhApproximation(c);
    return map(1, [approx](Scalars& s, std::vector<std::string>& v, DType d) { return gelu(s, v[0], d, approx); })(c);
  };
  t["aten::gelu_backward.default"] = [](OpCall& c) {
    bool approx = tanhApproximation(c);
    return map(2, [approx](Scalars& s, std::vector<std::string>& v, DType d) { return geluGrad(s, v[0], v[1], d, approx); })(c);
  };
  t["aten::tanh_backward.default"] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) {  // g * (1 - y^2)
    return s.op("arith.mulf", v[0], s.op("arith.subf", s.constant(1, d), s.op("arith.mulf", v[1], v[1], d), d), d);
  });
  t["aten::sigmoid_backward.default"] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) {  // g * y (1 - y)
    return s.op("arith.mulf", v[0], s.op("arith.mulf", v[1], s.op("arith.subf", s.constant(1, d), v[1], d), d), d);
  });
  t["aten::threshold_backward.default"] = map(3, [](Scalars& s, std::vector<std::string>& v, DType d) {  // g where x > threshold
    return s.select(s.cmp(isFloat(d) ? "ogt" : "sgt", v[1], v[2], d), v[0], s.constant(0, d), d);
  });
  for (const char* name : {"aten::pow.Tensor_Scalar", "aten::pow.Tensor_Tensor", "aten::pow.Scalar"})
    t[name] = [](OpCall& c) {
      const Value& e = c.arg(1);
      DType d = arithmeticType(c, 2);
      return c.e.elementwise(c.out(), {c.arg(0), e}, d, [&](Scalars& s, std::vector<std::string>& v) {
        if (e.isConst() && e.number == 2) return s.op(isFloat(d) ? "arith.mulf" : "arith.muli", v[0], v[0], d);
        if (e.isConst() && e.number == 0.5 && isFloat(d)) return s.unary("math.sqrt", v[0], d);
        if (!isFloat(d)) return s.op("math.ipowi", v[0], v[1], d);
        return s.op("math.powf", v[0], v[1], d);
      });
    };
  for (const char* name : {"aten::maximum.default", "aten::max.other"})
    t[name] = map(2, [](Scalars& s, std::vector<std::string>& v, DType d) { return maxOf(s, v[0], v[1], d); });
  for (const char* name : {"aten::minimum.default", "aten::min.other"})
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
  // Comparisons: computed in the promoted dtype of both sides, giving bool.
  for (auto [op, f, i] : {std::tuple{"eq", "oeq", "eq"}, {"ne", "une", "ne"}, {"lt", "olt", "slt"}, {"le", "ole", "sle"},
                          {"gt", "ogt", "sgt"}, {"ge", "oge", "sge"}})
    for (const char* overload : {".Tensor", ".Scalar"}) {
      auto body = compare(f, i);
      t[std::string("aten::") + op + overload] = [body](OpCall& c) {
        DType d = c.arg(0).isTensor() ? c.arg(0).type.dtype : DType::F32;
        if (c.arg(1).isTensor()) d = promote(d, c.arg(1).type.dtype);
        else if (c.arg(1).kind == Value::Kind::Float && !isFloat(d)) d = DType::F32;
        d = computeType(d);
        return c.e.elementwise(c.out(), {c.arg(0), c.arg(1)}, d, [&](Scalars& s, std::vector<std::string>& v) { return body(s, v, d); }, true);
      };
    }
  for (auto [name, op] : {std::pair{"aten::logical_and.default", "arith.andi"}, {"aten::logical_or.default", "arith.ori"},
                          {"aten::logical_xor.default", "arith.xori"}})
    t[name] = [op = std::string(op)](OpCall& c) {
      return c.e.elementwise(c.out(), {c.arg(0), c.arg(1)}, DType::Bool,
                             [&](Scalars& s, std::vector<std::string>& v) { return s.op(op, v[0], v[1], DType::Bool); }, true);
    };
  t["aten::isnan.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    return isFloat(d) ? s.cmp("uno", v[0], v[0], d) : s.constant(0, DType::Bool);
  }, true);
  t["aten::isinf.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    return isFloat(d) ? s.cmp("oeq", s.unary("math.absf", v[0], d), s.constant(HUGE_VAL, d), d) : s.constant(0, DType::Bool);
  }, true);
  t["aten::logical_not.default"] = [](OpCall& c) {
    return c.e.elementwise(c.out(), {c.arg(0)}, DType::Bool,
                           [&](Scalars& s, std::vector<std::string>& v) { return s.op("arith.xori", v[0], s.constant(1, DType::Bool), DType::Bool); }, true);
  };
  for (auto [name, op] : {std::pair{"aten::bitwise_and.Tensor", "arith.andi"}, {"aten::bitwise_or.Tensor", "arith.ori"},
                          {"aten::bitwise_xor.Tensor", "arith.xori"}, {"aten::bitwise_and.Scalar", "arith.andi"},
                          {"aten::bitwise_or.Scalar", "arith.ori"}})
    t[name] = map(2, [op = std::string(op)](Scalars& s, std::vector<std::string>& v, DType d) {
      if (isFloat(d)) throw Unsupported("bitwise operation on a float tensor");
      return s.op(op, v[0], v[1], d);
    });
  t["aten::bitwise_not.default"] = map(1, [](Scalars& s, std::vector<std::string>& v, DType d) {
    if (isFloat(d)) throw Unsupported("bitwise_not of a float tensor");
    return s.op("arith.xori", v[0], s.constant(d == DType::Bool ? 1 : -1, d), d);
  });
  for (const char* name : {"aten::where.self", "aten::where.ScalarSelf", "aten::where.ScalarOther", "aten::where.Scalar"})
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
  for (const char* name : {"aten::clone.default", "aten::_to_copy.default", "aten::lift_fresh_copy.default", "aten::detach.default",
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
  t["aten::native_dropout_backward.default"] = map(3, [](Scalars& s, std::vector<std::string>& v, DType d) {  // g * mask * scale
    return s.op("arith.mulf", s.op("arith.mulf", v[0], v[1], d), v[2], d);
  });
}

}  // namespace dynrep::replay::lowering
