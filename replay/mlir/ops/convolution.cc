// Convolution and pooling as linalg.generics over a tensor.pad'ed input with strided window
// maps (`d2 * 2 + d5`). Backward ops are gathers where that stays a generic: the input
// gradient of a convolution or average pool reads the output gradient spread out by the
// stride into zeros (tensor.insert_slice with strides), so it is a correlation with window
// maps again; max-pool backward scatters through its indices with scf.for. Accumulation is in
// float32 for float16/bfloat16 (computeType) and rounded once.
#include <cmath>
#include <limits>

#include "ops.h"

namespace dynrep::replay::lowering {

namespace {

std::vector<std::string> dims(size_t n, size_t from = 0) {
  std::vector<std::string> m;
  for (size_t d = 0; d < n; ++d) m.push_back("d" + std::to_string(from + d));
  return m;
}
std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}
std::string d(size_t i) { return "d" + std::to_string(i); }
// A window expression: out * stride + k * dilation + offset (the offset may be negative).
std::string window(size_t out, int64_t stride, size_t k, int64_t dilation, int64_t offset = 0) {
  std::string s = d(out) + " * " + std::to_string(stride) + (dilation < 0 ? " - " : " + ") + d(k) + " * " + std::to_string(std::abs(dilation));
  return offset ? s + (offset < 0 ? " - " : " + ") + std::to_string(std::abs(offset)) : s;
}

std::string loopIndex(Emitter& e, size_t i) {
  std::string v = e.fresh("li");
  e.line(v + " = linalg.index " + std::to_string(i) + " : index");
  return v;
}
std::string ix(Emitter& e, const std::string& op, const std::string& a, const std::string& b) {
  std::string out = e.fresh("ix");
  e.line(out + " = " + op + " " + a + ", " + b + " : index");
  return out;
}
std::string ixCmp(Emitter& e, const std::string& pred, const std::string& a, const std::string& b) {
  std::string out = e.fresh("ic");
  e.line(out + " = arith.cmpi " + pred + ", " + a + ", " + b + " : index");
  return out;
}
// An index as a number of type t (through i64).
std::string ixTo(Emitter& e, const std::string& i, DType t) {
  std::string v = e.fresh("iv");
  e.line(v + " = arith.index_cast " + i + " : index to i64");
  return e.scalars().cast(v, DType::I64, t);
}

Dim plus(const Dim& dim, int64_t k) {
  if (dim.isStatic()) return Dim{dim.size + k, ""};
  return Dim{-1, "(" + dim.expr + ") + " + std::to_string(k)};
}

Value converted(Emitter& e, const Value& v, DType to) {
  if (v.type.dtype == to) return v;
  return e.elementwise(v.type.withDtype(to), {v}, computeType(to), [](Scalars&, std::vector<std::string>& a) { return a[0]; });
}

double lowest(DType t) {
  if (isFloat(t)) return -HUGE_VAL;
  return t == DType::Bool || isUnsigned(t) ? 0 : -std::ldexp(1.0, bitWidth(t) - 1);
}

// x padded by low/high per dim with `value`: a filled tensor with x inserted. (tensor.pad
// with dynamic sizes needs tensor's shape-reification interfaces at bufferization, which the
// engine's context does not register; fill + insert_slice bufferizes to the same copy.)
Value pad(Emitter& e, const Value& x, const std::vector<int64_t>& low, const std::vector<int64_t>& high, double value) {
  bool any = false;
  TensorType t = x.type;
  std::vector<std::string> offs, sizes, ones;
  for (size_t i = 0; i < t.rank(); ++i) {
    any = any || low[i] || high[i];
    t.dims[i] = plus(t.dims[i], low[i] + high[i]);
    offs.push_back(std::to_string(low[i]));
    sizes.push_back(x.type.dims[i].isStatic() ? std::to_string(x.type.dims[i].size) : e.dimSize(x.type, i));
    ones.push_back("1");
  }
  if (!any) return x;
  std::string name = e.fresh("pad");
  e.line(name + " = tensor.insert_slice " + x.ssa + " into " + e.fill(t, value) + "[" + join(offs) + "] [" + join(sizes) + "] [" + join(ones) + "] : " +
         x.type.str() + " into " + t.str());
  return Value::tensor(name, t);
}

// A tensor whose only use is to give a generic the extent of loops that appear in no operand
// as a plain dim (window offsets): tensor.empty, never read.
GenericInput extent(Emitter& e, const std::vector<Dim>& sizes, const std::vector<std::string>& map) {
  TensorType t{DType::F32, sizes};
  return {e.empty(t), t, map};
}

// A linalg.generic with several outputs (values and indices of a max pool).
std::vector<std::string> generics(Emitter& e, const std::vector<TensorType>& outs, const std::vector<std::string>& inits,
                                  const std::vector<std::string>& outMap, const std::vector<GenericInput>& ins,
                                  const std::vector<std::string>& iterators,
                                  const std::function<std::vector<std::string>(std::vector<std::string>&)>& body) {
  std::string maps, insText, insTypes, outTypes, iters, args, elts;
  for (const GenericInput& in : ins) {
    maps += mapText(iterators.size(), in.map) + ", ";
    insText += (insText.empty() ? "" : ", ") + in.ssa;
    insTypes += (insTypes.empty() ? "" : ", ") + in.type.str();
  }
  for (size_t i = 0; i < outs.size(); ++i) {
    maps += std::string(i ? ", " : "") + mapText(iterators.size(), outMap);
    outTypes += (i ? ", " : "") + outs[i].str();
    elts += std::string(i ? ", " : "") + elementType(outs[i].dtype);
  }
  // The string form: MLIR 19's parser reads each iterator as a StringAttr (the
  // #linalg.iterator_type<...> form is read through a bad cast).
  for (size_t i = 0; i < iterators.size(); ++i) iters += std::string(i ? ", " : "") + mlirString(iterators[i]);
  std::string name = e.fresh("gm");
  e.open(name + ":" + std::to_string(outs.size()) + " = linalg.generic {indexing_maps = [" + maps + "], iterator_types = [" + iters + "]} ins(" +
         insText + " : " + insTypes + ") outs(" + join(inits) + " : " + outTypes + ") {");
  std::vector<std::string> a;
  for (size_t i = 0; i < ins.size() + outs.size(); ++i) {
    a.push_back(e.fresh("b"));
    DType t = i < ins.size() ? ins[i].type.dtype : outs[i - ins.size()].dtype;
    args += std::string(i ? ", " : "") + a.back() + ": " + elementType(t);
  }
  e.label("^bb0(" + args + "):");
  std::vector<std::string> r = body(a);
  e.line("linalg.yield " + join(r) + " : " + elts);
  e.close("} -> (" + outTypes + ")");
  std::vector<std::string> results;
  for (size_t i = 0; i < outs.size(); ++i) results.push_back(name + "#" + std::to_string(i));
  return results;
}

// An int[N] argument as N values: a single value repeats; `fallback` when empty (stride).
std::vector<int64_t> spatial(const OpCall& c, size_t i, size_t n, const std::vector<int64_t>& fallback = {}) {
  std::vector<int64_t> v = c.ints(i);
  if (v.empty()) v = fallback;
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n) throw Unsupported("argument '" + c.names[i] + "' has " + std::to_string(v.size()) + " values for " + std::to_string(n) + " dims");
  return v;
}

