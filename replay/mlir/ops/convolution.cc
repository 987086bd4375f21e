// Convolution and pooling: linalg.generics over a padded input with strided window maps
// (`d2 * 2 + d5 * 1`). Backward ops stay gathers where they can: the input gradient of a
// convolution or an average pool reads the output gradient spread by the stride into zeros
// (tensor.insert_slice with strides), a correlation with window maps again; max-pool backward
// scatters through its indices with scf.for. float16/bfloat16 accumulate in float32
// (computeType) and are rounded once.
#include <cmath>

#include "ops.h"

namespace dynrep::replay::lowering {

namespace {

using Ints = std::vector<int64_t>;

std::string d(size_t i) { return "d" + std::to_string(i); }
// A window expression: out * stride + k * dilation + offset (dilation and offset may be < 0).
std::string window(size_t out, int64_t stride, size_t k, int64_t dilation, int64_t offset = 0) {
  std::string s = d(out) + " * " + std::to_string(stride) + (dilation < 0 ? " - " : " + ") + d(k) + " * " + std::to_string(std::abs(dilation));
  return offset ? s + (offset < 0 ? " - " : " + ") + std::to_string(std::abs(offset)) : s;
}
Dim plus(const Dim& dim, int64_t k) { return dim.isStatic() ? Dim{dim.size + k, ""} : Dim{-1, "(" + dim.expr + ") + " + std::to_string(k)}; }

// x inserted at `offsets` with `strides` into a tensor of type `to` filled with `value`: padding
// (strides 1) and spreading a gradient by the stride. (tensor.pad with dynamic sizes needs
// shape-reification interfaces at bufferization that the engine's context does not register.)
Value place(Emitter& e, const Value& x, const TensorType& to, double value, const Ints& offsets, const Ints& strides) {
  Strings offs, sizes, steps;
  for (size_t i = 0; i < x.type.rank(); ++i) {
    offs.push_back(std::to_string(offsets[i]));
    sizes.push_back(x.type.dims[i].isStatic() ? std::to_string(x.type.dims[i].size) : e.dimSize(x.type, i));
    steps.push_back(std::to_string(strides[i]));
  }
  std::string name = e.fresh("place");
  e.line(name + " = tensor.insert_slice " + x.ssa + " into " + e.fill(to, value) + "[" + join(offs) + "] [" + join(sizes) + "] [" + join(steps) + "] : " +
         x.type.str() + " into " + to.str());
  return Value::tensor(name, to);
}
Value pad(Emitter& e, const Value& x, const Ints& low, const Ints& high, double value) {
  TensorType t = x.type;
  bool any = false;
  for (size_t i = 0; i < t.rank(); ++i) t.dims[i] = plus(t.dims[i], low[i] + high[i]), any = any || low[i] || high[i];
  return any ? place(e, x, t, value, low, Ints(t.rank(), 1)) : x;
}
// Leading zeros, then the per-spatial-dim values.
Ints lead(size_t n, const Ints& v) {
  Ints out(n, 0);
  out.insert(out.end(), v.begin(), v.end());
  return out;
}

// A tensor that only gives a generic the extent of loops that appear in no operand as a plain
// dim (window offsets): a tensor.empty, never read.
GenericInput extent(Emitter& e, const std::vector<Dim>& sizes, const Strings& map) {
  TensorType t{DType::F32, sizes};
  return {e.empty(t), t, map};
}

// A generic reduction into `acc` (zeros unless `init`) over `loops` dims, the first `parallel`
// of them the output's.
std::string reduce(Emitter& e, const TensorType& acc, size_t loops, size_t parallel, const std::vector<GenericInput>& ins,
                   const std::function<std::string(Strings&)>& body, std::string init = "") {
  Strings iters(loops, "reduction");
  std::fill(iters.begin(), iters.begin() + static_cast<long>(parallel), "parallel");
  return e.generic(acc, loopDims(parallel), ins, iters, body, init.empty() ? e.fill(acc, 0) : init);
}
// acc + a[0] * a[1], each operand converted from its dtype to ct.
std::function<std::string(Strings&)> mulAdd(Emitter& e, DType a, DType b, DType ct) {
  return [&e, a, b, ct](Strings& v) {
    Scalars s = e.scalars();
    return s.op("arith.addf", v.back(), s.op("arith.mulf", s.cast(v[0], a, ct), s.cast(v[1], b, ct), ct), ct);
  };
}

// An int[N] argument as N values: a single value repeats; `fallback` when empty (stride).
Ints spatial(const OpCall& c, size_t i, size_t n, const Ints& fallback = {}) {
  Ints v = c.ints(i);
  if (v.empty()) v = fallback;
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n) throw Unsupported("argument '" + c.names[i] + "' has " + std::to_string(v.size()) + " values for " + std::to_string(n) + " dims");
  return v;
}

// ---- convolution -----------------------------------------------------------------------------

struct Conv {
  size_t k = 0;  // spatial dims
  Ints stride, padding, dilation, kernel;  // kernel -1: symbolic
  int64_t groups = 1, cg = 0, og = 0;      // input / output channels per group
};

Conv convParams(const OpCall& c, const Value& input, const Value& weight, size_t first) {
  Conv p;
  if (weight.type.rank() < 3 || input.type.rank() != weight.type.rank()) throw Unsupported("convolution of an unbatched input or a weight of rank < 3");
  p.k = weight.type.rank() - 2;
  p.stride = spatial(c, first, p.k);
  p.padding = spatial(c, first + 1, p.k);
  p.dilation = spatial(c, first + 2, p.k);
  p.groups = c.integer(first + 5);
  for (size_t i = 0; i < p.k; ++i) p.kernel.push_back(weight.type.dims[2 + i].size);
  if (p.groups != 1) {
    if (!weight.type.dims[0].isStatic() || !weight.type.dims[1].isStatic()) throw Unsupported("grouped convolution with symbolic channels");
    p.og = weight.type.dims[0].size / p.groups;
    p.cg = weight.type.dims[1].size;
  }
  return p;
}

// Input channel for output channel `o` and in-group channel `ci` (affine; groups need floordiv).
std::string inChannel(const Conv& p, const std::string& o, const std::string& ci) {
  return p.groups == 1 ? ci : o + " floordiv " + std::to_string(p.og) + " * " + std::to_string(p.cg) + " + " + ci;
}

// A transposed convolution is a plain one over the input spread by the stride (stride - 1
// zeros between elements) and padded by dilation * (kernel - 1) - padding on each side (plus
// output_padding after), with the kernel flipped and its in/out channels swapped. Weight:
// [in, out / groups, kernel...]. loops: n, o, output spatial (k), in channel, kernel (k).
Value transposedConvolution(OpCall& c, const Value& x, const Value& w, const Conv& p) {
  if (p.groups != 1) throw Unsupported("grouped transposed convolution is not lowered");
  Ints outputPadding = spatial(c, 7, p.k, Ints(p.k, 0));
  TensorType spread = x.type;
  Ints low(p.k), high(p.k);
  for (size_t i = 0; i < p.k; ++i) {
    if (p.kernel[i] < 0) throw Unsupported("transposed convolution with a symbolic kernel size");
    low[i] = p.dilation[i] * (p.kernel[i] - 1) - p.padding[i];
    high[i] = low[i] + outputPadding[i];
    if (low[i] < 0) throw Unsupported("transposed convolution whose padding exceeds dilation * (kernel - 1)");
    const Dim& in = x.type.dims[2 + i];
    int64_t s = p.stride[i], extra = low[i] + high[i] + 1 - s;
    spread.dims[2 + i] = in.isStatic() ? Dim{(in.size - 1) * s + 1 + low[i] + high[i], ""}
                                       : Dim{-1, "(" + in.expr + ")*" + std::to_string(s) + " + " + std::to_string(extra)};
  }
  Ints steps = {1, 1};
  steps.insert(steps.end(), p.stride.begin(), p.stride.end());
  Value xs = place(c.e, x, spread, 0, lead(2, low), steps);
  const TensorType& out = c.out();
  DType ct = computeType(out.dtype);
  TensorType acc = out.withDtype(ct);
  // The kernel flipped first, in a generic of its own: a flipped read inside the convolution
  // leaves linalg unable to derive the kernel loops' extent from the operands.
  Strings flip = {"d0", "d1"};
  for (size_t i = 0; i < p.k; ++i) flip.push_back(std::to_string(p.kernel[i] - 1) + " - " + d(2 + i));
  std::string flipped = c.e.generic(w.type, loopDims(w.type.rank()), {{w.ssa, w.type, flip}}, Strings(w.type.rank(), "parallel"),
                                    [](Strings& a) { return a[0]; });
  size_t ci = 2 + p.k, k0 = 3 + p.k;
  Strings xmap = {"d0", d(ci)}, wmap = {d(ci), "d1"};
  for (size_t i = 0; i < p.k; ++i) xmap.push_back(window(2 + i, 1, k0 + i, p.dilation[i])), wmap.push_back(d(k0 + i));
  std::string init;
  if (!c.none(2)) {
    const Value& b = c.tensor(2);
    init = c.e.generic(acc, loopDims(out.rank()), {{b.ssa, b.type, {"d1"}}}, Strings(out.rank(), "parallel"),
                       [&](Strings& a) { return c.e.scalars().cast(a[0], b.type.dtype, ct); });
  }
  std::string r = reduce(c.e, acc, 3 + 2 * p.k, 2 + p.k, {{xs.ssa, xs.type, xmap}, {flipped, w.type, wmap}}, mulAdd(c.e, x.type.dtype, w.type.dtype, ct), init);
  return c.e.convert(Value::tensor(r, acc), out.dtype);
}

// loops: n, o, output spatial (k), in-group channel, kernel (k).
Value convolution(OpCall& c) {
  const Value& x = c.tensor(0);
  const Value& w = c.tensor(1);
  Conv p = convParams(c, x, w, 3);
  if (c.flag(6)) return transposedConvolution(c, x, w, p);
  const TensorType& out = c.out();
  DType ct = computeType(out.dtype);
  TensorType acc = out.withDtype(ct);
  Value xp = pad(c.e, x, lead(2, p.padding), lead(2, p.padding), 0);
  size_t ci = 2 + p.k, k0 = 3 + p.k;
  Strings xmap = {"d0", inChannel(p, "d1", d(ci))}, wmap = {"d1", d(ci)};
  for (size_t i = 0; i < p.k; ++i) xmap.push_back(window(2 + i, p.stride[i], k0 + i, p.dilation[i])), wmap.push_back(d(k0 + i));
  std::string init;
  if (!c.none(2)) {
    const Value& b = c.tensor(2);
    init = c.e.generic(acc, loopDims(out.rank()), {{b.ssa, b.type, {"d1"}}}, Strings(out.rank(), "parallel"),
                       [&](Strings& a) { return c.e.scalars().cast(a[0], b.type.dtype, ct); });
  }
  std::string r = reduce(c.e, acc, 3 + 2 * p.k, 2 + p.k, {{xp.ssa, xp.type, xmap}, {w.ssa, w.type, wmap}}, mulAdd(c.e, x.type.dtype, w.type.dtype, ct), init);
  return c.e.convert(Value::tensor(r, acc), out.dtype);
}

// (grad_input, grad_weight, grad_bias) for output_mask, None where masked off.
Value convolutionBackward(OpCall& c) {
  const Value& x = c.tensor(1);
  const Value& w = c.tensor(2);
  if (c.flag(7)) throw Unsupported("the backward of a transposed convolution is not lowered");
  Conv p = convParams(c, x, w, 4);
  size_t k = p.k;
  const Value& maskArg = c.arg(10);
  std::vector<Value> results(3);
  DType ct = computeType(c.out(0).dtype);
  Value g = c.e.convert(c.tensor(0), ct);
  auto wanted = [&](size_t i) { return maskArg.kind != Value::Kind::List || maskArg.items.size() != 3 || maskArg.items[i].number != 0; };
  if (wanted(0)) {
    // grad_input[n, c, h] = sum over (oj, kh) of Z[n, o, h + pad + off - kh * dil] * w[o, c', kh]: Z holds
    // grad_output[oh] at oh * stride + off, zeros elsewhere (off = dil * (K - 1) keeps indices >= 0).
    TensorType zt = g.type;
    Ints off(k), strides = lead(2, p.stride);
    strides[0] = strides[1] = 1;
    for (size_t i = 0; i < k; ++i) {
      if (p.kernel[i] < 0) throw Unsupported("the input gradient of a convolution whose kernel size is symbolic");
      off[i] = p.dilation[i] * (p.kernel[i] - 1);
      zt.dims[2 + i] = plus(x.type.dims[2 + i], 2 * p.padding[i] + off[i]);
    }
    Value z = place(c.e, g, zt, 0, lead(2, off), strides);
    size_t oj = 2 + k, k0 = 3 + k;  // loops: n, c, input spatial (k), oj, kernel (k)
    std::string o = p.groups == 1 ? d(oj) : "d1 floordiv " + std::to_string(p.cg) + " * " + std::to_string(p.og) + " + " + d(oj);
    Strings zmap = {"d0", o}, wmap = {o, p.groups == 1 ? "d1" : "d1 mod " + std::to_string(p.cg)};
    for (size_t i = 0; i < k; ++i) zmap.push_back(window(2 + i, 1, k0 + i, -p.dilation[i], p.padding[i] + off[i])), wmap.push_back(d(k0 + i));
    std::vector<GenericInput> ins = {{z.ssa, zt, zmap}, {w.ssa, w.type, wmap}};
    if (p.groups != 1) ins.push_back(extent(c.e, {Dim{p.og, ""}}, {d(oj)}));
    TensorType acc = c.out(0).withDtype(ct);
    results[0] = c.e.convert(Value::tensor(reduce(c.e, acc, 3 + 2 * k, 2 + k, ins, mulAdd(c.e, ct, w.type.dtype, ct)), acc), c.out(0).dtype);
  }
  if (wanted(1)) {
    // grad_weight[o, ci, kh] = sum over (n, oh) of grad_output[n, o, oh] * x_padded[n, c, oh * stride + kh * dil]
    Value xp = pad(c.e, x, lead(2, p.padding), lead(2, p.padding), 0);
    size_t n = 2 + k, o0 = 3 + k;  // loops: o, ci, kernel (k), n, output spatial (k)
    Strings xmap = {d(n), inChannel(p, "d0", "d1")}, gmap = {d(n), "d0"};
    for (size_t i = 0; i < k; ++i) xmap.push_back(window(o0 + i, p.stride[i], 2 + i, p.dilation[i])), gmap.push_back(d(o0 + i));
    TensorType acc = c.out(1).withDtype(ct);
    std::string r = reduce(c.e, acc, 3 + 2 * k, 2 + k, {{g.ssa, g.type, gmap}, {xp.ssa, xp.type, xmap}}, mulAdd(c.e, ct, x.type.dtype, ct));
    results[1] = c.e.convert(Value::tensor(r, acc), c.out(1).dtype);
  }
  if (wanted(2)) {
    TensorType acc = c.out(2).withDtype(ct);
    Strings gmap = {"d1", "d0"};
    for (size_t i = 0; i < k; ++i) gmap.push_back(d(2 + i));
    std::string r = reduce(c.e, acc, 2 + k, 1, {{g.ssa, g.type, gmap}}, [&](Strings& a) { return c.e.scalars().op("arith.addf", a[1], a[0], ct); });
    results[2] = c.e.convert(Value::tensor(r, acc), c.out(2).dtype);
  }
  return Value::list(results);
}

// ---- pooling ---------------------------------------------------------------------------------

struct Pool {
  size_t lead = 0;  // dims before H, W (channels, and batch when 4-d)
  Ints kernel, stride, padding, dilation = {1, 1};
};

Pool poolParams(const OpCall& c, const Value& x, size_t first, bool dilation) {
  if (x.type.rank() < 3 || x.type.rank() > 4) throw Unsupported("2-d pooling of a " + std::to_string(x.type.rank()) + "-d input");
  Pool p;
  p.lead = x.type.rank() - 2;
  p.kernel = spatial(c, first, 2);
  p.stride = spatial(c, first + 1, 2, p.kernel);
  p.padding = spatial(c, first + 2, 2);
  if (dilation) p.dilation = spatial(c, first + 3, 2);
  return p;
}

// Loops: lead dims, oh, ow, kh, kw; the input windows of a padded input.
Strings windows(const Pool& p, int64_t offset = 0) {
  Strings m = loopDims(p.lead);
  for (size_t i = 0; i < 2; ++i) m.push_back(window(p.lead + i, p.stride[i], p.lead + 2 + i, p.dilation[i], offset));
  return m;
}
GenericInput kernelExtent(Emitter& e, const Pool& p) {
  return extent(e, {Dim{p.kernel[0], ""}, Dim{p.kernel[1], ""}}, {d(p.lead + 2), d(p.lead + 3)});
}

// max_pool2d_with_indices: each window's maximum (the padding is the lowest value, so it never
// wins) and its index h * W + w in the plane, chosen as PyTorch's kernel does: `val > max ||
// isnan(val)` in window order, starting from the window's first position inside the input.
Value maxPool(OpCall& c) {
  const Value& x = c.tensor(0);
  Pool p = poolParams(c, x, 1, true);
  size_t L = p.lead;
  DType dt = x.type.dtype, ct = computeType(dt);
  double lowest = isFloat(dt) ? -HUGE_VAL : dt == DType::Bool || isUnsigned(dt) ? 0 : -std::ldexp(1.0, bitWidth(dt) - 1);
  Ints high = {p.padding[0] + (p.kernel[0] - 1) * p.dilation[0], p.padding[1] + (p.kernel[1] - 1) * p.dilation[1]};  // ceil_mode's last window
  Value xp = pad(c.e, x, lead(L, p.padding), lead(L, high), lowest);
  std::string size[2] = {c.e.dimSize(x.type, L), c.e.dimSize(x.type, L + 1)};
  TensorType vt = c.out(0), it = c.out(1);
  std::vector<GenericInput> ins = {{xp.ssa, xp.type, windows(p)}, kernelExtent(c.e, p)};
  Strings iters(L + 4, "parallel"), maps, inits = {c.e.fill(vt, lowest), c.e.fill(it, -1)}, a;
  iters[L + 2] = iters[L + 3] = "reduction";
  for (const GenericInput& in : ins) maps.push_back(mapText(L + 4, in.map));
  maps.push_back(mapText(L + 4, loopDims(L + 2)));
  maps.push_back(maps.back());
  std::string name = c.e.fresh("mp"), args, types = vt.str() + ", " + it.str();
  for (std::string& i : iters) i = mlirString(i);
  c.e.open(name + ":2 = linalg.generic {indexing_maps = [" + join(maps) + "], iterator_types = [" + join(iters) + "]} ins(" + xp.ssa + ", " + ins[1].ssa +
           " : " + xp.type.str() + ", " + ins[1].type.str() + ") outs(" + join(inits) + " : " + types + ") {");
  DType argTypes[4] = {dt, DType::F32, dt, DType::I64};
  for (size_t i = 0; i < 4; ++i) a.push_back(c.e.fresh("b")), args += (i ? ", " : "") + a.back() + ": " + elementType(argTypes[i]);
  c.e.label("^bb0(" + args + "):");
  Scalars s = c.e.scalars();
  std::string pos[2], valid = s.constant(1, DType::Bool);
  for (size_t i = 0; i < 2; ++i) {
    std::string at = c.e.indexOp("arith.addi", c.e.indexOp("arith.muli", c.e.loopIndex(L + i), c.e.index(p.stride[i])),
                        c.e.indexOp("arith.muli", c.e.loopIndex(L + 2 + i), c.e.index(p.dilation[i])));
    pos[i] = c.e.indexOp("arith.subi", at, c.e.index(p.padding[i]));
    valid = s.op("arith.andi", valid, s.op("arith.andi", c.e.indexCmp("sge", pos[i], c.e.index(0)), c.e.indexCmp("slt", pos[i], size[i]), DType::Bool), DType::Bool);
  }
  std::string v = s.cast(a[0], dt, ct), better = s.cmp(isFloat(ct) ? "ogt" : "sgt", v, s.cast(a[2], dt, ct), ct);
  if (isFloat(ct)) better = s.op("arith.ori", better, s.cmp("uno", v, v, ct), DType::Bool);
  better = s.op("arith.ori", better, s.op("arith.andi", valid, s.cmp("eq", a[3], s.constant(-1, DType::I64), DType::I64), DType::Bool), DType::Bool);
  std::string flat = c.e.fromIndex(c.e.indexOp("arith.addi", c.e.indexOp("arith.muli", pos[0], size[1]), pos[1]), DType::I64);
  c.e.line("linalg.yield " + s.select(better, a[0], a[2], dt) + ", " + s.select(better, flat, a[3], DType::I64) + " : " + elementType(dt) + ", i64");
  c.e.close("} -> (" + types + ")");
  return Value::list({Value::tensor(name + "#0", vt), Value::tensor(name + "#1", it)});
}

// grad_input[plane, indices[p]] += grad_output[p]: scf.for loops over the output gradient,
// the input gradient threaded through tensor.insert (updated in place).
Value maxPoolBackward(OpCall& c) {
  const Value& gy = c.tensor(0);
  const Value& x = c.tensor(1);
  const Value& idx = c.tensor(7);
  const TensorType& out = c.out();
  if (x.type.rank() < 3 || gy.type.rank() != x.type.rank()) throw Unsupported("max_pool2d backward of a " + std::to_string(x.type.rank()) + "-d input");
  size_t L = x.type.rank() - 2, r = gy.type.rank();
  DType ct = computeType(out.dtype);
  TensorType acc = out.withDtype(ct);
  std::string W = c.e.dimSize(x.type, L + 1), last = c.e.indexOp("arith.subi", c.e.indexOp("arith.muli", c.e.dimSize(x.type, L), W), c.e.index(1));
  Strings sizes, iv, names, accs;
  for (size_t i = 0; i < r; ++i) sizes.push_back(c.e.dimSize(gy.type, i));
  std::string init = c.e.fill(acc, 0);
  for (size_t i = 0; i < r; ++i) {
    names.push_back(c.e.fresh("for")), iv.push_back(c.e.fresh("iv")), accs.push_back(c.e.fresh("acc"));
    std::string lo = c.e.index(0), one = c.e.index(1);
    c.e.open(names[i] + " = scf.for " + iv[i] + " = " + lo + " to " + sizes[i] + " step " + one + " iter_args(" + accs[i] + " = " + (i ? accs[i - 1] : init) +
             ") -> (" + acc.str() + ") {");
  }
  Scalars s = c.e.scalars();
  std::string gv = c.e.fresh("gv"), old = c.e.fresh("old"), put = c.e.fresh("put");
  std::string i = c.e.assign("pi", "tensor.extract " + idx.ssa + "[" + join(iv) + "] : " + idx.type.str());
  std::string at = c.e.toIndex(i);
  at = c.e.indexOp("arith.minsi", c.e.indexOp("arith.maxsi", at, c.e.index(0)), last);
  Strings to(iv.begin(), iv.begin() + static_cast<long>(L));
  to.push_back(c.e.indexOp("arith.divsi", at, W));
  to.push_back(c.e.indexOp("arith.remsi", at, W));
  c.e.line(gv + " = tensor.extract " + gy.ssa + "[" + join(iv) + "] : " + gy.type.str());
  c.e.line(old + " = tensor.extract " + accs.back() + "[" + join(to) + "] : " + acc.str());
  c.e.line(put + " = tensor.insert " + s.op("arith.addf", old, s.cast(gv, gy.type.dtype, ct), ct) + " into " + accs.back() + "[" + join(to) + "] : " + acc.str());
  for (size_t k = r; k-- > 0;) {
    c.e.line("scf.yield " + (k + 1 == r ? put : names[k + 1]) + " : " + acc.str());
    c.e.close("}");
  }
  return c.e.convert(Value::tensor(r ? names[0] : init, acc), out.dtype);
}

// PyTorch's avg_pool2d divisor at output (oh, ow): the window clipped to the padded input
// (count_include_pad) or to the input, unless divisor_override.
std::string avgDivisor(OpCall& c, const Pool& p, const std::string* size, bool includePad, int64_t override_, DType ct) {
  if (override_) return c.e.scalars().constant(static_cast<double>(override_), ct);
  std::string all[2], clipped[2];
  for (size_t i = 0; i < 2; ++i) {
    std::string start = c.e.indexOp("arith.subi", c.e.indexOp("arith.muli", c.e.loopIndex(p.lead + i), c.e.index(p.stride[i])), c.e.index(p.padding[i]));
    std::string end = c.e.indexOp("arith.minsi", c.e.indexOp("arith.addi", start, c.e.index(p.kernel[i])), c.e.indexOp("arith.addi", size[i], c.e.index(p.padding[i])));
    all[i] = c.e.indexOp("arith.subi", end, start);
    clipped[i] = c.e.indexOp("arith.subi", c.e.indexOp("arith.minsi", end, size[i]), c.e.indexOp("arith.maxsi", start, c.e.index(0)));
  }
  return c.e.fromIndex(includePad ? c.e.indexOp("arith.muli", all[0], all[1]) : c.e.indexOp("arith.muli", clipped[0], clipped[1]), ct);
}

// avg_pool2d(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override), and
// its backward (grad_output first): each output's gradient over its divisor, spread by the
// stride into zeros at offset K - 1, summed over the K x K window reaching each input position.
Value avgPool(OpCall& c, bool backward) {
  size_t a0 = backward ? 2 : 1;
  const Value& x = c.tensor(backward ? 1 : 0);
  Pool p = poolParams(c, x, a0, false);
  bool includePad = c.flag(a0 + 4);
  int64_t override_ = c.none(a0 + 5) ? 0 : c.integer(a0 + 5);
  size_t L = p.lead;
  const TensorType& out = c.out();
  DType ct = computeType(out.dtype);
  TensorType acc = out.withDtype(ct);
  std::string size[2] = {c.e.dimSize(x.type, L), c.e.dimSize(x.type, L + 1)};
  auto sum = [&](Strings& a) { return c.e.scalars().op("arith.addf", a[2], a[0], ct); };
  if (!backward) {
    Value xp = pad(c.e, c.e.convert(x, ct), lead(L, p.padding), lead(L, {p.padding[0] + p.kernel[0], p.padding[1] + p.kernel[1]}), 0);
    std::string total = reduce(c.e, acc, L + 4, L + 2, {{xp.ssa, xp.type, windows(p)}, kernelExtent(c.e, p)}, sum);
    std::string r = c.e.generic(out, loopDims(L + 2), {{total, acc, loopDims(L + 2)}}, Strings(L + 2, "parallel"), [&](Strings& a) {
      Scalars s = c.e.scalars();
      return s.cast(s.op("arith.divf", a[0], avgDivisor(c, p, size, includePad, override_, ct), ct), ct, out.dtype);
    });
    return Value::tensor(r, out);
  }
  const Value& gy = c.tensor(0);
  TensorType gt = gy.type.withDtype(ct), zt = gt;
  std::string gd = c.e.generic(gt, loopDims(L + 2), {{gy.ssa, gy.type, loopDims(L + 2)}}, Strings(L + 2, "parallel"), [&](Strings& a) {
    Scalars s = c.e.scalars();
    return s.op("arith.divf", s.cast(a[0], gy.type.dtype, ct), avgDivisor(c, p, size, includePad, override_, ct), ct);
  });
  Strings zmap = loopDims(L);
  for (size_t i = 0; i < 2; ++i) {
    zt.dims[L + i] = plus(x.type.dims[L + i], 2 * p.padding[i] + p.kernel[i] - 1);
    zmap.push_back(window(L + i, 1, L + 2 + i, -1, p.padding[i] + p.kernel[i] - 1));
  }
  Ints strides = lead(L, p.stride);
  std::fill(strides.begin(), strides.begin() + static_cast<long>(L), 1);
  Value z = place(c.e, Value::tensor(gd, gt), zt, 0, lead(L, {p.kernel[0] - 1, p.kernel[1] - 1}), strides);
  std::string r = reduce(c.e, acc, L + 4, L + 2, {{z.ssa, zt, zmap}, kernelExtent(c.e, p)}, sum);
  return c.e.convert(Value::tensor(r, acc), out.dtype);
}

// Adaptive average pooling bins: [floor(i * In / Out), ceil((i + 1) * In / Out)); the same
// formula with In and Out swapped gives the bins covering input position i (the backward).
// Sizes are non-negative, so unsigned division floors (arith's floordivsi and ceildivsi need
// arith-expand, which the LLVM pipeline does not run).
std::string binStart(Emitter& e, const std::string& i, const std::string& in, const std::string& out) {
  return e.indexOp("arith.divui", e.indexOp("arith.muli", i, in), out);
}
std::string binEnd(Emitter& e, const std::string& i, const std::string& in, const std::string& out) {
  std::string num = e.indexOp("arith.muli", e.indexOp("arith.addi", i, e.index(1)), in);
  return e.indexOp("arith.divui", e.indexOp("arith.addi", num, e.indexOp("arith.subi", out, e.index(1))), out);
}
// The widest bin: exact for static sizes, else the bound ceil(In / Out) + 1 (the extra
// positions are masked), bound to a symbol of its own so that a loop extent can use it.
Dim widestBin(Emitter& e, const Dim& in, const Dim& out) {
  if (in.isStatic() && out.isStatic() && out.size > 0) {
    int64_t m = 1;
    for (int64_t i = 0; i < out.size; ++i) m = std::max(m, ((i + 1) * in.size + out.size - 1) / out.size - i * in.size / out.size);
    return Dim{m, ""};
  }
  std::string n = e.sizeOf(in), o = e.sizeOf(out);
  std::string bound = e.indexOp("arith.addi", e.indexOp("arith.divui", e.indexOp("arith.addi", n, e.indexOp("arith.subi", o, e.index(1))), o), e.index(1));
  std::string symbol = "dynrep_" + e.fresh("bin").substr(1);
  e.bindSymbol(symbol, bound);
  return Dim{-1, symbol};
}

// Forward: the bin's sum, then divided by its height and then its width as PyTorch's kernel
// does. Backward: the sum over covering bins of their gradient / height / width.
Value adaptiveAvgPool(OpCall& c, bool backward) {
  const Value& src = c.tensor(0);  // the input, or the output gradient
  const Value& x = backward ? c.tensor(1) : src;
  const TensorType& out = c.out();
  if (x.type.rank() < 3 || x.type.rank() > 4) throw Unsupported("adaptive pooling of a " + std::to_string(x.type.rank()) + "-d input");
  size_t L = x.type.rank() - 2;
  DType ct = computeType(out.dtype);
  const TensorType& pooled = backward ? src.type : out;
  std::string in[2] = {c.e.dimSize(x.type, L), c.e.dimSize(x.type, L + 1)}, po[2] = {c.e.dimSize(pooled, L), c.e.dimSize(pooled, L + 1)};
  std::vector<Dim> span;
  for (size_t i = 0; i < 2; ++i)
    span.push_back(backward ? widestBin(c.e, pooled.dims[L + i], x.type.dims[L + i]) : widestBin(c.e, x.type.dims[L + i], pooled.dims[L + i]));
  auto divide = [&](Scalars& s, std::string v, const std::string& o, size_t i) {  // v / (bin o's extent in dim i)
    return s.op("arith.divf", v, c.e.fromIndex(c.e.indexOp("arith.subi", binEnd(c.e, o, in[i], po[i]), binStart(c.e, o, in[i], po[i])), ct), ct);
  };
  TensorType acc = out.withDtype(ct);
  std::string r = reduce(c.e, acc, L + 4, L + 2, {extent(c.e, span, {d(L + 2), d(L + 3)})}, [&](Strings& a) {
    Scalars s = c.e.scalars();
    Strings at;
    for (size_t i = 0; i < L; ++i) at.push_back(c.e.loopIndex(i));
    std::string valid = s.constant(1, DType::Bool);
    for (size_t i = 0; i < 2; ++i) {
      std::string o = c.e.loopIndex(L + i), from = backward ? po[i] : in[i], to = backward ? in[i] : po[i];
      std::string j = c.e.indexOp("arith.addi", binStart(c.e, o, from, to), c.e.loopIndex(L + 2 + i));
      valid = s.op("arith.andi", valid, c.e.indexCmp("slt", j, binEnd(c.e, o, from, to)), DType::Bool);
      at.push_back(c.e.indexOp("arith.minsi", j, c.e.indexOp("arith.subi", from, c.e.index(1))));
    }
    std::string v = c.e.fresh("x");
    c.e.line(v + " = tensor.extract " + src.ssa + "[" + join(at) + "] : " + src.type.str());
    v = s.cast(v, src.type.dtype, ct);
    if (backward) v = divide(s, divide(s, v, at[L], 0), at[L + 1], 1);
    return s.op("arith.addf", a[1], s.select(valid, v, s.constant(0, ct), ct), ct);
  });
  if (backward) return c.e.convert(Value::tensor(r, acc), out.dtype);
  std::string q = c.e.generic(out, loopDims(L + 2), {{r, acc, loopDims(L + 2)}}, Strings(L + 2, "parallel"), [&](Strings& a) {
    Scalars s = c.e.scalars();
    return s.cast(divide(s, divide(s, a[0], c.e.loopIndex(L), 0), c.e.loopIndex(L + 1), 1), ct, out.dtype);
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
