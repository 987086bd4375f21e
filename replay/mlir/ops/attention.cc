// Attention: the CPU flash kernel's forward (its backward reaches the lowering through the
// decomposition capture adds, capture/decompositions.py).
#include <cmath>

#include "ops.h"

namespace dynrep::replay::lowering {

namespace {

// softmax(Q K^T * scale + mask) V in passes: scores, row max, sum of exponentials, the
// weighted sum of V, scaled by 1 / sum as the CPU flash kernel does; logsumexp = max + log sum.
Value flashAttention(OpCall& c) {
  const Value& q = c.tensor(0);
  const Value& k = c.tensor(1);
  const Value& v = c.tensor(2);
  const Value& mask = c.arg(c.index("attn_mask"));
  if (q.type.rank() != 4 || k.type.rank() != 4 || v.type.rank() != 4)
    throw Unsupported("attention on tensors that are not 4-d");
  // Grouped-query attention: query head h reads key and value head h / (query heads / key heads).
  std::string kvHead = "d1";
  const Dim &hq = q.type.dims[1], &hk = k.type.dims[1];
  if (hq.size != hk.size || hq.expr != hk.expr) {
    if (!hq.isStatic() || !hk.isStatic() || hk.size <= 0 || hq.size % hk.size != 0)
      throw Unsupported("grouped-query attention whose head counts are symbolic or do not divide");
    kvHead = "d1 floordiv " + std::to_string(hq.size / hk.size);
  }
  if (c.real(c.index("dropout_p")) != 0) throw Unsupported("attention dropout draws from PyTorch's random generator");
  bool causal = c.flag(c.index("is_causal"));
  size_t si = c.index("scale");
  DType ct = computeType(q.type.dtype);
  // 1 / sqrt(head size) by default: a constant, or computed from a symbolic head size.
  std::string scaleValue;
  if (!c.none(si)) {
    scaleValue = c.e.scalars().constant(c.real(si), ct);
  } else if (q.type.dims[3].isStatic()) {
    scaleValue = c.e.scalars().constant(1.0 / std::sqrt(static_cast<double>(q.type.dims[3].size)), ct);
  } else {
    Scalars s = c.e.scalars();
    std::string e = s.cast(c.e.fromIndex(c.e.dimSize(q.type, 3)), DType::I64, ct);
    scaleValue = s.op("arith.divf", s.constant(1, ct), s.unary("math.sqrt", e, ct), ct);
  }
  TensorType scoresT{ct, {q.type.dims[0], q.type.dims[1], q.type.dims[2], k.type.dims[2]}},
      rowT{ct, {q.type.dims[0], q.type.dims[1], q.type.dims[2]}};
  TensorType outT = c.out(0).withDtype(ct);
  Strings p4(4, "parallel"), bhl = {"d0", "d1", "d2"}, reduceLast = {"parallel", "parallel", "parallel", "reduction"};
  Strings reduce5 = {"parallel", "parallel", "parallel", "parallel", "reduction"};
  std::string raw = c.e.generic(
      scoresT, loopDims(4), {{q.ssa, q.type, {"d0", "d1", "d2", "d4"}}, {k.ssa, k.type, {"d0", kvHead, "d3", "d4"}}},
      reduce5,
      [&](Strings& a) {
        Scalars s = c.e.scalars();
        return s.op("arith.addf", a[2],
                    s.op("arith.mulf", s.cast(a[0], q.type.dtype, ct), s.cast(a[1], k.type.dtype, ct), ct), ct);
      },
      c.e.fill(scoresT, 0));
  std::vector<GenericInput> ins = {{raw, scoresT, loopDims(4)}};
  if (mask.isTensor()) {  // broadcast right-aligned against [B, H, L, S]
    Strings m;
    for (size_t d = 0; d < mask.type.rank(); ++d) {
      size_t o = 4 - mask.type.rank() + d;
      bool one = mask.type.dims[d].isStatic() && mask.type.dims[d].size == 1 &&
                 !(scoresT.dims[o].isStatic() && scoresT.dims[o].size == 1);
      m.push_back(one ? "0" : "d" + std::to_string(o));
    }
    ins.push_back({mask.ssa, mask.type, m});
  }
  std::string scores = c.e.generic(scoresT, loopDims(4), ins, p4, [&](Strings& a) {
    Scalars s = c.e.scalars();
    std::string x = s.op("arith.mulf", a[0], scaleValue, ct), ninf = s.constant(-HUGE_VAL, ct);
    if (mask.isTensor() && mask.type.dtype == DType::Bool)
      x = s.select(a[1], x, ninf, ct);
    else if (mask.isTensor())
      x = s.op("arith.addf", x, s.cast(a[1], mask.type.dtype, ct), ct);
    if (!causal) return x;
    std::string above = c.e.indexCmp("sgt", c.e.loopIndex(3), c.e.loopIndex(2));
    return s.select(above, ninf, x, ct);
  });
  std::string mx = c.e.generic(
      rowT, bhl, {{scores, scoresT, loopDims(4)}}, reduceLast,
      [&](Strings& a) { return c.e.scalars().op("arith.maximumf", a[0], a[1], ct); }, c.e.fill(rowT, -HUGE_VAL));
  // A row masked entirely keeps max -inf; subtracting 0 then keeps exp(-inf) = 0, not nan.
  auto shifted = [&](Scalars& s, const std::string& x, const std::string& m) {
    std::string dead = s.cmp("oeq", m, s.constant(-HUGE_VAL, ct), ct);
    return s.unary("math.exp", s.op("arith.subf", x, s.select(dead, s.constant(0, ct), m, ct), ct), ct);
  };
  std::string sum = c.e.generic(
      rowT, bhl, {{scores, scoresT, loopDims(4)}, {mx, rowT, bhl}}, reduceLast,
      [&](Strings& a) {
        Scalars s = c.e.scalars();
        return s.op("arith.addf", a[2], shifted(s, a[0], a[1]), ct);
      },
      c.e.fill(rowT, 0));
  std::string acc = c.e.generic(
      outT, loopDims(4),
      {{scores, scoresT, {"d0", "d1", "d2", "d4"}}, {mx, rowT, bhl}, {v.ssa, v.type, {"d0", kvHead, "d4", "d3"}}},
      reduce5,
      [&](Strings& a) {
        Scalars s = c.e.scalars();
        return s.op("arith.addf", a[3], s.op("arith.mulf", shifted(s, a[0], a[1]), s.cast(a[2], v.type.dtype, ct), ct),
                    ct);
      },
      c.e.fill(outT, 0));
  std::string o = c.e.generic(c.out(0), loopDims(4), {{acc, outT, loopDims(4)}, {sum, rowT, bhl}}, p4, [&](Strings& a) {
    Scalars s = c.e.scalars();
    return s.cast(s.op("arith.mulf", a[0], s.op("arith.divf", s.constant(1, ct), a[1], ct), ct), ct, c.out(0).dtype);
  });
  std::string lse =
      c.e.generic(c.out(1), bhl, {{mx, rowT, bhl}, {sum, rowT, bhl}}, Strings(3, "parallel"), [&](Strings& a) {
        Scalars s = c.e.scalars();
        return s.cast(s.op("arith.addf", a[0], s.unary("math.log", a[1], ct), ct), ct, c.out(1).dtype);
      });
  return Value::list({Value::tensor(o, c.out(0)), Value::tensor(lse, c.out(1))});
}

}  // namespace

void addAttentionOps(OpTable& t) { t["aten::_scaled_dot_product_flash_attention_for_cpu.default"] = flashAttention; }

}  // namespace dynrep::replay::lowering