// ---- convolution -----------------------------------------------------------------------------

struct Conv {
  size_t k = 0;  // spatial dims
  std::vector<int64_t> stride, padding, dilation, kernel;
  int64_t groups = 1, cg = 0, og = 0;  // input/output channels per group
};

Conv convParams(const OpCall& c, const Value& input, const Value& weight, size_t first) {
  Conv p;
  if (weight.type.rank() < 3 || input.type.rank() != weight.type.rank()) throw Unsupported("convolution of an unbatched input or a weight of rank < 3");
  p.k = weight.type.rank() - 2;
  p.stride = spatial(c, first, p.k);
  p.padding = spatial(c, first + 1, p.k);
  p.dilation = spatial(c, first + 2, p.k);
  if (c.flag(first + 3)) throw Unsupported("transposed convolution is not lowered");
  p.groups = c.integer(first + 5);
  for (size_t i = 0; i < p.k; ++i) p.kernel.push_back(weight.type.dims[2 + i].size);  // -1: symbolic
  if (p.groups != 1) {
    if (!weight.type.dims[0].isStatic() || !weight.type.dims[1].isStatic()) throw Unsupported("grouped convolution with symbolic channels");
    p.og = weight.type.dims[0].size / p.groups;
    p.cg = weight.type.dims[1].size;
  }
  return p;
}

// Input channel for output channel expression `o` and in-group channel `ci`.
std::string inChannel(const Conv& p, const std::string& o, const std::string& ci) {
  return p.groups == 1 ? ci : o + " floordiv " + std::to_string(p.og) + " * " + std::to_string(p.cg) + " + " + ci;
}

