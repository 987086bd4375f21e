// Layer norm and batch norm, forward and backward; group norm forward. Statistics are two-pass (the mean, then the
// squared deviations) in the input's compute type, kept with their reduced dims as size 1 so
// the normalizing generic reads them through broadcast maps; per-channel tensors ([C]: weight,
// bias, running stats, saved stats) are read at loop dim 1. Output dtypes come from the IR.
#include <cmath>

#include "reduction.h"

namespace dynrep::replay::lowering {

namespace {

using namespace reduction;

DType floatCompute(DType t) {
  DType c = computeType(t);
  if (!isFloat(c)) throw Unsupported("normalization of an integer tensor");
  return c;
}

// bool[3] output_mask; a constant list, all true where absent.
std::vector<bool> outputMask(const OpCall& c) {
  std::vector<bool> mask(3, true);
  const Value& m = c.arg(c.index("output_mask"));
  for (size_t i = 0; i < m.items.size() && i < 3; ++i) {
    if (!m.items[i].isConst()) throw Unsupported("a symbolic output_mask");
    mask[i] = m.items[i].number != 0;
  }
  return mask;
}

Value sumOf(Emitter& e, const TensorType& space, const std::vector<Operand>& ins, const std::vector<bool>& red,
            bool keepdim, DType t, const Body& term) {
  return reduce(e, space, ins, red, keepdim, t, t, 0,
                [&](Scalars& s, std::vector<std::string>& v, const std::string& acc) {
                  return s.op("arith.addf", term(s, v), acc, t);
                });
}

std::string mul(Scalars& s, const std::string& a, const std::string& b, DType t) { return s.op("arith.mulf", a, b, t); }
std::string sub(Scalars& s, const std::string& a, const std::string& b, DType t) { return s.op("arith.subf", a, b, t); }
std::string add(Scalars& s, const std::string& a, const std::string& b, DType t) { return s.op("arith.addf", a, b, t); }
// 1 / sqrt(v + eps), as PyTorch's CPU kernels spell rstd / invstd (not rsqrt).
std::string invSqrt(Scalars& s, const std::string& v, double eps, DType t) {
  return s.op("arith.divf", s.constant(1, t), s.unary("math.sqrt", add(s, v, s.constant(eps, t), t), t), t);
}

// ---- layer norm ----------------------------------------------------------------------------

// The trailing dims that normalized_shape names.
std::vector<bool> normalizedDims(const OpCall& c, const Value& x) {
  size_t k = c.ints(c.index("normalized_shape")).size(), r = x.type.rank();
  if (k > r) throw Unsupported("normalized_shape longer than the input's rank");
  std::vector<bool> red(r, false);
  for (size_t d = r - k; d < r; ++d) red[d] = true;
  return red;
}

// (y, mean, rstd): mean and rstd keep the normalized dims as 1, as the IR's output types do.
Value layerNorm(OpCall& c) {
  const Value& x = c.tensor(0);
  const Value &w = c.arg(2), &b = c.arg(3);
  double eps = c.real(4);
  std::vector<bool> red = normalizedDims(c, x);
  DType t = floatCompute(x.type.dtype);
  std::string n = count(c.e, x.type, red, t);
  Value mean = meanOf(c.e, x, red, t, n);
  Value ss = squaredDeviations(c.e, x, mean, red, true, t);
  Value rstd = pointwise(c.e, ss.type, {over(ss, ss.type)}, t, [&](Scalars& s, std::vector<std::string>& v) {
    return invSqrt(s, s.op("arith.divf", v[0], n, t), eps, t);
  });
  std::vector<Operand> ins = {over(x, x.type), over(mean, x.type), over(rstd, x.type)};
  if (w.isTensor()) ins.push_back(over(w, x.type));
  if (b.isTensor()) ins.push_back(over(b, x.type));
  Value y = pointwise(c.e, x.type.withDtype(c.out(0).dtype), ins, t, [&](Scalars& s, std::vector<std::string>& v) {
    std::string r = mul(s, sub(s, v[0], v[1], t), v[2], t);
    size_t i = 3;
    if (w.isTensor()) r = mul(s, r, v[i++], t);
    if (b.isTensor()) r = add(s, r, v[i], t);
    return r;
  });
  return Value::list({y, c.e.convert(mean, c.out(1).dtype), c.e.convert(rstd, c.out(2).dtype)});
}

// PyTorch's layer norm backward with xhat = (x - mean) * rstd and g' = g * weight:
//   dx = rstd / N * (N g' - sum(g') - xhat * sum(g' xhat))   over the normalized dims
//   dweight = sum(g xhat), dbias = sum(g)                      over the outer dims
Value layerNormBackward(OpCall& c) {
  const Value &g = c.tensor(0), &x = c.tensor(1), &mean = c.tensor(3), &rstd = c.tensor(4), &w = c.arg(5);
  std::vector<bool> red = normalizedDims(c, x), outer(red.size());
  for (size_t d = 0; d < red.size(); ++d) outer[d] = !red[d];
  if (mean.type.rank() != x.type.rank() || rstd.type.rank() != x.type.rank())
    throw Unsupported("layer norm statistics not shaped like the input with the normalized dims as 1");
  std::vector<bool> mask = outputMask(c);
  DType t = floatCompute(x.type.dtype);
  const TensorType& sp = x.type;
  bool hasW = w.isTensor();
  // Operands g, x, mean, rstd[, w] and the body's g' and xhat from them.
  std::vector<Operand> base = {over(g, sp), over(x, sp), over(mean, sp), over(rstd, sp)};
  if (hasW) base.push_back(over(w, sp));
  auto gw = [&](Scalars& s, std::vector<std::string>& v) { return hasW ? mul(s, v[0], v[4], t) : v[0]; };
  auto xhat = [&](Scalars& s, std::vector<std::string>& v) { return mul(s, sub(s, v[1], v[2], t), v[3], t); };
  Value dx, dw, db;
  if (mask[0]) {
    std::string n = count(c.e, sp, red, t);
    Value sumG = sumOf(c.e, sp, base, red, true, t, gw);
    Value sumGX = sumOf(c.e, sp, base, red, true, t,
                        [&](Scalars& s, std::vector<std::string>& v) { return mul(s, gw(s, v), xhat(s, v), t); });
    std::vector<Operand> ins = base;
    ins.push_back(over(sumG, sp));
    ins.push_back(over(sumGX, sp));
    size_t k = ins.size() - 2;
    dx = pointwise(c.e, sp.withDtype(c.out(0).dtype), ins, t, [&](Scalars& s, std::vector<std::string>& v) {
      std::string inner = sub(s, sub(s, mul(s, n, gw(s, v), t), v[k], t), mul(s, xhat(s, v), v[k + 1], t), t);
      return mul(s, s.op("arith.divf", v[3], n, t), inner, t);
    });
  }
  if (mask[1])
    dw = c.e.convert(sumOf(c.e, sp, base, outer, false, t,
                           [&](Scalars& s, std::vector<std::string>& v) { return mul(s, v[0], xhat(s, v), t); }),
                     c.out(1).dtype);
  if (mask[2])
    db = c.e.convert(
        sumOf(c.e, sp, {over(g, sp)}, outer, false, t, [](Scalars&, std::vector<std::string>& v) { return v[0]; }),
        c.out(2).dtype);
  return Value::list({dx, dw, db});
}

// ---- batch norm ----------------------------------------------------------------------------

// Every dim but the channels (dim 1).
std::vector<bool> batchDims(const Value& x) {
  if (x.type.rank() < 2) throw Unsupported("batch norm of a tensor of rank < 2");
  std::vector<bool> red(x.type.rank(), true);
  red[1] = false;
  return red;
}

// A per-channel [C] tensor read in the loops of the input's space.
Operand channel(const Value& v) {
  if (v.type.rank() != 1) throw Unsupported("a per-channel batch norm tensor that is not 1-d");
  return {v, {"d1"}};
}

// The batch norm forwards. Training: batch statistics, running stats updated with momentum and
// the unbiased batch variance. Eval: the running stats normalize; the saved statistics are
// empty where the IR says so (PyTorch's CPU kernel) and otherwise the running ones.
// Outputs (y, save_mean, save_invstd[, new_running_mean, new_running_var]), as many as the IR has.
Value batchNorm(OpCall& c, const Value& x, const Value& w, const Value& b, const Value& rm, const Value& rv,
                bool training, double momentum, double eps) {
  std::vector<bool> red = batchDims(x);
  DType t = floatCompute(x.type.dtype);
  const TensorType& sp = x.type;
  auto affine = [&](Scalars& s, std::vector<std::string>& v, std::string r, size_t i) {
    if (w.isTensor()) r = mul(s, r, v[i++], t);
    if (b.isTensor()) r = add(s, r, v[i], t);
    return r;
  };
  std::vector<Value> outs;
  if (training) {
    // The batch statistics accumulate in float64 (PyTorch's CPU kernel: in double for float32, in
    // float for float16), then are used in t: a sum over millions of elements in float32 is off
    // in its fourth digit.
    std::string n64 = count(c.e, sp, red, DType::F64);
    Value mean64 = meanOf(c.e, x, red, DType::F64, n64);
    Value mean = c.e.convert(mean64, t), ss = c.e.convert(squaredDeviations(c.e, x, mean64, red, true, DType::F64), t);
    std::string n = count(c.e, sp, red, t);
    Value invstd = pointwise(c.e, ss.type, {over(ss, ss.type)}, t, [&](Scalars& s, std::vector<std::string>& v) {
      return invSqrt(s, s.op("arith.divf", v[0], n, t), eps, t);
    });
    std::vector<Operand> ins = {over(x, sp), over(mean, sp), over(invstd, sp)};
    if (w.isTensor()) ins.push_back(channel(w));
    if (b.isTensor()) ins.push_back(channel(b));
    outs.push_back(pointwise(c.e, sp.withDtype(c.out(0).dtype), ins, t, [&](Scalars& s, std::vector<std::string>& v) {
      return affine(s, v, mul(s, sub(s, v[0], v[1], t), v[2], t), 3);
    }));
    outs.push_back(c.e.convert(squeeze(c.e, mean, red), c.out(1).dtype));
    outs.push_back(c.e.convert(squeeze(c.e, invstd, red), c.out(2).dtype));
    if (c.outs.size() > 3) {
      if (!rm.isTensor() || !rv.isTensor()) throw Unsupported("running stats to update that are None");
      Scalars sc = c.e.scalars();
      std::string keepOld = sc.constant(1 - momentum, t), takeNew = sc.constant(momentum, t);
      std::string unbias = sc.op("arith.subf", n, sc.constant(1, t), t);
      outs.push_back(pointwise(c.e, rm.type.withDtype(c.out(3).dtype), {over(rm, rm.type), kept(mean, red, false)}, t,
                               [&](Scalars& s, std::vector<std::string>& v) {
                                 return add(s, mul(s, keepOld, v[0], t), mul(s, takeNew, v[1], t), t);
                               }));
      outs.push_back(pointwise(c.e, rv.type.withDtype(c.out(4).dtype), {over(rv, rv.type), kept(ss, red, false)}, t,
                               [&](Scalars& s, std::vector<std::string>& v) {
                                 return add(s, mul(s, keepOld, v[0], t),
                                            mul(s, takeNew, s.op("arith.divf", v[1], unbias, t), t), t);
                               }));
    }
  } else {
    if (!rm.isTensor() || !rv.isTensor()) throw Unsupported("batch norm in eval mode without running stats");
    std::vector<Operand> ins = {over(x, sp), channel(rm), channel(rv)};
    if (w.isTensor()) ins.push_back(channel(w));
    if (b.isTensor()) ins.push_back(channel(b));
    outs.push_back(pointwise(c.e, sp.withDtype(c.out(0).dtype), ins, t, [&](Scalars& s, std::vector<std::string>& v) {
      return affine(s, v, mul(s, sub(s, v[0], v[1], t), invSqrt(s, v[2], eps, t), t), 3);
    }));
    for (size_t i = 1; i < 3 && i < c.outs.size(); ++i) {
      const TensorType& o = c.out(i);
      bool empty = false;
      for (const Dim& d : o.dims) empty = empty || (d.isStatic() && d.size == 0);
      if (empty)
        outs.push_back(Value::tensor(c.e.fill(o, 0), o));
      else if (i == 1)
        outs.push_back(c.e.convert(rm, o.dtype));
      else
        outs.push_back(pointwise(c.e, rv.type.withDtype(o.dtype), {over(rv, rv.type)}, t,
                                 [&](Scalars& s, std::vector<std::string>& v) { return invSqrt(s, v[0], eps, t); }));
    }
    if (c.outs.size() > 3) {
      outs.push_back(c.e.convert(rm, c.out(3).dtype));
      outs.push_back(c.e.convert(rv, c.out(4).dtype));
    }
  }
  outs.resize(c.outs.size());
  return Value::list(outs);
}

// PyTorch's CPU batch norm backward, with mean/invstd the saved batch statistics in training and
// the running ones in eval; sums over every dim but the channels:
//   train: dx = (g - sum(g)/N - (x - mean) * sum((x - mean) g) * invstd^2 / N) * invstd * w
//   eval:  dx = g * invstd * w;   dweight = sum((x - mean) g) * invstd;   dbias = sum(g)
Value batchNormBackward(OpCall& c) {
  const Value &g = c.tensor(0), &x = c.tensor(1), &w = c.arg(2);
  bool train = c.flag(c.index("train"));
  double eps = c.real(c.index("eps"));
  std::vector<bool> mask = outputMask(c), red = batchDims(x);
  DType t = floatCompute(x.type.dtype);
  const TensorType& sp = x.type;
  const Value& mean = train ? c.arg(c.index("save_mean")) : c.arg(c.index("running_mean"));
  Value invstd = train ? c.arg(c.index("save_invstd")) : c.arg(c.index("running_var"));
  if (!mean.isTensor() || !invstd.isTensor())
    throw Unsupported(train ? "batch norm backward without saved statistics"
                            : "batch norm backward in eval mode without running stats");
  if (!train)
    invstd = pointwise(c.e, invstd.type.withDtype(t), {over(invstd, invstd.type)}, t,
                       [&](Scalars& s, std::vector<std::string>& v) { return invSqrt(s, v[0], eps, t); });
  std::vector<Operand> base = {over(g, sp), over(x, sp), channel(mean), channel(invstd)};
  Value sumG = sumOf(c.e, sp, {over(g, sp)}, red, true, t, [](Scalars&, std::vector<std::string>& v) { return v[0]; });
  Value dot = sumOf(c.e, sp, base, red, true, t,
                    [&](Scalars& s, std::vector<std::string>& v) { return mul(s, sub(s, v[1], v[2], t), v[0], t); });
  Value dx, dw, db;
  if (mask[0]) {
    std::vector<Operand> ins = base;
    ins.push_back(over(sumG, sp));
    ins.push_back(over(dot, sp));
    if (w.isTensor()) ins.push_back(channel(w));
    std::string n = train ? count(c.e, sp, red, t) : "";
    dx = pointwise(c.e, sp.withDtype(c.out(0).dtype), ins, t, [&](Scalars& s, std::vector<std::string>& v) {
      std::string r = v[0];
      if (train) {
        std::string proj = s.op("arith.divf", mul(s, mul(s, v[5], v[3], t), v[3], t), n, t);
        r = sub(s, sub(s, v[0], s.op("arith.divf", v[4], n, t), t), mul(s, sub(s, v[1], v[2], t), proj, t), t);
      }
      r = mul(s, r, v[3], t);
      return w.isTensor() ? mul(s, r, v[6], t) : r;
    });
  }
  if (mask[1])
    dw = pointwise(c.e, TensorType{c.out(1).dtype, {sp.dims[1]}}, {kept(dot, red, false), over(invstd, invstd.type)}, t,
                   [&](Scalars& s, std::vector<std::string>& v) { return mul(s, v[0], v[1], t); });
  if (mask[2]) db = c.e.convert(squeeze(c.e, sumG, red), c.out(2).dtype);
  return Value::list({dx, dw, db});
}

}  // namespace

// ---- group norm ----------------------------------------------------------------------------

// native_group_norm(input [N, C, *], weight, bias, N, C, HxW, group, eps) -> (y, mean [N, G],
// rstd [N, G]): statistics over each group's C / G channels and all spatial positions. The
// input is read at channel g * (C / G) + c, so C must be static; spatial sizes may be symbolic.
Value groupNorm(OpCall& c) {
  const Value& x = c.tensor(0);
  const Value &w = c.arg(1), &b = c.arg(2);
  int64_t groups = c.integer(6);
  double eps = c.real(7);
  size_t r = x.type.rank();
  if (r < 2 || !x.type.dims[1].isStatic() || groups <= 0 || x.type.dims[1].size % groups)
    throw Unsupported("group norm needs a static channel count that the groups divide");
  DType t = floatCompute(x.type.dtype);
  int64_t per = x.type.dims[1].size / groups;
  TensorType stat{t, {x.type.dims[0], Dim{groups, ""}}};
  // loops: n, g, channel in group, spatial...: x at (n, g * per + c, spatial...)
  Strings xmap = {"d0", "d1 * " + std::to_string(per) + " + d2"}, iters = {"parallel", "parallel", "reduction"};
  for (size_t d = 2; d < r; ++d) xmap.push_back("d" + std::to_string(d + 1)), iters.push_back("reduction");
  Scalars s0 = c.e.scalars();
  std::string count = c.e.index(per);
  for (size_t d = 2; d < r; ++d) count = c.e.indexOp("arith.muli", count, c.e.dimSize(x.type, d));
  std::string n = s0.cast(c.e.fromIndex(count), DType::I64, t);
  // A loop extent for the in-group channels, which no operand has as a plain dim.
  TensorType extentT{DType::F32, {Dim{per, ""}}};
  GenericInput extent{c.e.empty(extentT), extentT, {"d2"}};
  auto statistic = [&](const std::vector<GenericInput>& extra,
                       const std::function<std::string(Scalars&, Strings&)>& term) {
    std::vector<GenericInput> ins = {{x.ssa, x.type, xmap}, extent};
    ins.insert(ins.end(), extra.begin(), extra.end());
    return c.e.generic(
        stat, {"d0", "d1"}, ins, iters,
        [&](Strings& a) {
          Scalars s = c.e.scalars();
          return s.op("arith.addf", a.back(), term(s, a), t);
        },
        c.e.fill(stat, 0));
  };
  std::string sum = statistic({}, [&](Scalars& s, Strings& a) { return s.cast(a[0], x.type.dtype, t); });
  std::string mean = c.e.generic(stat, {"d0", "d1"}, {{sum, stat, {"d0", "d1"}}}, {"parallel", "parallel"},
                                 [&](Strings& a) { return c.e.scalars().op("arith.divf", a[0], n, t); });
  std::string ss = statistic({{mean, stat, {"d0", "d1"}}}, [&](Scalars& s, Strings& a) {
    std::string dev = sub(s, s.cast(a[0], x.type.dtype, t), a[2], t);
    return mul(s, dev, dev, t);
  });
  std::string rstd =
      c.e.generic(stat, {"d0", "d1"}, {{ss, stat, {"d0", "d1"}}}, {"parallel", "parallel"}, [&](Strings& a) {
        Scalars s = c.e.scalars();
        return invSqrt(s, s.op("arith.divf", a[0], n, t), eps, t);
      });
  // y over the input's space: statistics at (n, channel / per), weight and bias at the channel.
  std::string group = "d1 floordiv " + std::to_string(per);
  std::vector<GenericInput> ins = {
      {x.ssa, x.type, loopDims(r)}, {mean, stat, {"d0", group}}, {rstd, stat, {"d0", group}}};
  if (w.isTensor()) ins.push_back({w.ssa, w.type, {"d1"}});
  if (b.isTensor()) ins.push_back({b.ssa, b.type, {"d1"}});
  const TensorType& out = c.out(0);
  std::string y = c.e.generic(out, loopDims(r), ins, Strings(r, "parallel"), [&](Strings& a) {
    Scalars s = c.e.scalars();
    std::string v = mul(s, sub(s, s.cast(a[0], x.type.dtype, t), a[1], t), a[2], t);
    size_t i = 3;
    if (w.isTensor()) v = mul(s, v, s.cast(a[i++], w.type.dtype, t), t);
    if (b.isTensor()) v = add(s, v, s.cast(a[i], b.type.dtype, t), t);
    return s.cast(v, t, out.dtype);
  });
  return Value::list({Value::tensor(y, out), c.e.convert(Value::tensor(mean, stat), c.out(1).dtype),
                      c.e.convert(Value::tensor(rstd, stat), c.out(2).dtype)});
}

void addNormalizationOps(OpTable& t) {
  t["aten::native_group_norm.default"] = groupNorm;
  t["aten::native_layer_norm.default"] = layerNorm;
  t["aten::native_layer_norm_backward.default"] = layerNormBackward;
  // (input, weight, bias, running_mean, running_var, training, momentum, eps)
  for (const char* name : {"aten::native_batch_norm.default", "aten::_native_batch_norm_legit_functional.default",
                           "aten::_native_batch_norm_legit.default"})
    t[name] = [](OpCall& c) {
      return batchNorm(c, c.tensor(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4), c.flag(5), c.real(6), c.real(7));
    };
  // (input, weight, bias, training, momentum, eps): no running stats
  t["aten::_native_batch_norm_legit.no_stats"] = [](OpCall& c) {
    return batchNorm(c, c.tensor(0), c.arg(1), c.arg(2), Value(), Value(), c.flag(3), c.real(4), c.real(5));
  };
  // (input, weight, bias, running_mean, running_var, momentum, eps)
  t["aten::_native_batch_norm_legit_no_training.default"] = [](OpCall& c) {
    return batchNorm(c, c.tensor(0), c.arg(1), c.arg(2), c.arg(3), c.arg(4), false, c.real(5), c.real(6));
  };
  t["aten::native_batch_norm_backward.default"] = batchNormBackward;
}

}  // namespace dynrep::replay::lowering
