// What mixture-of-experts layers route tokens with: histc (tokens per expert) and the grouped
// matrix product (each expert's rows times its own weight). transformers wraps the latter in an
// opaque custom op, `transformers::grouped_mm_fallback`, defined as the same product.
#include <cmath>

#include "indexing.h"
#include "reduction.h"

namespace dynrep::replay::lowering {

namespace {

// histc(x, bins, min, max) as PyTorch's CPU kernel counts: elements outside [min, max] are
// dropped, the rest go to bin int((x - min) * bins / (max - min)), the last bin taking max
// itself; min == max means the data's own range (widened by 1 each way when that is empty).
Value histc(OpCall& c) {
  const Value& x = c.tensor(0);
  const TensorType& out = c.out();
  if (!isFloat(x.type.dtype)) throw Unsupported("histc of an integer tensor (PyTorch's CPU kernel takes floats only)");
  int64_t bins = c.integer(1);
  double lo = c.real(2), hi = c.real(3);
  DType ct = computeType(x.type.dtype);
  Emitter& e = c.e;
  Scalars s = e.scalars();
  size_t r = x.type.rank();
  std::string low = s.constant(lo, ct), high = s.constant(hi, ct);
  if (lo == hi) {  // the data's range, read from two reductions
    std::vector<bool> all(r, true);
    auto extreme = [&](bool max) {
      Value v = reduction::reduce(e, x.type, {{x, loopDims(r)}}, all, false, ct, ct, max ? -HUGE_VAL : HUGE_VAL,
                                  [&](Scalars& q, Strings& a, const std::string& acc) {
                                    return q.op(max ? "arith.maximumf" : "arith.minimumf", acc, a[0], ct);
                                  });
      return extract(e, v.ssa, v.type, {});
    };
    low = extreme(false), high = extreme(true);
    std::string same = s.cmp("oeq", low, high, ct);
    low = s.select(same, s.op("arith.subf", low, s.constant(1, ct), ct), low, ct);
    high = s.select(same, s.op("arith.addf", high, s.constant(1, ct), ct), high, ct);
  }
  TensorType space = out.withDtype(ct);
  space.dims.insert(space.dims.end(), x.type.dims.begin(), x.type.dims.end());
  std::vector<bool> red(r + 1, true);
  red[0] = false;
  Value counts = reduction::reduce(
      e, space, {{x, loopDims(r, 1)}}, red, false, ct, ct, 0, [&](Scalars& q, Strings& a, const std::string& acc) {
        std::string v = a[0];
        std::string inside = q.op("arith.andi", q.cmp("oge", v, low, ct), q.cmp("ole", v, high, ct), DType::Bool);
        std::string t =
            q.op("arith.divf",
                 q.op("arith.mulf", q.op("arith.subf", v, low, ct), q.constant(static_cast<double>(bins), ct), ct),
                 q.op("arith.subf", high, low, ct), ct);
        std::string pos = q.cast(t, ct, DType::I64);
        pos = q.op("arith.minsi", pos, q.constant(static_cast<double>(bins - 1), DType::I64), DType::I64);
        std::string here =
            q.op("arith.andi", inside, q.cmp("eq", pos, e.fromIndex(e.loopIndex(0)), DType::I64), DType::Bool);
        return q.op("arith.addf", acc, q.cast(here, DType::Bool, ct), ct);
      });
  return e.convert(counts, out.dtype);
}

// _grouped_mm(x [S, K], w [E, K, N], offs [E]): row s belongs to the group g whose range
// [offs[g-1], offs[g]) holds it, and is x[s] @ w[g]; rows past offs[E-1] are zeros.
Value groupedMm(OpCall& c) {
  const Value &x = c.tensor(0), &w = c.tensor(1);
  if (x.type.rank() != 2 || w.type.rank() != 3 || c.none(2))
    throw Unsupported("a grouped product other than 2-d rows by 3-d expert weights with offsets");
  if (c.args.size() > 3 && !c.none(3)) throw Unsupported("a grouped product with a bias");
  const Value& offs = c.tensor(2);
  const TensorType& out = c.out();
  DType ct = computeType(out.dtype);
  Emitter& e = c.e;
  // g[s]: how many groups end at or before s
  TensorType rows{DType::I64, {x.type.dims[0], offs.type.dims[0]}};
  Value group = reduction::reduce(e, rows, {{offs, {"d1"}}}, {false, true}, false, DType::I64, DType::I64, 0,
                                  [&](Scalars& q, Strings& a, const std::string& acc) {
                                    std::string s = e.fromIndex(e.loopIndex(0), DType::I64);
                                    std::string ended = q.cmp("sle", a[0], s, DType::I64);
                                    return q.op("arith.addi", acc, q.cast(ended, DType::Bool, DType::I64), DType::I64);
                                  });
  std::string experts = e.fromIndex(e.dimSize(w.type, 0), DType::I64);
  TensorType space{ct, {out.dims[0], out.dims[1], x.type.dims[1]}};
  Value product = reduction::reduce(
      e, space, {{x, {"d0", "d2"}}}, {false, false, true}, false, ct, ct, 0,
      [&](Scalars& q, Strings& a, const std::string& acc) {
        std::string g = extract(e, group.ssa, group.type, {e.loopIndex(0)});
        std::string valid = q.cmp("slt", g, experts, DType::I64);
        g = q.op("arith.minsi", g, q.op("arith.subi", experts, q.constant(1, DType::I64), DType::I64), DType::I64);
        std::string wv =
            q.cast(extract(e, w.ssa, w.type, {e.toIndex(g), e.loopIndex(2), e.loopIndex(1)}), w.type.dtype, ct);
        std::string term = q.select(valid, q.op("arith.mulf", a[0], wv, ct), q.constant(0, ct), ct);
        return q.op("arith.addf", acc, term, ct);
      });
  return e.convert(product, out.dtype);
}

}  // namespace

void addRoutingOps(OpTable& t) {
  t["aten::histc.default"] = histc;
  t["aten::_grouped_mm.default"] = t["transformers::grouped_mm_fallback.default"] = groupedMm;
}

}  // namespace dynrep::replay::lowering
