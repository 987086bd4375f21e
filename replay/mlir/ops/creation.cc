// Tensors made from sizes and numbers: full and its kin, arange/iota, scalar_tensor. The
// output type (shape and dtype) comes from the IR, so only the values are computed here.
#include "ops.h"

namespace dynrep::replay::lowering {

namespace {

Value filled(OpCall& c, double value) { return Value::tensor(c.e.fill(c.out(), value), c.out()); }

// A fill whose value is an SSA scalar (a symbolic number): broadcast in a generic.
Value filledWith(OpCall& c, const Value& v) { return v.isConst() ? filled(c, v.number) : c.e.copyInto(v, c.out()); }

// out[i] = start + i * step, in the output dtype.
Value range(OpCall& c, const Value& start, const Value& step) {
  const TensorType& out = c.out();
  DType d = isFloat(out.dtype) ? DType::F64 : DType::I64;
  std::string name = c.e.generic(out, {"d0"}, {}, {"parallel"}, [&](std::vector<std::string>&) {
    Scalars s = c.e.scalars();
    std::string x = c.e.fromIndex(c.e.loopIndex(0), d);
    std::string v = s.op(isFloat(d) ? "arith.addf" : "arith.addi", s.of(start, d),
                         s.op(isFloat(d) ? "arith.mulf" : "arith.muli", x, s.of(step, d), d), d);
    return s.cast(v, d, out.dtype);
  });
  return Value::tensor(name, out);
}

// eye(n[, m]): ones on the diagonal.
Value eye(OpCall& c) {
  const TensorType& out = c.out();
  std::string name = c.e.generic(out, {"d0", "d1"}, {}, {"parallel", "parallel"}, [&](std::vector<std::string>&) {
    Scalars s = c.e.scalars();
    return s.cast(c.e.indexCmp("eq", c.e.loopIndex(0), c.e.loopIndex(1)), DType::Bool, out.dtype);
  });
  return Value::tensor(name, out);
}

}  // namespace

void addCreationOps(OpTable& t) {
  t["aten::eye.default"] = t["aten::eye.m"] = eye;
  for (const char* name : {"aten::zeros.default", "aten::zeros_like.default", "aten::new_zeros.default",
                           "aten::empty.memory_format", "aten::empty_like.default", "aten::new_empty.default",
                           "aten::empty_strided.default", "aten::new_empty_strided.default"})
    t[name] = [](OpCall& c) { return filled(c, 0); };  // empty: zeros, so runs compare deterministically
  for (const char* name : {"aten::ones.default", "aten::ones_like.default", "aten::new_ones.default"})
    t[name] = [](OpCall& c) { return filled(c, 1); };
  t["aten::full.default"] = [](OpCall& c) { return filledWith(c, c.arg(1)); };
  t["aten::full_like.default"] = [](OpCall& c) { return filledWith(c, c.arg(1)); };
  t["aten::new_full.default"] = [](OpCall& c) { return filledWith(c, c.arg(2)); };
  t["aten::fill.Scalar"] = [](OpCall& c) { return filledWith(c, c.arg(1)); };
  t["aten::scalar_tensor.default"] = [](OpCall& c) { return filledWith(c, c.arg(0)); };
  t["aten::arange.default"] = [](OpCall& c) { return range(c, Value::integer(0), Value::integer(1)); };
  t["aten::arange.start"] = [](OpCall& c) { return range(c, c.arg(0), Value::integer(1)); };
  t["aten::arange.start_step"] = [](OpCall& c) { return range(c, c.arg(0), c.arg(2)); };
  t["prims::iota.default"] = [](OpCall& c) { return range(c, c.arg(c.index("start")), c.arg(c.index("step"))); };
}

}  // namespace dynrep::replay::lowering
