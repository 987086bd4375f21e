// Pairwise distances as PyTorch's CPU kernels compute them: cdist (every row of x1 against every
// row of x2) and pdist (every pair of rows of one matrix, the upper triangle in row-major order).
// The p-norm of the difference: sum over the last dim of |a - b|^p, then ^(1/p); p = 0 counts the
// elements that differ, p = 1 sums, p = 2 sums squares then takes the root, p = inf takes the
// largest. For p = 2 cdist switches to the matrix-product form where PyTorch does (compute_mode
// 1, or 0 with more than 25 rows on a side): |a|^2 + |b|^2 - 2 a.b, clamped at 0, then the root.
#include <cmath>

#include "indexing.h"
#include "reduction.h"

namespace dynrep::replay::lowering {

namespace {

using reduction::Operand;

// x [B..., N, M] read in the loops of [out batch..., P, R, M] at row loop `row`, batch dims of
// size 1 broadcast.
Strings rowMap(const TensorType& x, const TensorType& out, size_t row) {
  size_t batch = out.rank() - 2, own = x.rank() - 2;
  Strings map;
  for (size_t i = 0; i < own; ++i) {
    size_t d = batch - own + i;
    bool one = x.dims[i].isStatic() && x.dims[i].size == 1 && !(out.dims[d].isStatic() && out.dims[d].size == 1);
    map.push_back(one ? "0" : "d" + std::to_string(d));
  }
  map.push_back("d" + std::to_string(row));
  map.push_back("d" + std::to_string(out.rank()));
  return map;
}

TensorType withRowSize(const TensorType& out, const Dim& m) {
  TensorType space = out;
  space.dims.push_back(m);
  return space;
}

std::vector<bool> lastReduced(size_t rank) {
  std::vector<bool> red(rank, false);
  red.back() = true;
  return red;
}

// The p-norm of a[i] - b[j] for every pair, in `out`'s loops (the direct form).
Value direct(Emitter& e, const TensorType& out, const Operand& a, const Operand& b, const Dim& m, double p, DType ct) {
  TensorType space = withRowSize(out.withDtype(ct), m);
  Value sum = reduction::reduce(e, space, {a, b}, lastReduced(space.rank()), false, ct, ct, 0,
                                [&](Scalars& s, Strings& v, const std::string& acc) {
                                  std::string d = s.unary("math.absf", s.op("arith.subf", v[0], v[1], ct), ct);
                                  if (p == 0) d = s.cast(s.cmp("une", d, s.constant(0, ct), ct), DType::Bool, ct);
                                  if (std::isinf(p)) return s.op("arith.maximumf", acc, d, ct);
                                  if (p == 2) d = s.op("arith.mulf", d, d, ct);
                                  if (p != 0 && p != 1 && p != 2) d = s.op("math.powf", d, s.constant(p, ct), ct);
                                  return s.op("arith.addf", acc, d, ct);
                                });
  if (p == 0 || p == 1 || std::isinf(p)) return sum;
  return reduction::pointwise(e, sum.type, {{sum, loopDims(sum.type.rank())}}, ct, [&](Scalars& s, Strings& v) {
    return p == 2 ? s.unary("math.sqrt", v[0], ct) : s.op("math.powf", v[0], s.constant(1 / p, ct), ct);
  });
}

// The sum of squares of each row of x [B..., N, M].
Value rowNorms(Emitter& e, const Value& x, DType ct) {
  return reduction::reduce(e, x.type.withDtype(ct), {{x, loopDims(x.type.rank())}}, lastReduced(x.type.rank()), false,
                           ct, ct, 0, [&](Scalars& s, Strings& v, const std::string& acc) {
                             return s.op("arith.addf", acc, s.op("arith.mulf", v[0], v[0], ct), ct);
                           });
}

// PyTorch's matrix-product form of the euclidean distance.
Value throughProduct(Emitter& e, const TensorType& out, const Value& x1, const Value& x2, const Dim& m, DType ct) {
  TensorType space = withRowSize(out.withDtype(ct), m);
  size_t r = out.rank();
  Value dot = reduction::reduce(e, space, {{x1, rowMap(x1.type, out, r - 2)}, {x2, rowMap(x2.type, out, r - 1)}},
                                lastReduced(space.rank()), false, ct, ct, 0,
                                [&](Scalars& s, Strings& v, const std::string& acc) {
                                  std::string ab = s.op("arith.mulf", v[0], v[1], ct);
                                  return s.op("arith.addf", acc, s.op("arith.mulf", s.constant(-2, ct), ab, ct), ct);
                                });
  Value n1 = rowNorms(e, x1, ct), n2 = rowNorms(e, x2, ct);
  auto normMap = [&](const TensorType& n, size_t row) {
    Strings map = rowMap(withRowSize(n, Dim{1, ""}), out, row);
    map.pop_back();
    return map;
  };
  return reduction::pointwise(e, dot.type,
                              {{dot, loopDims(r)}, {n1, normMap(n1.type, r - 2)}, {n2, normMap(n2.type, r - 1)}}, ct,
                              [&](Scalars& s, Strings& v) {
                                std::string d2 = s.op("arith.addf", s.op("arith.addf", v[0], v[1], ct), v[2], ct);
                                return s.unary("math.sqrt", s.op("arith.maximumf", d2, s.constant(0, ct), ct), ct);
                              });
}

Value cdist(OpCall& c) {
  const Value &x1 = c.tensor(0), &x2 = c.tensor(1);
  const TensorType& out = c.out();
  if (!isFloat(out.dtype) || x1.type.rank() < 2 || x2.type.rank() < 2)
    throw Unsupported("cdist of a non-float or lower-rank tensor");
  double p = c.real(2);
  int64_t mode = c.none(3) ? 0 : c.integer(3);
  DType ct = computeType(out.dtype);
  const Dim& m = x1.type.dims.back();
  size_t r = out.rank();
  auto plain = [&] {
    return direct(c.e, out, {x1, rowMap(x1.type, out, r - 2)}, {x2, rowMap(x2.type, out, r - 1)}, m, p, ct);
  };
  if (p != 2 || mode == 2) return c.e.convert(plain(), out.dtype);
  if (mode == 1) return c.e.convert(throughProduct(c.e, out, x1, x2, m, ct), out.dtype);
  // mode 0: the product form when either side has more than 25 rows, decided on the sizes
  Value product = throughProduct(c.e, out, x1, x2, m, ct), rows = plain();
  std::string many =
      c.e.scalars().op("arith.ori", c.e.indexCmp("sgt", c.e.dimSize(x1.type, x1.type.rank() - 2), c.e.index(25)),
                       c.e.indexCmp("sgt", c.e.dimSize(x2.type, x2.type.rank() - 2), c.e.index(25)), DType::Bool);
  return reduction::pointwise(c.e, out, {{product, loopDims(r)}, {rows, loopDims(r)}}, ct,
                              [&](Scalars& s, Strings& v) { return s.select(many, v[0], v[1], ct); });
}

// pdist: the direct form over every pair of rows, then the upper triangle read in row-major order
// (pair k is row i = n - 2 - floor(sqrt(4n(n-1) - 8k - 7) / 2 - 1/2), column k + i + 1 - n(n-1)/2
// + (n-i)(n-i-1)/2).
Value pdist(OpCall& c) {
  const Value& x = c.tensor(0);
  const TensorType& out = c.out();
  if (!isFloat(out.dtype) || x.type.rank() != 2) throw Unsupported("pdist of a non-float or non-matrix tensor");
  double p = c.none(1) ? 2 : c.real(1);
  DType ct = computeType(out.dtype);
  TensorType all{out.dtype, {x.type.dims[0], x.type.dims[0]}};
  Value d = direct(c.e, all, {x, {"d0", "d2"}}, {x, {"d1", "d2"}}, x.type.dims[1], p, ct);
  Emitter& e = c.e;
  std::string n = e.fromIndex(e.dimSize(x.type, 0), DType::I64);
  std::string name = e.generic(out, {"d0"}, {}, {"parallel"}, [&](Strings&) {
    Scalars s = e.scalars();
    std::string k = e.fromIndex(e.loopIndex(0), DType::I64);
    auto i64 = [&](int64_t v) { return s.constant(static_cast<double>(v), DType::I64); };
    auto mul = [&](const std::string& a, const std::string& b) { return s.op("arith.muli", a, b, DType::I64); };
    auto sub = [&](const std::string& a, const std::string& b) { return s.op("arith.subi", a, b, DType::I64); };
    auto add = [&](const std::string& a, const std::string& b) { return s.op("arith.addi", a, b, DType::I64); };
    std::string pairs = mul(n, sub(n, i64(1)));  // n(n-1)
    std::string radicand = sub(sub(mul(i64(4), pairs), mul(i64(8), k)), i64(7));
    std::string root = s.unary("math.sqrt", s.cast(radicand, DType::I64, DType::F64), DType::F64);
    std::string fl = s.unary("math.floor",
                             s.op("arith.subf", s.op("arith.divf", root, s.constant(2, DType::F64), DType::F64),
                                  s.constant(0.5, DType::F64), DType::F64),
                             DType::F64);
    std::string i = sub(sub(n, i64(2)), s.cast(fl, DType::F64, DType::I64));
    std::string rest = sub(n, i);
    std::string j = add(sub(add(add(k, i), i64(1)), s.op("arith.divsi", pairs, i64(2), DType::I64)),
                        s.op("arith.divsi", mul(rest, sub(rest, i64(1))), i64(2), DType::I64));
    std::string v = extract(e, d.ssa, d.type, {e.toIndex(i), e.toIndex(j)});
    return s.cast(v, d.type.dtype, out.dtype);
  });
  return Value::tensor(name, out);
}

}  // namespace

void addDistanceOps(OpTable& t) {
  t["aten::_cdist_forward.default"] = cdist;
  t["aten::_pdist_forward.default"] = pdist;
}

}  // namespace dynrep::replay::lowering