Value convolution(OpCall& c) {
  const Value& x = c.tensor(0);
  const Value& w = c.tensor(1);
  Conv p = convParams(c, x, w, 3);
  const TensorType& out = c.out();
  DType ct = computeType(out.dtype);
  TensorType acc = out.withDtype(ct);
  std::vector<int64_t> pads = {0, 0};
  pads.insert(pads.end(), p.padding.begin(), p.padding.end());
  Value xp = pad(c.e, x, pads, pads, 0);
  // loops: n, o, out spatial (k), ci, kernel (k)
  size_t ci = 2 + p.k, k0 = 3 + p.k, n = 3 + 2 * p.k;
  std::vector<std::string> xmap = {"d0", inChannel(p, "d1", d(ci))}, wmap = {"d1", d(ci)};
  for (size_t i = 0; i < p.k; ++i) {
    xmap.push_back(window(2 + i, p.stride[i], k0 + i, p.dilation[i]));
    wmap.push_back(d(k0 + i));
  }
  std::string init = c.e.fill(acc, 0);
  if (!c.none(2)) {
    const Value& b = c.tensor(2);
    init = c.e.generic(acc, dims(out.rank()), {{b.ssa, b.type, {"d1"}}}, std::vector<std::string>(out.rank(), "parallel"),
                       [&](std::vector<std::string>& a) { return c.e.scalars().cast(a[0], b.type.dtype, ct); });
  }
  std::vector<std::string> iters(n, "parallel");
  std::fill(iters.begin() + static_cast<long>(ci), iters.end(), "reduction");
  std::string r = c.e.generic(acc, dims(2 + p.k), {{xp.ssa, xp.type, xmap}, {w.ssa, w.type, wmap}}, iters, [&](std::vector<std::string>& a) {
    Scalars s = c.e.scalars();
    return s.op("arith.addf", a[2], s.op("arith.mulf", s.cast(a[0], x.type.dtype, ct), s.cast(a[1], w.type.dtype, ct), ct), ct);
  }, init);
  return converted(c.e, Value::tensor(r, acc), out.dtype);
}

