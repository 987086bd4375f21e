// Matrix products as linalg's named ops. float16/bfloat16 operands are multiplied in float32
// and rounded once, as PyTorch's CPU kernels accumulate.
#include <algorithm>

#include "reduction.h"

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

// _trilinear(i1, i2, i3, expand1..3, sumdim): each input with size-1 dims inserted at its expand
// list, the three multiplied (broadcast) and summed over sumdim, which the result drops. It is
// what nn.Bilinear and torch-mlir's tests call.
Value trilinear(OpCall& c) {
  const Value* in[3] = {&c.tensor(0), &c.tensor(1), &c.tensor(2)};
  std::vector<int64_t> expand[3] = {c.ints(3), c.ints(4), c.ints(5)}, sum = c.ints(6);
  size_t rank = in[0]->type.rank() + expand[0].size();
  auto has = [](const std::vector<int64_t>& v, size_t d) {
    return std::find(v.begin(), v.end(), static_cast<int64_t>(d)) != v.end();
  };
  TensorType space{computeType(c.out().dtype), std::vector<Dim>(rank, Dim{1, ""})};
  std::vector<reduction::Operand> ops(3);
  for (size_t k = 0; k < 3; ++k) {
    if (in[k]->type.rank() + expand[k].size() != rank) throw Unsupported("_trilinear inputs of different ranks");
    ops[k].v = *in[k];
    for (size_t d = 0, at = 0; d < rank; ++d) {
      if (has(expand[k], d)) continue;
      const Dim& dim = in[k]->type.dims[at++];
      bool one = dim.isStatic() && dim.size == 1;
      if (!one && space.dims[d].isStatic() && space.dims[d].size == 1) space.dims[d] = dim;
      ops[k].map.push_back(one ? "0" : "d" + std::to_string(d));
    }
  }
  std::vector<bool> red(rank, false);
  for (int64_t d : sum) red[static_cast<size_t>(OpCall::dim(d, rank))] = true;
  DType ct = space.dtype;
  Value r =
      reduction::reduce(c.e, space, ops, red, false, ct, ct, 0, [&](Scalars& s, Strings& v, const std::string& acc) {
        const char* mul = isFloat(ct) ? "arith.mulf" : "arith.muli";
        return s.op(isFloat(ct) ? "arith.addf" : "arith.addi", acc, s.op(mul, s.op(mul, v[0], v[1], ct), v[2], ct), ct);
      });
  return c.e.convert(r, c.out().dtype);
}

}  // namespace

void addLinearOps(OpTable& t) {
  t["aten::_trilinear.default"] = trilinear;
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
