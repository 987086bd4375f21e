// Matrix products as linalg's named ops. float16/bfloat16 operands are multiplied in float32
// and rounded once, as PyTorch's CPU kernels accumulate.
#include "ops.h"

namespace dynrep::replay::lowering {

namespace {

// linalg.matmul / batch_matmul of a [.., m, k] and b [.., k, n] into `out`'s shape.
Value product(Emitter& e, const char* op, const Value& a, const Value& b, const TensorType& out) {
  DType acc = computeType(out.dtype);
  Value x = e.convert(a, acc), y = e.convert(b, acc);
  TensorType t = out.withDtype(acc);
  std::string init = e.fill(t, 0);
  std::string name = e.fresh("mm");
  e.line(name + " = " + op + " ins(" + x.ssa + ", " + y.ssa + " : " + x.type.str() + ", " + y.type.str() + ") outs(" +
         init + " : " + t.str() + ") -> " + t.str());
  return e.convert(Value::tensor(name, t), out.dtype);
}

// beta * self + alpha * product, self broadcast to the product's shape.
Value scaledSum(OpCall& c, const Value& prod) {
  double beta = c.real(c.index("beta")), alpha = c.real(c.index("alpha"));
  DType d = computeType(c.out().dtype);
  return c.e.elementwise(c.out(), {c.arg(0), prod}, d, [&](Scalars& s, std::vector<std::string>& v) {
    std::string p = alpha == 1 ? v[1] : s.op(isFloat(d) ? "arith.mulf" : "arith.muli", v[1], s.constant(alpha, d), d);
    if (beta == 0) return p;
    std::string b = beta == 1 ? v[0] : s.op(isFloat(d) ? "arith.mulf" : "arith.muli", v[0], s.constant(beta, d), d);
    return s.op(isFloat(d) ? "arith.addf" : "arith.addi", b, p, d);
  });
}

}  // namespace

void addLinearOps(OpTable& t) {
  t["aten::mm.default"] = [](OpCall& c) { return product(c.e, "linalg.matmul", c.tensor(0), c.tensor(1), c.out()); };
  t["aten::bmm.default"] = [](OpCall& c) {
    return product(c.e, "linalg.batch_matmul", c.tensor(0), c.tensor(1), c.out());
  };
  t["aten::addmm.default"] = [](OpCall& c) {
    return scaledSum(
        c, product(c.e, "linalg.matmul", c.tensor(1), c.tensor(2), c.out().withDtype(c.tensor(1).type.dtype)));
  };
  t["aten::baddbmm.default"] = [](OpCall& c) {
    return scaledSum(
        c, product(c.e, "linalg.batch_matmul", c.tensor(1), c.tensor(2), c.out().withDtype(c.tensor(1).type.dtype)));
  };
}

}  // namespace dynrep::replay::lowering