Value convolutionBackward(OpCall& c) {
  const Value& gy = c.tensor(0);
  const Value& x = c.tensor(1);
  const Value& w = c.tensor(2);
  Conv p = convParams(c, x, w, 4);
  const Value& maskArg = c.arg(10);
  std::vector<bool> mask = {true, true, true};
  if (maskArg.kind == Value::Kind::List && maskArg.items.size() == 3)
    for (size_t i = 0; i < 3; ++i) mask[i] = maskArg.items[i].number != 0;
  DType ct = computeType(c.out(0).dtype);
  Value g = converted(c.e, gy, ct);
  std::vector<Value> results(3);
  size_t k = p.k;
  if (mask[0]) {
    // grad_input[n, c, h] = sum over (oj, kh) of Z[n, o, h + pad + off - kh * dil] * w[o, c', kh], where Z holds
    // grad_output[oh] at oh * stride + off and zeros elsewhere (off = dil * (K - 1) keeps indices >= 0).
    TensorType zt = g.type;
    std::vector<std::string> offs = {c.e.index(0), c.e.index(0)}, sizes, strides = {"1", "1"};
    std::vector<int64_t> off(k);
    for (size_t i = 0; i < k; ++i) {
      if (p.kernel[i] < 0) throw Unsupported("the input gradient of a convolution whose kernel size is symbolic");
      off[i] = p.dilation[i] * (p.kernel[i] - 1);
      zt.dims[2 + i] = plus(x.type.dims[2 + i], 2 * p.padding[i] + off[i]);
      offs.push_back(c.e.index(off[i]));
      strides.push_back(std::to_string(p.stride[i]));
    }
    for (size_t i = 0; i < g.type.rank(); ++i) sizes.push_back(g.type.dims[i].isStatic() ? std::to_string(g.type.dims[i].size) : c.e.dimSize(g.type, i));
    std::string z = c.e.fresh("spread");
    c.e.line(z + " = tensor.insert_slice " + g.ssa + " into " + c.e.fill(zt, 0) + "[" + join(offs) + "] [" + join(sizes) + "] [" + join(strides) +
             "] : " + g.type.str() + " into " + zt.str());
    // loops: n, c, in spatial (k), oj, kernel (k)
    size_t oj = 2 + k, k0 = 3 + k;
    std::string o = p.groups == 1 ? d(oj) : "d1 floordiv " + std::to_string(p.cg) + " * " + std::to_string(p.og) + " + " + d(oj);
    std::vector<std::string> zmap = {"d0", o}, wmap = {o, p.groups == 1 ? "d1" : "d1 mod " + std::to_string(p.cg)};
    for (size_t i = 0; i < k; ++i) {
      zmap.push_back(window(2 + i, 1, k0 + i, -p.dilation[i], p.padding[i] + off[i]));
      wmap.push_back(d(k0 + i));
    }
    std::vector<GenericInput> ins = {{z, zt, zmap}, {w.ssa, w.type, wmap}};
    if (p.groups != 1) ins.push_back(extent(c.e, {Dim{p.og, ""}}, {d(oj)}));
    TensorType acc = c.out(0).withDtype(ct);
    std::vector<std::string> iters(3 + 2 * k, "parallel");
    std::fill(iters.begin() + static_cast<long>(oj), iters.end(), "reduction");
    std::string r = c.e.generic(acc, dims(2 + k), ins, iters, [&](std::vector<std::string>& a) {
      Scalars s = c.e.scalars();
      return s.op("arith.addf", a[ins.size()], s.op("arith.mulf", a[0], s.cast(a[1], w.type.dtype, ct), ct), ct);
    }, c.e.fill(acc, 0));
    results[0] = converted(c.e, Value::tensor(r, acc), c.out(0).dtype);
  }
  if (mask[1]) {
    // grad_weight[o, ci, kh] = sum over (n, oh) of grad_output[n, o, oh] * x_padded[n, c, oh * stride + kh * dil]
    std::vector<int64_t> pads = {0, 0};
    pads.insert(pads.end(), p.padding.begin(), p.padding.end());
    Value xp = pad(c.e, x, pads, pads, 0);
    size_t nn = 2 + k, o0 = 3 + k;
    std::vector<std::string> xmap = {d(nn), inChannel(p, "d0", "d1")}, gmap = {d(nn), "d0"};
    for (size_t i = 0; i < k; ++i) {
      xmap.push_back(window(o0 + i, p.stride[i], 2 + i, p.dilation[i]));
      gmap.push_back(d(o0 + i));
    }
    TensorType acc = c.out(1).withDtype(ct);
    std::vector<std::string> iters(3 + 2 * k, "parallel");
    std::fill(iters.begin() + static_cast<long>(nn), iters.end(), "reduction");
    std::string r = c.e.generic(acc, dims(2 + k), {{g.ssa, g.type, gmap}, {xp.ssa, xp.type, xmap}}, iters, [&](std::vector<std::string>& a) {
      Scalars s = c.e.scalars();
      return s.op("arith.addf", a[2], s.op("arith.mulf", a[0], s.cast(a[1], x.type.dtype, ct), ct), ct);
    }, c.e.fill(acc, 0));
    results[1] = converted(c.e, Value::tensor(r, acc), c.out(1).dtype);
  }
  if (mask[2]) {
    TensorType acc = c.out(2).withDtype(ct);
    std::vector<std::string> gmap = {"d1", "d0"}, iters(2 + k, "reduction");
    iters[0] = "parallel";
    for (size_t i = 0; i < k; ++i) gmap.push_back(d(2 + i));
    std::string r = c.e.generic(acc, {"d0"}, {{g.ssa, g.type, gmap}}, iters, [&](std::vector<std::string>& a) {
      return c.e.scalars().op("arith.addf", a[1], a[0], ct);
    }, c.e.fill(acc, 0));
    results[2] = converted(c.e, Value::tensor(r, acc), c.out(2).dtype);
  }
  return Value::list(results);
}

// ---- pooling ---------------------------------------------------------------------------------

struct Pool {
  size_t lead = 0;  // dims before H, W (batch and channels)
  std::vector<int64_t> kernel, stride, padding, dilation = {1, 1};
};

Pool poolParams(const OpCall& c, const Value& x, size_t first, bool dilation) {
  Pool p;
  if (x.type.rank() < 3 || x.type.rank() > 4) throw Unsupported("2-d pooling of a " + std::to_string(x.type.rank()) + "-d input");
  p.lead = x.type.rank() - 2;
  p.kernel = spatial(c, first, 2);
  p.stride = spatial(c, first + 1, 2, p.kernel);
  p.padding = spatial(c, first + 2, 2);
  if (dilation) p.dilation = spatial(c, first + 3, 2);
  return p;
}

std::vector<int64_t> planePad(const Pool& p, int64_t h, int64_t w) {
  std::vector<int64_t> v(p.lead, 0);
  v.push_back(h);
  v.push_back(w);
  return v;
}

