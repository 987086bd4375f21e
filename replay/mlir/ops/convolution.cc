// Convolution and pooling: linalg.generics over a padded input with strided window maps
// (`d2 * 2 + d5 * 1`). Backward ops stay gathers where they can: a transposed convolution, and
// the input gradient of a convolution or an average pool, read their input spread by the stride
// into zeros (tensor.insert_slice with strides), a correlation with window maps again; max-pool
// backward scatters through its indices with scf.for. Groups are a loop of their own over views
// split by tensor.expand_shape, so that channel counts, like kernel sizes and padding, may be
// symbolic. float16/bfloat16 accumulate in float32 (computeType) and are rounded once; integer
// dtypes accumulate in their own type with integer ops. Pooling is written over the number of
// spatial dims (2-d and 3-d).
#include <cmath>

#include "ops.h"

namespace dynrep::replay::lowering {

namespace {

using Ints = std::vector<int64_t>;
using Dims = std::vector<Dim>;  // sizes and amounts known while lowering, or symbolic

std::string d(size_t i) { return "d" + std::to_string(i); }
// A window expression: out * stride + k * dilation + offset (dilation and offset may be < 0).
std::string window(size_t out, int64_t stride, size_t k, int64_t dilation, int64_t offset = 0) {
  std::string s = d(out) + " * " + std::to_string(stride) + (dilation < 0 ? " - " : " + ") + d(k) + " * " +
                  std::to_string(std::abs(dilation));
  return offset ? s + (offset < 0 ? " - " : " + ") + std::to_string(std::abs(offset)) : s;
}
// Size arithmetic: static where the operands are, else a size expression over the graph's
// symbols (and those bound while lowering).
std::string text(const Dim& dim) { return dim.isStatic() ? std::to_string(dim.size) : "(" + dim.expr + ")"; }
Dim plus(const Dim& a, const Dim& b) {
  return a.isStatic() && b.isStatic() ? Dim{a.size + b.size, ""} : Dim{-1, text(a) + " + " + text(b)};
}
// REQUIRES: a - b >= 0 (a static size is never negative).
Dim minus(const Dim& a, const Dim& b) {
  return a.isStatic() && b.isStatic() ? Dim{a.size - b.size, ""} : Dim{-1, text(a) + " - " + text(b)};
}
Dim times(const Dim& a, int64_t k) {
  return a.isStatic() ? Dim{a.size * k, ""} : Dim{-1, text(a) + "*" + std::to_string(k)};
}
// REQUIRES: dim + k >= 0.
Dim plus(const Dim& dim, int64_t k) { return k < 0 ? minus(dim, Dim{-k, ""}) : plus(dim, Dim{k, ""}); }
Dims known(const Ints& v) {
  Dims out;
  for (int64_t n : v) out.push_back(Dim{n, ""});
  return out;
}
// A static value as an integer literal, else its index value.
std::string literal(Emitter& e, const Dim& dim) { return dim.isStatic() ? std::to_string(dim.size) : e.sizeOf(dim); }

// x inserted at `offsets` with `strides` into a tensor of type `to` filled with `value`: padding
// (strides 1) and spreading a gradient by the stride. (tensor.pad with dynamic sizes needs
// shape-reification interfaces at bufferization that the engine's context does not register.)
Value place(Emitter& e, const Value& x, const TensorType& to, double value, const Dims& offsets, const Ints& strides) {
  Strings offs, sizes, steps;
  for (size_t i = 0; i < x.type.rank(); ++i) {
    offs.push_back(literal(e, offsets[i]));
    sizes.push_back(literal(e, x.type.dims[i]));
    steps.push_back(std::to_string(strides[i]));
  }
  std::string name = e.fresh("place");
  e.line(name + " = tensor.insert_slice " + x.ssa + " into " + e.fill(to, value) + "[" + join(offs) + "] [" +
         join(sizes) + "] [" + join(steps) + "] : " + x.type.str() + " into " + to.str());
  return Value::tensor(name, to);
}
// x padded with `value`: tensor.pad where every size is static (IREE forms dispatches around
// it, and refuses some convolutions whose input is a fill with the slice inserted), else the
// insert_slice of place() (see there).
Value pad(Emitter& e, const Value& x, const Dims& low, const Dims& high, double value) {
  TensorType t = x.type;
  bool any = false, allStatic = true;
  for (size_t i = 0; i < t.rank(); ++i) {
    t.dims[i] = plus(t.dims[i], plus(low[i], high[i]));
    any = any || !low[i].isStatic() || !high[i].isStatic() || low[i].size || high[i].size;
    allStatic = allStatic && low[i].isStatic() && high[i].isStatic() && x.type.dims[i].isStatic();
  }
  if (!any) return x;
  if (!allStatic) return place(e, x, t, value, low, Ints(t.rank(), 1));
  Strings lows, highs, indices;
  for (size_t i = 0; i < t.rank(); ++i)
    lows.push_back(std::to_string(low[i].size)), highs.push_back(std::to_string(high[i].size)),
        indices.push_back(e.fresh("pi") + ": index");
  std::string fill = e.scalars().constant(value, t.dtype), name = e.fresh("pad");
  e.open(name + " = tensor.pad " + x.ssa + " low[" + join(lows) + "] high[" + join(highs) + "] {");
  e.label("^bb0(" + join(indices) + "):");
  e.line("tensor.yield " + fill + " : " + elementType(t.dtype));
  e.close("} : " + x.type.str() + " to " + t.str());
  return Value::tensor(name, t);
}
// x without the first `count[i]` elements of each dim i: tensor.extract_slice.
Value dropFront(Emitter& e, const Value& x, const Dims& count) {
  TensorType t = x.type;
  Strings offs, sizes;
  for (size_t i = 0; i < t.rank(); ++i) {
    t.dims[i] = minus(x.type.dims[i], count[i]);
    offs.push_back(literal(e, count[i]));
    sizes.push_back(literal(e, t.dims[i]));
  }
  std::string name = e.assign("cut", "tensor.extract_slice " + x.ssa + "[" + join(offs) + "] [" + join(sizes) + "] [" +
                                         join(Strings(t.rank(), "1")) + "] : " + x.type.str() + " to " + t.str());
  return Value::tensor(name, t);
}
// Leading zeros, then the per-spatial-dim values.
Ints lead(size_t n, const Ints& v) {
  Ints out(n, 0);
  out.insert(out.end(), v.begin(), v.end());
  return out;
}
Dims lead(size_t n, const Dims& v) {
  Dims out = known(Ints(n, 0));
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
std::string reduce(Emitter& e, const TensorType& acc, size_t loops, size_t parallel,
                   const std::vector<GenericInput>& ins, const std::function<std::string(Strings&)>& body,
                   std::string init = "") {
  Strings iters(loops, "reduction");
  std::fill(iters.begin(), iters.begin() + static_cast<long>(parallel), "parallel");
  return e.generic(acc, loopDims(parallel), ins, iters, body, init.empty() ? e.fill(acc, 0) : init);
}
// Arithmetic in the compute type t: integers with arith's integer ops (wrapping as PyTorch's
// integer kernels do); their quotient truncates toward zero, as C++'s `sum / divisor` does in
// PyTorch's integer average pools.
std::string add(Scalars& s, const std::string& a, const std::string& b, DType t) {
  return s.op(isFloat(t) ? "arith.addf" : "arith.addi", a, b, t);
}
std::string mul(Scalars& s, const std::string& a, const std::string& b, DType t) {
  return s.op(isFloat(t) ? "arith.mulf" : "arith.muli", a, b, t);
}
std::string quotient(Scalars& s, const std::string& a, const std::string& b, DType t) {
  return s.op(isFloat(t) ? "arith.divf" : isUnsigned(t) ? "arith.divui" : "arith.divsi", a, b, t);
}
// acc + a[0] * a[1], each operand converted from its dtype to ct.
std::function<std::string(Strings&)> mulAdd(Emitter& e, DType a, DType b, DType ct) {
  return [&e, a, b, ct](Strings& v) {
    Scalars s = e.scalars();
    return add(s, v.back(), mul(s, s.cast(v[0], a, ct), s.cast(v[1], b, ct), ct), ct);
  };
}

// An int[N] argument as N values: a single value repeats; `fallback` when empty (stride).
Ints spatial(const OpCall& c, size_t i, size_t n, const Ints& fallback = {}) {
  Ints v = c.ints(i);
  if (v.empty()) v = fallback;
  if (v.size() == 1) v.assign(n, v[0]);
  if (v.size() != n)
    throw Unsupported("argument '" + c.names[i] + "' has " + std::to_string(v.size()) + " values for " +
                      std::to_string(n) + " dims");
  return v;
}
// A SymInt[N] argument (padding) whose values may be symbolic: each bound to a symbol of its own.
Dims amounts(OpCall& c, size_t i, size_t n) {
  const Value& v = c.arg(i);
  if (v.kind != Value::Kind::List) return known(spatial(c, i, n));
  Dims out;
  for (const Value& item : v.items) {
    if (item.isConst()) {
      out.push_back(Dim{static_cast<int64_t>(item.number), ""});
      continue;
    }
    if (item.kind != Value::Kind::Int)
      throw Unsupported("argument '" + c.names[i] + "' holds a value that is not an integer");
    std::string symbol = "dynrep_" + c.e.fresh("amount").substr(1);
    c.e.bindSymbol(symbol, c.e.toIndex(item.ssa));
    out.push_back(Dim{-1, symbol});
  }
  if (out.size() == 1) out.assign(n, out[0]);
  if (out.size() != n)
    throw Unsupported("argument '" + c.names[i] + "' has " + std::to_string(out.size()) + " values for " +
                      std::to_string(n) + " dims");
  return out;
}

// ---- convolution -----------------------------------------------------------------------------

struct Conv {
  size_t k = 0;  // spatial dims
  Ints stride, dilation;
  Dims padding, kernel;  // symbolic where the graph's are
  int64_t groups = 1;
};

Conv convParams(OpCall& c, const Value& input, const Value& weight, size_t first) {
  Conv p;
  if (weight.type.rank() < 3 || input.type.rank() != weight.type.rank())
    throw Unsupported("convolution of an unbatched input or a weight of rank < 3");
  p.k = weight.type.rank() - 2;
  p.stride = spatial(c, first, p.k);
  p.padding = amounts(c, first + 1, p.k);
  p.dilation = spatial(c, first + 2, p.k);
  p.groups = c.integer(first + 5);
  p.kernel.assign(weight.type.dims.begin() + 2, weight.type.dims.end());
  return p;
}

// t's type with dim `at` split into (groups, size / groups); a symbolic part is bound to a
// symbol of its own.
TensorType splitType(Emitter& e, const TensorType& t, size_t at, int64_t groups) {
  const Dim& whole = t.dims[at];
  Dim part{whole.isStatic() ? whole.size / groups : -1, ""};
  if (!whole.isStatic()) {
    part.expr = "dynrep_" + e.fresh("group").substr(1);
    e.bindSymbol(part.expr, e.indexOp("arith.divui", e.sizeOf(whole), e.index(groups)));
  }
  TensorType out = t;
  out.dims[at] = part;
  out.dims.insert(out.dims.begin() + static_cast<long>(at), Dim{groups, ""});
  return out;
}
// The reassociation that splits or merges dims at and at + 1 of a tensor of rank `rank` + 1.
std::string groupDims(size_t rank, size_t at) {
  Strings groups;
  for (size_t i = 0; i < rank; ++i) {
    size_t j = i > at ? i + 1 : i;
    groups.push_back("[" + (i == at ? std::to_string(j) + ", " + std::to_string(j + 1) : std::to_string(j)) + "]");
  }
  return "[" + join(groups) + "]";
}
// v viewed with dim `at` split into (groups, size / groups): tensor.expand_shape.
Value splitGroups(Emitter& e, const Value& v, size_t at, int64_t groups) {
  TensorType to = splitType(e, v.type, at, groups);
  Strings sizes;
  for (const Dim& dim : to.dims) sizes.push_back(literal(e, dim));
  std::string name =
      e.assign("grouped", "tensor.expand_shape " + v.ssa + " " + groupDims(v.type.rank(), at) + " output_shape [" +
                              join(sizes) + "] : " + v.type.str() + " into " + to.str());
  return Value::tensor(name, to);
}
// v's dims at and at + 1 merged (tensor.collapse_shape: the merged dim is dynamic where either
// part is), then cast to `to`.
Value mergeGroups(Emitter& e, const Value& v, size_t at, const TensorType& to) {
  TensorType merged = to;
  const Dim &a = v.type.dims[at], &b = v.type.dims[at + 1];
  merged.dims[at] = a.isStatic() && b.isStatic() ? Dim{a.size * b.size, ""} : Dim{-1, to.dims[at].expr};
  std::string name = e.assign("merged", "tensor.collapse_shape " + v.ssa + " " + groupDims(to.rank(), at) + " : " +
                                            v.type.str() + " into " + merged.str());
  return Value::tensor(e.cast(Value::tensor(name, merged), to), to);
}

// The convolution proper: bias + the sum over in-group channel and kernel of xs[n, channel,
// window] * w into `out`. xs is padded (and for a transposed convolution spread by the
// stride, its windows then of stride 1); w is [out, in / groups, kernel...], or transposed [in,
// out / groups, kernel...]. With groups, the input, weight and result are viewed as [N, G,
// C / G, ...], [G, ...] and [N, G, O / G, ...] (tensor.expand_shape): a loop over groups keeps
// the maps affine when channel counts are symbolic. Loops: n, (g,) o, output spatial (k),
// in-group channel, kernel (k).
Value correlate(Emitter& e, Value xs, Value w, const Value* bias, const Conv& p, const Ints& stride, bool transposed,
                const TensorType& out) {
  DType ct = computeType(out.dtype), xt = xs.type.dtype, wt = w.type.dtype;
  TensorType acc = out.withDtype(ct);
  size_t g = p.groups == 1 ? 0 : 1, o = 1 + g, ci = 2 + g + p.k, k0 = ci + 1;
  if (g) {
    xs = splitGroups(e, xs, 1, p.groups);
    w = splitGroups(e, w, 0, p.groups);
    acc = splitType(e, acc, 1, p.groups);
  }
  Strings xmap = loopDims(1 + g), wmap = loopDims(g, 1);
  xmap.push_back(d(ci));
  wmap.push_back(transposed ? d(ci) : d(o));
  wmap.push_back(transposed ? d(o) : d(ci));
  for (size_t i = 0; i < p.k; ++i)
    xmap.push_back(window(o + 1 + i, stride[i], k0 + i, p.dilation[i])), wmap.push_back(d(k0 + i));
  std::string init;
  if (bias) {
    Value b = g ? splitGroups(e, *bias, 0, p.groups) : *bias;
    init = e.generic(acc, loopDims(acc.rank()), {{b.ssa, b.type, loopDims(1 + g, 1)}}, Strings(acc.rank(), "parallel"),
                     [&](Strings& a) { return e.scalars().cast(a[0], b.type.dtype, ct); });
  }
  std::string r = reduce(e, acc, 3 + g + 2 * p.k, 2 + g + p.k, {{xs.ssa, xs.type, xmap}, {w.ssa, w.type, wmap}},
                         mulAdd(e, xt, wt, ct), init);
  Value v = Value::tensor(r, acc);
  if (g) v = mergeGroups(e, v, 1, out.withDtype(ct));
  return e.convert(v, out.dtype);
}

// A transposed convolution is a plain one over the input spread by the stride (stride - 1
// zeros between elements) and padded by dilation * (kernel - 1) - padding on each side (plus
// `extra` after: output_padding, or anything larger, as the output's size sets the loops), with
// the kernel flipped and its in/out channels swapped. A negative pad (padding beyond dilation *
// (kernel - 1)) is the spread input's first elements dropped instead (tensor.extract_slice).
// w: [in, out / groups, kernel...].
Value transposed(Emitter& e, const Value& x, const Value& w, const Value* bias, const Conv& p, const Ints& extra,
                 const TensorType& out) {
  TensorType spread = x.type;
  Dims low(p.k), high(p.k), cut(p.k);
  bool cuts = false;
  for (size_t i = 0; i < p.k; ++i) {
    const Dim &k = p.kernel[i], &pad = p.padding[i];
    if (k.isStatic() && pad.isStatic()) {
      int64_t l = p.dilation[i] * (k.size - 1) - pad.size;
      low[i] = Dim{std::max<int64_t>(l, 0), ""};
      cut[i] = Dim{std::max<int64_t>(-l, 0), ""};
      high[i] = Dim{std::max<int64_t>(l + extra[i], 0), ""};  // < 0: the windows end before
    } else {
      std::string l = text(times(k, p.dilation[i])) + " - " + std::to_string(p.dilation[i]) + " - " + text(pad);
      low[i] = Dim{-1, "Max(0, " + l + ")"};
      cut[i] = Dim{-1, "Max(0, -(" + l + "))"};
      high[i] = Dim{-1, "Max(0, " + l + " + " + std::to_string(extra[i]) + ")"};
    }
    cuts = cuts || !cut[i].isStatic() || cut[i].size;
    spread.dims[2 + i] = plus(plus(times(plus(x.type.dims[2 + i], -1), p.stride[i]), 1), plus(low[i], high[i]));
  }
  Ints steps = {1, 1};
  steps.insert(steps.end(), p.stride.begin(), p.stride.end());
  Value xs = place(e, x, spread, 0, lead(2, low), steps);
  if (cuts) xs = dropFront(e, xs, lead(2, cut));
  // The kernel flipped first, in a generic of its own: a flipped read inside the convolution
  // leaves linalg unable to derive the kernel loops' extent from the operands. Read with
  // tensor.extract at K - 1 - k, as a map cannot hold a symbolic K.
  size_t r = w.type.rank();
  Strings last;
  for (const Dim& k : p.kernel) last.push_back(e.indexOp("arith.subi", e.sizeOf(k), e.index(1)));
  std::string flipped =
      e.generic(w.type, loopDims(r), {{w.ssa, w.type, loopDims(r)}}, Strings(r, "parallel"), [&](Strings&) {
        Strings at = {e.loopIndex(0), e.loopIndex(1)};
        for (size_t i = 0; i < p.k; ++i) at.push_back(e.indexOp("arith.subi", last[i], e.loopIndex(2 + i)));
        return e.assign("w", "tensor.extract " + w.ssa + "[" + join(at) + "] : " + w.type.str());
      });
  return correlate(e, xs, Value::tensor(flipped, w.type), bias, p, Ints(p.k, 1), true, out);
}

Value convolution(OpCall& c) {
  const Value& x = c.tensor(0);
  const Value& w = c.tensor(1);
  Conv p = convParams(c, x, w, 3);
  const Value* bias = c.none(2) ? nullptr : &c.tensor(2);
  if (c.flag(6)) return transposed(c.e, x, w, bias, p, spatial(c, 7, p.k, Ints(p.k, 0)), c.out());
  return correlate(c.e, pad(c.e, x, lead(2, p.padding), lead(2, p.padding), 0), w, bias, p, p.stride, false, c.out());
}

// A weight's gradient: out[(g,) o, c, kernel] = sum over (n, j) of a[n, (g,) o, j] *
// b[n, (g,) c, j * stride + kernel * dilation], b padded; grouped as correlate() does. Loops:
// (g,) o, c, kernel (k), n, j (k).
Value weightGradient(Emitter& e, Value a, Value b, const Conv& p, const TensorType& out) {
  DType ct = computeType(out.dtype), at = a.type.dtype, bt = b.type.dtype;
  TensorType acc = out.withDtype(ct);
  size_t g = p.groups == 1 ? 0 : 1, k = p.k, n = g + 2 + k, j0 = n + 1;
  if (g) {
    a = splitGroups(e, a, 1, p.groups);
    b = splitGroups(e, b, 1, p.groups);
    acc = splitType(e, acc, 0, p.groups);
  }
  Strings amap = {d(n)}, bmap = {d(n)};
  if (g) amap.push_back("d0"), bmap.push_back("d0");
  amap.push_back(d(g)), bmap.push_back(d(g + 1));
  for (size_t i = 0; i < k; ++i)
    amap.push_back(d(j0 + i)), bmap.push_back(window(j0 + i, p.stride[i], g + 2 + i, p.dilation[i]));
  std::string r =
      reduce(e, acc, 3 + g + 2 * k, 2 + g + k, {{a.ssa, a.type, amap}, {b.ssa, b.type, bmap}}, mulAdd(e, at, bt, ct));
  Value v = Value::tensor(r, acc);
  if (g) v = mergeGroups(e, v, 0, out.withDtype(ct));
  return e.convert(v, out.dtype);
}

// (grad_input, grad_weight, grad_bias) for output_mask, None where masked off. For a plain
// convolution grad_input is the transposed convolution of grad_output with the same weight (its
// [out, in / groups, kernel...] is a transposed convolution's layout; the high padding stride - 1
// covers the input rows the forward's windows never reached), and for a transposed one the
// plain convolution; grad_weight correlates grad_output with the padded input, or (transposed)
// the input with the padded grad_output.
Value convolutionBackward(OpCall& c) {
  const Value& gy = c.tensor(0);
  const Value& x = c.tensor(1);
  const Value& w = c.tensor(2);
  Conv p = convParams(c, x, w, 4);
  bool transposedForward = c.flag(7);
  size_t k = p.k;
  const Value& maskArg = c.arg(10);
  std::vector<Value> results(3);
  auto wanted = [&](size_t i) {
    return maskArg.kind != Value::Kind::List || maskArg.items.size() != 3 || maskArg.items[i].number != 0;
  };
  auto padded = [&](const Value& v) { return pad(c.e, v, lead(2, p.padding), lead(2, p.padding), 0); };
  if (wanted(0)) {
    Ints extra(k);
    for (size_t i = 0; i < k; ++i) extra[i] = p.stride[i] - 1;
    results[0] = transposedForward ? correlate(c.e, padded(gy), w, nullptr, p, p.stride, false, c.out(0))
                                   : transposed(c.e, gy, w, nullptr, p, extra, c.out(0));
  }
  if (wanted(1))
    results[1] = transposedForward ? weightGradient(c.e, x, padded(gy), p, c.out(1))
                                   : weightGradient(c.e, gy, padded(x), p, c.out(1));
  if (wanted(2)) {
    DType ct = computeType(c.out(2).dtype);
    TensorType acc = c.out(2).withDtype(ct);
    Strings gmap = {"d1", "d0"};
    for (size_t i = 0; i < k; ++i) gmap.push_back(d(2 + i));
    std::string r = reduce(c.e, acc, 2 + k, 1, {{gy.ssa, gy.type, gmap}}, [&](Strings& a) {
      Scalars s = c.e.scalars();
      return add(s, a[1], s.cast(a[0], gy.type.dtype, ct), ct);
    });
    results[2] = c.e.convert(Value::tensor(r, acc), c.out(2).dtype);
  }
  return Value::list(results);
}

// ---- pooling ---------------------------------------------------------------------------------

// Loops of a pooling generic: the lead dims (channels, and batch when batched), then the output's
// k spatial dims, then the window's k.
struct Pool {
  size_t lead = 0, k = 0;
  Ints kernel, stride, padding, dilation;
};

Pool poolParams(const OpCall& c, const Value& x, size_t first, bool dilation, size_t k) {
  if (x.type.rank() < k + 1 || x.type.rank() > k + 2)
    throw Unsupported(std::to_string(k) + "-d pooling of a " + std::to_string(x.type.rank()) + "-d input");
  Pool p;
  p.lead = x.type.rank() - k;
  p.k = k;
  p.kernel = spatial(c, first, k);
  p.stride = spatial(c, first + 1, k, p.kernel);
  p.padding = spatial(c, first + 2, k);
  p.dilation = dilation ? spatial(c, first + 3, k) : Ints(k, 1);
  return p;
}

// The input windows of a padded input.
Strings windows(const Pool& p) {
  Strings m = loopDims(p.lead);
  for (size_t i = 0; i < p.k; ++i) m.push_back(window(p.lead + i, p.stride[i], p.lead + p.k + i, p.dilation[i]));
  return m;
}
GenericInput kernelExtent(Emitter& e, const Pool& p) {
  std::vector<Dim> dims;
  for (int64_t n : p.kernel) dims.push_back(Dim{n, ""});
  return extent(e, dims, loopDims(p.k, p.lead + p.k));
}
// The sizes of x's spatial dims (index values).
Strings spatialSizes(Emitter& e, const TensorType& x, size_t k) {
  Strings out;
  for (size_t i = x.rank() - k; i < x.rank(); ++i) out.push_back(e.dimSize(x, i));
  return out;
}

// max_pool{2,3}d_with_indices: each window's maximum (the padding is the lowest value, so it
// never wins) and its flat index in the plane ((d * H) + h) * W + w, chosen as PyTorch's kernel
// does: `val > max || isnan(val)` in window order, starting from the window's first position
// inside the input. The input is padded high enough for ceil_mode's last window.
// One window's candidate, inside a max-with-index region: its value (of the input's dtype),
// whether it lies inside the input, and its flat index in the plane (an index value).
struct Candidate {
  std::string value, valid, flat;
};

// Each window's maximum of x and its flat index, chosen as PyTorch's kernels do: `val > max ||
// isnan(val)` in window order, starting from the window's first position inside the input.
// The first `parallel` of `loops` dims are the outputs'; `candidate` gets the region's block
// arguments of `ins`.
Value maxWithIndex(OpCall& c, const Value& x, const std::vector<GenericInput>& ins, size_t parallel, size_t loops,
                   const std::function<Candidate(const Strings&)>& candidate) {
  DType dt = x.type.dtype, ct = computeType(dt);
  double lowest = isFloat(dt)                           ? -HUGE_VAL
                  : dt == DType::Bool || isUnsigned(dt) ? 0
                                                        : -std::ldexp(1.0, bitWidth(dt) - 1);
  TensorType vt = c.out(0), it = c.out(1);
  Strings iters(loops, "parallel"), maps, inits = {c.e.fill(vt, lowest), c.e.fill(it, -1)}, a, ssas, types;
  std::fill(iters.begin() + static_cast<long>(parallel), iters.end(), "reduction");
  for (const GenericInput& in : ins) {
    maps.push_back(mapText(loops, in.map));
    ssas.push_back(in.ssa), types.push_back(in.type.str());
  }
  maps.push_back(mapText(loops, loopDims(parallel)));
  maps.push_back(maps.back());
  std::string name = c.e.fresh("mp"), args, outTypes = vt.str() + ", " + it.str();
  for (std::string& i : iters) i = mlirString(i);
  c.e.open(name + ":2 = linalg.generic {indexing_maps = [" + join(maps) + "], iterator_types = [" + join(iters) +
           "]} ins(" + join(ssas) + " : " + join(types) + ") outs(" + join(inits) + " : " + outTypes + ") {");
  std::vector<DType> argTypes;
  for (const GenericInput& in : ins) argTypes.push_back(in.type.dtype);
  argTypes.push_back(dt), argTypes.push_back(DType::I64);
  for (size_t i = 0; i < argTypes.size(); ++i)
    a.push_back(c.e.fresh("b")), args += (i ? ", " : "") + a.back() + ": " + elementType(argTypes[i]);
  c.e.label("^bb0(" + args + "):");
  Scalars s = c.e.scalars();
  Candidate at = candidate(a);
  const std::string &best = a[ins.size()], &bestAt = a[ins.size() + 1];
  std::string v = s.cast(at.value, dt, ct), better = s.cmp(isFloat(ct) ? "ogt" : "sgt", v, s.cast(best, dt, ct), ct);
  if (isFloat(ct)) better = s.op("arith.ori", better, s.cmp("uno", v, v, ct), DType::Bool);
  better = s.op("arith.andi", at.valid,
                s.op("arith.ori", better, s.cmp("eq", bestAt, s.constant(-1, DType::I64), DType::I64), DType::Bool),
                DType::Bool);
  std::string flat = c.e.fromIndex(at.flat, DType::I64);
  c.e.line("linalg.yield " + s.select(better, at.value, best, dt) + ", " + s.select(better, flat, bestAt, DType::I64) +
           " : " + elementType(dt) + ", i64");
  c.e.close("} -> (" + outTypes + ")");
  return Value::list({Value::tensor(name + "#0", vt), Value::tensor(name + "#1", it)});
}

Value maxPool(OpCall& c, size_t k) {
  const Value& x = c.tensor(0);
  Pool p = poolParams(c, x, 1, true, k);
  size_t L = p.lead;
  DType dt = x.type.dtype;
  double lowest = isFloat(dt)                           ? -HUGE_VAL
                  : dt == DType::Bool || isUnsigned(dt) ? 0
                                                        : -std::ldexp(1.0, bitWidth(dt) - 1);
  Ints high(k);
  for (size_t i = 0; i < k; ++i) high[i] = p.padding[i] + (p.kernel[i] - 1) * p.dilation[i];
  Value xp = pad(c.e, x, known(lead(L, p.padding)), known(lead(L, high)), lowest);
  Strings size = spatialSizes(c.e, x.type, k);
  return maxWithIndex(
      c, x, {{xp.ssa, xp.type, windows(p)}, kernelExtent(c.e, p)}, L + k, L + 2 * k, [&](const Strings& a) {
        Scalars s = c.e.scalars();
        std::string valid = s.constant(1, DType::Bool), flat;
        for (size_t i = 0; i < k; ++i) {
          std::string at =
              c.e.indexOp("arith.addi", c.e.indexOp("arith.muli", c.e.loopIndex(L + i), c.e.index(p.stride[i])),
                          c.e.indexOp("arith.muli", c.e.loopIndex(L + k + i), c.e.index(p.dilation[i])));
          std::string pos = c.e.indexOp("arith.subi", at, c.e.index(p.padding[i]));
          valid = s.op("arith.andi", valid,
                       s.op("arith.andi", c.e.indexCmp("sge", pos, c.e.index(0)), c.e.indexCmp("slt", pos, size[i]),
                            DType::Bool),
                       DType::Bool);
          flat = i ? c.e.indexOp("arith.addi", c.e.indexOp("arith.muli", flat, size[i]), pos) : pos;
        }
        return Candidate{a[0], valid, flat};
      });
}

// grad_input[plane, indices[p]] += grad_output[p]: scf.for loops over the output gradient,
// the input gradient threaded through tensor.insert (updated in place).
Value maxPoolBackward(OpCall& c, size_t k) {
  const Value& gy = c.tensor(0);
  const Value& x = c.tensor(1);
  const Value& idx = c.tensor(c.index("indices"));
  const TensorType& out = c.out();
  if (x.type.rank() < k + 1 || x.type.rank() > k + 2 || gy.type.rank() != x.type.rank())
    throw Unsupported("max_pool" + std::to_string(k) + "d backward of a " + std::to_string(x.type.rank()) + "-d input");
  size_t L = x.type.rank() - k, r = gy.type.rank();
  DType ct = computeType(out.dtype);
  TensorType acc = out.withDtype(ct);
  Strings size = spatialSizes(c.e, x.type, k), sizes, iv, names, accs;
  std::string last = size[0];
  for (size_t i = 1; i < k; ++i) last = c.e.indexOp("arith.muli", last, size[i]);
  last = c.e.indexOp("arith.subi", last, c.e.index(1));
  for (size_t i = 0; i < r; ++i) sizes.push_back(c.e.dimSize(gy.type, i));
  std::string init = c.e.fill(acc, 0);
  for (size_t i = 0; i < r; ++i) {
    names.push_back(c.e.fresh("for")), iv.push_back(c.e.fresh("iv")), accs.push_back(c.e.fresh("acc"));
    std::string lo = c.e.index(0), one = c.e.index(1);
    c.e.open(names[i] + " = scf.for " + iv[i] + " = " + lo + " to " + sizes[i] + " step " + one + " iter_args(" +
             accs[i] + " = " + (i ? accs[i - 1] : init) + ") -> (" + acc.str() + ") {");
  }
  Scalars s = c.e.scalars();
  std::string gv = c.e.fresh("gv"), old = c.e.fresh("old"), put = c.e.fresh("put");
  std::string i = c.e.assign("pi", "tensor.extract " + idx.ssa + "[" + join(iv) + "] : " + idx.type.str());
  std::string at = c.e.toIndex(i);
  at = c.e.indexOp("arith.minsi", c.e.indexOp("arith.maxsi", at, c.e.index(0)), last);
  Strings to(iv.begin(), iv.begin() + static_cast<long>(L)), coords(k);
  for (size_t j = k; j-- > 1;)
    coords[j] = c.e.indexOp("arith.remsi", at, size[j]), at = c.e.indexOp("arith.divsi", at, size[j]);
  coords[0] = at;
  to.insert(to.end(), coords.begin(), coords.end());
  c.e.line(gv + " = tensor.extract " + gy.ssa + "[" + join(iv) + "] : " + gy.type.str());
  c.e.line(old + " = tensor.extract " + accs.back() + "[" + join(to) + "] : " + acc.str());
  c.e.line(put + " = tensor.insert " + add(s, old, s.cast(gv, gy.type.dtype, ct), ct) + " into " + accs.back() + "[" +
           join(to) + "] : " + acc.str());
  for (size_t j = r; j-- > 0;) {
    c.e.line("scf.yield " + (j + 1 == r ? put : names[j + 1]) + " : " + acc.str());
    c.e.close("}");
  }
  return c.e.convert(Value::tensor(r ? names[0] : init, acc), out.dtype);
}

// PyTorch's average-pool divisor at the output position of the generic's loops: the window
// clipped to the padded input (count_include_pad) or to the input, unless divisor_override.
std::string avgDivisor(OpCall& c, const Pool& p, const Strings& size, bool includePad, int64_t override_, DType ct) {
  if (override_) return c.e.scalars().constant(static_cast<double>(override_), ct);
  std::string all, clipped;
  for (size_t i = 0; i < p.k; ++i) {
    std::string start =
        c.e.indexOp("arith.subi", c.e.indexOp("arith.muli", c.e.loopIndex(p.lead + i), c.e.index(p.stride[i])),
                    c.e.index(p.padding[i]));
    std::string end = c.e.indexOp("arith.minsi", c.e.indexOp("arith.addi", start, c.e.index(p.kernel[i])),
                                  c.e.indexOp("arith.addi", size[i], c.e.index(p.padding[i])));
    std::string a = c.e.indexOp("arith.subi", end, start);
    std::string b = c.e.indexOp("arith.subi", c.e.indexOp("arith.minsi", end, size[i]),
                                c.e.indexOp("arith.maxsi", start, c.e.index(0)));
    all = i ? c.e.indexOp("arith.muli", all, a) : a;
    clipped = i ? c.e.indexOp("arith.muli", clipped, b) : b;
  }
  return c.e.fromIndex(includePad ? all : clipped, ct);
}

// avg_pool{2,3}d(self, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override),
// and its backward (grad_output first): each output's gradient over its divisor, spread by the
// stride into zeros at offset K - 1, summed over the window reaching each input position.
Value avgPool(OpCall& c, bool backward, size_t k) {
  size_t a0 = backward ? 2 : 1;
  const Value& x = c.tensor(backward ? 1 : 0);
  Pool p = poolParams(c, x, a0, false, k);
  bool includePad = c.flag(a0 + 4);
  int64_t override_ = c.none(a0 + 5) ? 0 : c.integer(a0 + 5);
  size_t L = p.lead, loops = L + 2 * k;
  const TensorType& out = c.out();
  DType ct = computeType(out.dtype);
  TensorType acc = out.withDtype(ct);
  Strings size = spatialSizes(c.e, x.type, k);
  auto sum = [&](Strings& a) {
    Scalars s = c.e.scalars();
    return add(s, a[2], a[0], ct);
  };
  if (!backward) {
    Ints high(k);
    for (size_t i = 0; i < k; ++i) high[i] = p.padding[i] + p.kernel[i];
    Value xp = pad(c.e, c.e.convert(x, ct), known(lead(L, p.padding)), known(lead(L, high)), 0);
    std::string total = reduce(c.e, acc, loops, L + k, {{xp.ssa, xp.type, windows(p)}, kernelExtent(c.e, p)}, sum);
    std::string r =
        c.e.generic(out, loopDims(L + k), {{total, acc, loopDims(L + k)}}, Strings(L + k, "parallel"), [&](Strings& a) {
          Scalars s = c.e.scalars();
          return s.cast(quotient(s, a[0], avgDivisor(c, p, size, includePad, override_, ct), ct), ct, out.dtype);
        });
    return Value::tensor(r, out);
  }
  const Value& gy = c.tensor(0);
  TensorType gt = gy.type.withDtype(ct), zt = gt;
  std::string gd = c.e.generic(
      gt, loopDims(L + k), {{gy.ssa, gy.type, loopDims(L + k)}}, Strings(L + k, "parallel"), [&](Strings& a) {
        Scalars s = c.e.scalars();
        return quotient(s, s.cast(a[0], gy.type.dtype, ct), avgDivisor(c, p, size, includePad, override_, ct), ct);
      });
  Strings zmap = loopDims(L);
  Ints off(k);
  for (size_t i = 0; i < k; ++i) {
    off[i] = p.kernel[i] - 1;
    zt.dims[L + i] = plus(x.type.dims[L + i], 2 * p.padding[i] + off[i]);
    zmap.push_back(window(L + i, 1, L + k + i, -1, p.padding[i] + off[i]));
  }
  Ints strides = lead(L, p.stride);
  std::fill(strides.begin(), strides.begin() + static_cast<long>(L), 1);
  Value z = place(c.e, Value::tensor(gd, gt), zt, 0, known(lead(L, off)), strides);
  std::string r = reduce(c.e, acc, loops, L + k, {{z.ssa, zt, zmap}, kernelExtent(c.e, p)}, sum);
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
    for (int64_t i = 0; i < out.size; ++i)
      m = std::max(m, ((i + 1) * in.size + out.size - 1) / out.size - i * in.size / out.size);
    return Dim{m, ""};
  }
  std::string n = e.sizeOf(in), o = e.sizeOf(out);
  std::string bound = e.indexOp(
      "arith.addi", e.indexOp("arith.divui", e.indexOp("arith.addi", n, e.indexOp("arith.subi", o, e.index(1))), o),
      e.index(1));
  std::string symbol = "dynrep_" + e.fresh("bin").substr(1);
  e.bindSymbol(symbol, bound);
  return Dim{-1, symbol};
}

// _adaptive_avg_pool{2,3}d. Forward: the bin's sum, then divided by its extent in each spatial
// dim in turn as PyTorch's kernel does (sum / kd / kh / kw). Backward: the sum over covering
// bins of their gradient divided the same way.
Value adaptiveAvgPool(OpCall& c, bool backward, size_t k) {
  const Value& src = c.tensor(0);  // the input, or the output gradient
  const Value& x = backward ? c.tensor(1) : src;
  const TensorType& out = c.out();
  if (x.type.rank() < k + 1 || x.type.rank() > k + 2)
    throw Unsupported(std::to_string(k) + "-d adaptive pooling of a " + std::to_string(x.type.rank()) + "-d input");
  size_t L = x.type.rank() - k;
  DType ct = computeType(out.dtype);
  const TensorType& pooled = backward ? src.type : out;
  Strings in = spatialSizes(c.e, x.type, k), po = spatialSizes(c.e, pooled, k);
  std::vector<Dim> span;
  for (size_t i = 0; i < k; ++i)
    span.push_back(backward ? widestBin(c.e, pooled.dims[L + i], x.type.dims[L + i])
                            : widestBin(c.e, x.type.dims[L + i], pooled.dims[L + i]));
  auto perBin = [&](Scalars& s, std::string v, const Strings& o) {  // v / (bin o's extent) in each dim
    for (size_t i = 0; i < k; ++i)
      v = quotient(
          s, v,
          c.e.fromIndex(c.e.indexOp("arith.subi", binEnd(c.e, o[i], in[i], po[i]), binStart(c.e, o[i], in[i], po[i])),
                        ct),
          ct);
    return v;
  };
  TensorType acc = out.withDtype(ct);
  std::string r = reduce(c.e, acc, L + 2 * k, L + k, {extent(c.e, span, loopDims(k, L + k))}, [&](Strings& a) {
    Scalars s = c.e.scalars();
    Strings at;
    for (size_t i = 0; i < L; ++i) at.push_back(c.e.loopIndex(i));
    std::string valid = s.constant(1, DType::Bool);
    for (size_t i = 0; i < k; ++i) {
      std::string o = c.e.loopIndex(L + i), from = backward ? po[i] : in[i], to = backward ? in[i] : po[i];
      std::string j = c.e.indexOp("arith.addi", binStart(c.e, o, from, to), c.e.loopIndex(L + k + i));
      valid = s.op("arith.andi", valid, c.e.indexCmp("slt", j, binEnd(c.e, o, from, to)), DType::Bool);
      at.push_back(c.e.indexOp("arith.minsi", j, c.e.indexOp("arith.subi", from, c.e.index(1))));
    }
    std::string v = c.e.fresh("x");
    c.e.line(v + " = tensor.extract " + src.ssa + "[" + join(at) + "] : " + src.type.str());
    v = s.cast(v, src.type.dtype, ct);
    if (backward) v = perBin(s, v, Strings(at.begin() + static_cast<long>(L), at.end()));
    return add(s, a[1], s.select(valid, v, s.constant(0, ct), ct), ct);
  });
  if (backward) return c.e.convert(Value::tensor(r, acc), out.dtype);
  std::string q =
      c.e.generic(out, loopDims(L + k), {{r, acc, loopDims(L + k)}}, Strings(L + k, "parallel"), [&](Strings& a) {
        Scalars s = c.e.scalars();
        Strings o;
        for (size_t i = 0; i < k; ++i) o.push_back(c.e.loopIndex(L + i));
        return s.cast(perBin(s, a[0], o), ct, out.dtype);
      });
  return Value::tensor(q, out);
}

// adaptive_max_pool{2,3}d: each bin's maximum and its flat index in the input plane.
Value adaptiveMaxPool(OpCall& c, size_t k) {
  const Value& x = c.tensor(0);
  if (x.type.rank() < k + 1 || x.type.rank() > k + 2)
    throw Unsupported(std::to_string(k) + "-d adaptive pooling of a " + std::to_string(x.type.rank()) + "-d input");
  size_t L = x.type.rank() - k;
  Strings in = spatialSizes(c.e, x.type, k), po = spatialSizes(c.e, c.out(0), k);
  std::vector<Dim> span;
  for (size_t i = 0; i < k; ++i) span.push_back(widestBin(c.e, x.type.dims[L + i], c.out(0).dims[L + i]));
  return maxWithIndex(c, x, {extent(c.e, span, loopDims(k, L + k))}, L + k, L + 2 * k, [&](const Strings&) {
    Scalars s = c.e.scalars();
    Strings at;
    for (size_t i = 0; i < L; ++i) at.push_back(c.e.loopIndex(i));
    std::string valid = s.constant(1, DType::Bool), flat;
    for (size_t i = 0; i < k; ++i) {
      std::string o = c.e.loopIndex(L + i);
      std::string j = c.e.indexOp("arith.addi", binStart(c.e, o, in[i], po[i]), c.e.loopIndex(L + k + i));
      valid = s.op("arith.andi", valid, c.e.indexCmp("slt", j, binEnd(c.e, o, in[i], po[i])), DType::Bool);
      j = c.e.indexOp("arith.minsi", j, c.e.indexOp("arith.subi", in[i], c.e.index(1)));
      at.push_back(j);
      flat = i ? c.e.indexOp("arith.addi", c.e.indexOp("arith.muli", flat, in[i]), j) : j;
    }
    std::string v = c.e.fresh("x");
    c.e.line(v + " = tensor.extract " + x.ssa + "[" + join(at) + "] : " + x.type.str());
    return Candidate{v, valid, flat};
  });
}

}  // namespace

void addConvolutionOps(OpTable& t) {
  // _convolution (the spelling graphs of older code and of torch-mlir's tests carry): its first
  // nine arguments are convolution's; the rest choose kernels (benchmark, cudnn, tf32).
  t["aten::convolution.default"] = t["aten::_convolution.default"] = t["aten::_convolution.deprecated"] = convolution;
  t["aten::convolution_backward.default"] = convolutionBackward;
  for (size_t k : {2, 3}) {
    std::string n = std::to_string(k) + "d";
    t["aten::max_pool" + n + "_with_indices.default"] = [k](OpCall& c) { return maxPool(c, k); };
    t["aten::max_pool" + n + "_with_indices_backward.default"] = [k](OpCall& c) { return maxPoolBackward(c, k); };
    t["aten::avg_pool" + n + ".default"] = [k](OpCall& c) { return avgPool(c, false, k); };
    t["aten::avg_pool" + n + "_backward.default"] = [k](OpCall& c) { return avgPool(c, true, k); };
    t["aten::_adaptive_avg_pool" + n + ".default"] = [k](OpCall& c) { return adaptiveAvgPool(c, false, k); };
    t["aten::_adaptive_avg_pool" + n + "_backward.default"] = [k](OpCall& c) { return adaptiveAvgPool(c, true, k); };
    t["aten::adaptive_max_pool" + n + ".default"] = [k](OpCall& c) { return adaptiveMaxPool(c, k); };
    t["aten::adaptive_max_pool" + n + "_backward.default"] = [k](OpCall& c) { return maxPoolBackward(c, k); };
  }
}

}  // namespace dynrep::replay::lowering