// max_pool2d_with_indices: the first maximum of each window (a NaN wins, the last one, as
// PyTorch's kernel compares `val > max || isnan(val)`), and its index h * W + w in the plane.
Value maxPool(OpCall& c) {
  const Value& x = c.tensor(0);
  Pool p = poolParams(c, x, 1, true);
  size_t L = p.lead;
  DType dt = x.type.dtype, ct = computeType(dt);
  Value xp = pad(c.e, x, planePad(p, p.padding[0], p.padding[1]),
                 planePad(p, p.padding[0] + (p.kernel[0] - 1) * p.dilation[0], p.padding[1] + (p.kernel[1] - 1) * p.dilation[1]), lowest(dt));
  std::string H = c.e.dimSize(x.type, L), W = c.e.dimSize(x.type, L + 1);
  std::vector<std::string> xmap = dims(L);
  for (size_t i = 0; i < 2; ++i) xmap.push_back(window(L + i, p.stride[i], L + 2 + i, p.dilation[i]));
  std::vector<GenericInput> ins = {{xp.ssa, xp.type, xmap}, extent(c.e, {Dim{p.kernel[0], ""}, Dim{p.kernel[1], ""}}, {d(L + 2), d(L + 3)})};
  std::vector<std::string> iters(L + 4, "parallel");
  iters[L + 2] = iters[L + 3] = "reduction";
  TensorType vt = c.out(0), it = c.out(1);
  std::vector<std::string> r = generics(c.e, {vt, it}, {c.e.fill(vt, lowest(dt)), c.e.fill(it, -1)}, dims(L + 2), ins, iters, [&](std::vector<std::string>& a) {
    Scalars s = c.e.scalars();
    std::string pos[2];
    std::string valid = s.constant(1, DType::Bool);
    for (size_t i = 0; i < 2; ++i) {
      std::string at = ix(c.e, "arith.addi", ix(c.e, "arith.muli", loopIndex(c.e, L + i), c.e.index(p.stride[i])),
                          ix(c.e, "arith.muli", loopIndex(c.e, L + 2 + i), c.e.index(p.dilation[i])));
      pos[i] = ix(c.e, "arith.subi", at, c.e.index(p.padding[i]));
      std::string in = s.op("arith.andi", ixCmp(c.e, "sge", pos[i], c.e.index(0)), ixCmp(c.e, "slt", pos[i], i ? W : H), DType::Bool);
      valid = s.op("arith.andi", valid, in, DType::Bool);
    }
    std::string v = s.cast(a[0], dt, ct), m = s.cast(a[2], dt, ct);
    std::string better = s.cmp(isFloat(ct) ? "ogt" : "sgt", v, m, ct);
    if (isFloat(ct)) better = s.op("arith.ori", better, s.cmp("uno", v, v, ct), DType::Bool);
    std::string first = s.op("arith.andi", valid, s.cmp("eq", a[3], s.constant(-1, DType::I64), DType::I64), DType::Bool);
    better = s.op("arith.ori", better, first, DType::Bool);
    std::string flat = ixTo(c.e, ix(c.e, "arith.addi", ix(c.e, "arith.muli", pos[0], W), pos[1]), DType::I64);
    return std::vector<std::string>{s.select(better, a[0], a[2], vt.dtype), s.select(better, flat, a[3], DType::I64)};
  });
  return Value::list({Value::tensor(r[0], vt), Value::tensor(r[1], it)});
}

// grad_input[plane, indices[p]] += grad_output[p], a loop over the output gradient.
Value maxPoolBackward(OpCall& c) {
  const Value& gy = c.tensor(0);
  const Value& x = c.tensor(1);
  const Value& idx = c.tensor(7);
  const TensorType& out = c.out();
  if (x.type.rank() < 3) throw Unsupported("max_pool2d backward of a " + std::to_string(x.type.rank()) + "-d input");
  size_t L = x.type.rank() - 2;
  DType ct = computeType(out.dtype);
  TensorType acc = out.withDtype(ct);
  std::string W = c.e.dimSize(x.type, L + 1), last = ix(c.e, "arith.subi", ix(c.e, "arith.muli", c.e.dimSize(x.type, L), W), c.e.index(1));
  std::vector<std::string> sizes;
  for (size_t i = 0; i < gy.type.rank(); ++i) sizes.push_back(c.e.dimSize(gy.type, i));
  std::function<std::string(std::vector<std::string>, const std::string&)> nest = [&](std::vector<std::string> iv, const std::string& t) -> std::string {
    Scalars s = c.e.scalars();
    if (iv.size() == sizes.size()) {
      std::string i = c.e.fresh("pi");
      c.e.line(i + " = tensor.extract " + idx.ssa + "[" + join(iv) + "] : " + idx.type.str());
      std::string at = c.e.fresh("pa");
      c.e.line(at + " = arith.index_cast " + i + " : i64 to index");
      at = ix(c.e, "arith.minsi", ix(c.e, "arith.maxsi", at, c.e.index(0)), last);
      std::vector<std::string> to(iv.begin(), iv.begin() + static_cast<long>(L));
      to.push_back(ix(c.e, "arith.divsi", at, W));
      to.push_back(ix(c.e, "arith.remsi", at, W));
      std::string gv = c.e.fresh("gv"), old = c.e.fresh("old"), put = c.e.fresh("put");
      c.e.line(gv + " = tensor.extract " + gy.ssa + "[" + join(iv) + "] : " + gy.type.str());
      c.e.line(old + " = tensor.extract " + t + "[" + join(to) + "] : " + acc.str());
      std::string sum = s.op("arith.addf", old, s.cast(gv, gy.type.dtype, ct), ct);
      c.e.line(put + " = tensor.insert " + sum + " into " + t + "[" + join(to) + "] : " + acc.str());
      return put;
    }
    std::string name = c.e.fresh("for"), v = c.e.fresh("iv"), a = c.e.fresh("acc"), lo = c.e.index(0), one = c.e.index(1);
    c.e.open(name + " = scf.for " + v + " = " + lo + " to " + sizes[iv.size()] + " step " + one + " iter_args(" + a + " = " + t + ") -> (" + acc.str() + ") {");
    iv.push_back(v);
    c.e.line("scf.yield " + nest(iv, a) + " : " + acc.str());
    c.e.close("}");
    return name;
  };
  std::string r = nest({}, c.e.fill(acc, 0));
  return converted(c.e, Value::tensor(r, acc), out.dtype);
}

// PyTorch's avg_pool2d divisor for output (oh, ow): the window clipped to the padded input
// (count_include_pad) or to the input, unless divisor_override.
std::string avgDivisor(OpCall& c, const Pool& p, const std::string& H, const std::string& W, bool includePad, int64_t override_, DType ct) {
  Scalars s = c.e.scalars();
  if (override_) return s.constant(static_cast<double>(override_), ct);
  std::string size[2], clipped[2], bound[2] = {H, W};
  for (size_t i = 0; i < 2; ++i) {
    std::string start = ix(c.e, "arith.subi", ix(c.e, "arith.muli", loopIndex(c.e, p.lead + i), c.e.index(p.stride[i])), c.e.index(p.padding[i]));
    std::string end = ix(c.e, "arith.minsi", ix(c.e, "arith.addi", start, c.e.index(p.kernel[i])), ix(c.e, "arith.addi", bound[i], c.e.index(p.padding[i])));
    size[i] = ix(c.e, "arith.subi", end, start);
    clipped[i] = ix(c.e, "arith.subi", ix(c.e, "arith.minsi", end, bound[i]), ix(c.e, "arith.maxsi", start, c.e.index(0)));
  }
  return ixTo(c.e, includePad ? ix(c.e, "arith.muli", size[0], size[1]) : ix(c.e, "arith.muli", clipped[0], clipped[1]), ct);
}

// avg_pool2d(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override) and
// its backward (grad_output first); `args` is where kernel_size is.
Value avgPool(OpCall& c, bool backward) {
  size_t a0 = backward ? 2 : 1;
  const Value& x = c.tensor(backward ? 1 : 0);
  Pool p = poolParams(c, x, a0, false);
  bool includePad = c.flag(a0 + 4);
  int64_t override_ = c.none(a0 + 5) ? 0 : c.integer(a0 + 5);
  size_t L = p.lead;
  const TensorType& out = c.out();
  DType ct = computeType(out.dtype);
  std::string H = c.e.dimSize(x.type, L), W = c.e.dimSize(x.type, L + 1);
  std::vector<std::string> iters(L + 4, "parallel");
  iters[L + 2] = iters[L + 3] = "reduction";
  GenericInput kernel = extent(c.e, {Dim{p.kernel[0], ""}, Dim{p.kernel[1], ""}}, {d(L + 2), d(L + 3)});
  if (!backward) {
    Value xp = pad(c.e, converted(c.e, x, ct), planePad(p, p.padding[0], p.padding[1]), planePad(p, p.padding[0] + p.kernel[0], p.padding[1] + p.kernel[1]), 0);
    std::vector<std::string> xmap = dims(L);
    for (size_t i = 0; i < 2; ++i) xmap.push_back(window(L + i, p.stride[i], L + 2 + i, 1));
    TensorType acc = out.withDtype(ct);
    std::string sum = c.e.generic(acc, dims(L + 2), {{xp.ssa, xp.type, xmap}, kernel}, iters,
                                  [&](std::vector<std::string>& a) { return c.e.scalars().op("arith.addf", a[2], a[0], ct); }, c.e.fill(acc, 0));
    std::string r = c.e.generic(out, dims(L + 2), {{sum, acc, dims(L + 2)}}, std::vector<std::string>(L + 2, "parallel"), [&](std::vector<std::string>& a) {
      Scalars s = c.e.scalars();
      return s.cast(s.op("arith.divf", a[0], avgDivisor(c, p, H, W, includePad, override_, ct), ct), ct, out.dtype);
    });
    return Value::tensor(r, out);
  }
  // Backward: each output's gradient divided by its divisor, spread by the stride into zeros at
  // offset K - 1, then summed over the K x K window that reaches each input position.
  const Value& gy = c.tensor(0);
  TensorType gt = gy.type.withDtype(ct), zt = gt;
  std::string gd = c.e.generic(gt, dims(L + 2), {{gy.ssa, gy.type, dims(L + 2)}}, std::vector<std::string>(L + 2, "parallel"), [&](std::vector<std::string>& a) {
    Scalars s = c.e.scalars();
    return s.op("arith.divf", s.cast(a[0], gy.type.dtype, ct), avgDivisor(c, p, H, W, includePad, override_, ct), ct);
  });
  std::vector<std::string> offs(L, c.e.index(0)), sizes, strides(L, "1"), zmap = dims(L);
  for (size_t i = 0; i < 2; ++i) {
    zt.dims[L + i] = plus(x.type.dims[L + i], 2 * p.padding[i] + p.kernel[i] - 1);
    offs.push_back(c.e.index(p.kernel[i] - 1));
    strides.push_back(std::to_string(p.stride[i]));
    zmap.push_back(window(L + i, 1, L + 2 + i, -1, p.padding[i] + p.kernel[i] - 1));
  }
  for (size_t i = 0; i < gt.rank(); ++i) sizes.push_back(gt.dims[i].isStatic() ? std::to_string(gt.dims[i].size) : c.e.dimSize(gt, i));
  std::string z = c.e.fresh("spread");
  c.e.line(z + " = tensor.insert_slice " + gd + " into " + c.e.fill(zt, 0) + "[" + join(offs) + "] [" + join(sizes) + "] [" + join(strides) + "] : " +
           gt.str() + " into " + zt.str());
  TensorType acc = out.withDtype(ct);
  std::string r = c.e.generic(acc, dims(L + 2), {{z, zt, zmap}, kernel}, iters,
                              [&](std::vector<std::string>& a) { return c.e.scalars().op("arith.addf", a[2], a[0], ct); }, c.e.fill(acc, 0));
  return converted(c.e, Value::tensor(r, acc), out.dtype);
}

// Adaptive average pooling bins: [floor(i * In / Out), ceil((i + 1) * In / Out)). The same
// formula with In and Out swapped gives the bins that cover input position i (the backward).
// Bins are non-negative, so plain unsigned division is floor division (arith's floordivsi and
// ceildivsi need arith-expand, which the LLVM pipeline does not run).
std::string binStart(Emitter& e, const std::string& i, const std::string& in, const std::string& out) {
  return ix(e, "arith.divui", ix(e, "arith.muli", i, in), out);
}
std::string binEnd(Emitter& e, const std::string& i, const std::string& in, const std::string& out) {
  std::string num = ix(e, "arith.muli", ix(e, "arith.addi", i, e.index(1)), in);
  return ix(e, "arith.divui", ix(e, "arith.addi", num, ix(e, "arith.subi", out, e.index(1))), out);
}
// The widest bin: exact for static sizes, else the bound ceil(In / Out) + 1 (extra positions
// are masked), computed here and bound to a symbol of its own so the loop's extent can use it.
Dim widestBin(Emitter& e, const Dim& in, const Dim& out) {
  if (in.isStatic() && out.isStatic() && out.size > 0) {
    int64_t m = 1;
    for (int64_t i = 0; i < out.size; ++i) m = std::max(m, ((i + 1) * in.size + out.size - 1) / out.size - i * in.size / out.size);
    return Dim{m, ""};
  }
  std::string n = e.sizeOf(in), o = e.sizeOf(out);
  std::string bound = ix(e, "arith.addi", ix(e, "arith.divui", ix(e, "arith.addi", n, ix(e, "arith.subi", o, e.index(1))), o), e.index(1));
  std::string symbol = "dynrep_" + e.fresh("bin").substr(1);
  e.bindSymbol(symbol, bound);
  return Dim{-1, symbol};
}

Value adaptiveAvgPool(OpCall& c, bool backward) {
  const Value& src = c.tensor(0);  // the input, or the output gradient
  const Value& x = backward ? c.tensor(1) : src;
  const TensorType& out = c.out();
  if (x.type.rank() < 3 || x.type.rank() > 4) throw Unsupported("adaptive pooling of a " + std::to_string(x.type.rank()) + "-d input");
  size_t L = x.type.rank() - 2;
  DType ct = computeType(out.dtype);
  const TensorType& pooled = backward ? src.type : out;  // [.., Ho, Wo]
  std::string in[2] = {c.e.dimSize(x.type, L), c.e.dimSize(x.type, L + 1)}, po[2] = {c.e.dimSize(pooled, L), c.e.dimSize(pooled, L + 1)};
  std::vector<Dim> span;
  for (size_t i = 0; i < 2; ++i) span.push_back(backward ? widestBin(c.e, pooled.dims[L + i], x.type.dims[L + i]) : widestBin(c.e, x.type.dims[L + i], pooled.dims[L + i]));
  std::vector<std::string> iters(L + 4, "parallel");
  iters[L + 2] = iters[L + 3] = "reduction";
  TensorType acc = out.withDtype(ct);
  // Forward: sum the bin, then divide by its height and width. Backward: each covering bin's
  // gradient divided by its height and width, as PyTorch's kernel adds them.
  std::string r = c.e.generic(acc, dims(L + 2), {extent(c.e, span, {d(L + 2), d(L + 3)})}, iters, [&](std::vector<std::string>& a) {
    Scalars s = c.e.scalars();
    std::vector<std::string> at = {};
    for (size_t i = 0; i < L; ++i) at.push_back(loopIndex(c.e, i));
    std::string valid = s.constant(1, DType::Bool), count[2];
    for (size_t i = 0; i < 2; ++i) {
      std::string o = loopIndex(c.e, L + i);
      std::string lo = backward ? binStart(c.e, o, po[i], in[i]) : binStart(c.e, o, in[i], po[i]);
      std::string hi = backward ? binEnd(c.e, o, po[i], in[i]) : binEnd(c.e, o, in[i], po[i]);
      std::string at_i = ix(c.e, "arith.addi", lo, loopIndex(c.e, L + 2 + i));
      valid = s.op("arith.andi", valid, ixCmp(c.e, "slt", at_i, hi), DType::Bool);
      at_i = ix(c.e, "arith.minsi", at_i, ix(c.e, "arith.subi", backward ? po[i] : in[i], c.e.index(1)));
      at.push_back(at_i);
      if (backward) count[i] = ix(c.e, "arith.subi", binEnd(c.e, at_i, in[i], po[i]), binStart(c.e, at_i, in[i], po[i]));
    }
    std::string v = c.e.fresh("x");
    c.e.line(v + " = tensor.extract " + src.ssa + "[" + join(at) + "] : " + src.type.str());
    v = s.cast(v, src.type.dtype, ct);
    if (backward) v = s.op("arith.divf", s.op("arith.divf", v, ixTo(c.e, count[0], ct), ct), ixTo(c.e, count[1], ct), ct);
    return s.op("arith.addf", a[1], s.select(valid, v, s.constant(0, ct), ct), ct);
  }, c.e.fill(acc, 0));
  if (backward) return converted(c.e, Value::tensor(r, acc), out.dtype);
  std::string q = c.e.generic(out, dims(L + 2), {{r, acc, dims(L + 2)}}, std::vector<std::string>(L + 2, "parallel"), [&](std::vector<std::string>& a) {
    Scalars s = c.e.scalars();
    std::string v = a[0];
    for (size_t i = 0; i < 2; ++i) {
      std::string o = loopIndex(c.e, L + i);
      v = s.op("arith.divf", v, ixTo(c.e, ix(c.e, "arith.subi", binEnd(c.e, o, in[i], po[i]), binStart(c.e, o, in[i], po[i])), ct), ct);
    }
    return s.cast(v, ct, out.dtype);
  });
  return Value::tensor(q, out);
}

}  // namespace

void addConvolutionOps(OpTable& t) {
  t["aten::convolution.default"] = convolution;
  t["aten::convolution_backward.default"] = convolutionBackward;
  t["aten::max_pool2d_with_indices.default"] = maxPool;
  t["aten::max_pool2d_with_indices_backward.default"] = maxPoolBackward;
  t["aten::avg_pool2d.default"] = [](OpCall& c) { return avgPool(c, false); };
  t["aten::avg_pool2d_backward.default"] = [](OpCall& c) { return avgPool(c, true); };
  t["aten::_adaptive_avg_pool2d.default"] = [](OpCall& c) { return adaptiveAvgPool(c, false); };
  t["aten::_adaptive_avg_pool2d_backward.default"] = [](OpCall& c) { return adaptiveAvgPool(c, true); };
}

}  // namespace dynrep::replay::lowering
