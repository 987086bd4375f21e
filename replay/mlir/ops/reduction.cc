// Reductions (sum, mean, prod, max/min and their indices, var/std, norms, logsumexp, any/all),
// the softmax family, and the scans cumsum, cumprod and logcumsumexp (scf.for loops, at the end). Each
// reduction is a linalg.generic whose reduction loops accumulate into a fill of the reduction's
// identity. A statistic the op uses again (a row's max, a mean) is kept with
// its reduced dims as size 1, so the next generic reads it through a broadcast map; the result
// is squeezed only at the end when keepdim is false. Arithmetic is in computeType (float32 for
// float16/bfloat16, as PyTorch's CPU kernels accumulate) and converted to the IR's output dtype.
//
// The helpers in namespace `reduction` (reduction.h) are shared with ops/normalization.cc.
#include <algorithm>
#include <cmath>
#include <limits>

#include "indexing.h"
#include "reduction.h"

namespace dynrep::replay::lowering {

namespace reduction {

Operand over(const Value& v, const TensorType& space) { return {v, broadcastMap(v.type, space)}; }

// A keepdim statistic read in the loops of the result of the same reduction with `keepdim`.
Operand kept(const Value& v, const std::vector<bool>& red, bool keepdim) {
  std::vector<std::string> map;
  size_t k = 0;
  for (size_t d = 0; d < v.type.rank(); ++d) {
    if (red[d])
      map.push_back("0");
    else
      map.push_back("d" + std::to_string(k));
    if (!red[d] || keepdim) ++k;
  }
  return {v, map};
}

TensorType reducedType(const TensorType& space, const std::vector<bool>& red, bool keepdim, DType t) {
  TensorType out;
  out.dtype = t;
  for (size_t d = 0; d < space.rank(); ++d)
    if (!red[d])
      out.dims.push_back(space.dims[d]);
    else if (keepdim)
      out.dims.push_back(Dim{1, ""});
  return out;
}

// A parallel generic over `out`: operands converted to `compute`, the body's value to out's dtype.
Value pointwise(Emitter& e, const TensorType& out, const std::vector<Operand>& ins, DType compute, const Body& body) {
  std::vector<GenericInput> inputs;
  for (const Operand& o : ins) inputs.push_back({o.v.ssa, o.v.type, o.map});
  std::string ssa = e.generic(out, loopDims(out.rank()), inputs, std::vector<std::string>(out.rank(), "parallel"),
                              [&](std::vector<std::string>& a) {
                                Scalars s = e.scalars();
                                std::vector<std::string> v;
                                for (size_t i = 0; i < ins.size(); ++i)
                                  v.push_back(s.cast(a[i], ins[i].v.type.dtype, compute));
                                return s.cast(body(s, v), compute, out.dtype);
                              });
  return Value::tensor(ssa, out);
}

Value squeeze(Emitter& e, const Value& keep, const std::vector<bool>& red) {
  if (std::none_of(red.begin(), red.end(), [](bool r) { return r; })) return keep;
  return pointwise(e, reducedType(keep.type, red, false, keep.type.dtype), {kept(keep, red, false)}, keep.type.dtype,
                   [](Scalars&, std::vector<std::string>& a) { return a[0]; });
}

std::string limit(Emitter& e, DType t, bool max) {
  if (isFloat(t)) return e.scalars().constant(max ? INFINITY : -INFINITY, t);
  std::string literal;
  if (t == DType::Bool) {
    literal = max ? "true" : "false";
  } else {
    int bits = bitWidth(t);
    int64_t lo = isUnsigned(t) ? 0 : bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
    int64_t hi = isUnsigned(t) ? -1 : bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
    literal = std::to_string(max ? hi : lo) + " : " + elementType(t);  // unsigned max: all ones
  }
  return e.assign("c", "arith.constant " + literal);
}

// A fill with a reduction's identity. ±inf on an integer type means its limits (a max starts at
// the lowest value).
static std::string identity(Emitter& e, const TensorType& t, double v) {
  if (isFloat(t.dtype) || std::isfinite(v)) return e.fill(t, v);
  std::string c = limit(e, t.dtype, v > 0), dest = e.empty(t), name = e.fresh("f");
  e.line(name + " = linalg.fill ins(" + c + " : " + elementType(t.dtype) + ") outs(" + dest + " : " + t.str() +
         ") -> " + t.str());
  return name;
}

// Reduces the loops of `space` marked in `red`: operands (indexed over those loops) converted to
// `compute`, accumulated in `acc` from `init`.
Value reduce(Emitter& e, const TensorType& space, const std::vector<Operand>& ins, const std::vector<bool>& red,
             bool keepdim, DType compute, DType acc, double init, const Combine& combine) {
  TensorType out = reducedType(space, red, keepdim, acc);
  std::vector<std::string> outMap, iterators;
  for (size_t d = 0; d < space.rank(); ++d) {
    iterators.push_back(red[d] ? "reduction" : "parallel");
    if (!red[d])
      outMap.push_back("d" + std::to_string(d));
    else if (keepdim)
      outMap.push_back("0");
  }
  std::vector<GenericInput> inputs;
  for (const Operand& o : ins) inputs.push_back({o.v.ssa, o.v.type, o.map});
  std::string start = identity(e, out, init);
  std::string ssa = e.generic(
      out, outMap, inputs, iterators,
      [&](std::vector<std::string>& a) {
        Scalars s = e.scalars();
        std::vector<std::string> v;
        for (size_t i = 0; i < ins.size(); ++i) v.push_back(s.cast(a[i], ins[i].v.type.dtype, compute));
        return combine(s, v, a.back());
      },
      start);
  return Value::tensor(ssa, out);
}

// How many elements each output element reduces, as a float of type f: the product of the
// reduced sizes, computed at run time where one is symbolic.
std::string count(Emitter& e, const TensorType& space, const std::vector<bool>& red, DType f) {
  int64_t known = 1;
  std::string size;  // the product of the symbolic sizes, an index
  for (size_t d = 0; d < space.rank(); ++d) {
    if (!red[d]) continue;
    if (space.dims[d].isStatic()) {
      known *= space.dims[d].size;
      continue;
    }
    std::string dim = e.dimSize(space, d);
    size = size.empty() ? dim : e.indexOp("arith.muli", size, dim);
  }
  Scalars s = e.scalars();
  if (size.empty()) return s.constant(static_cast<double>(known), f);
  if (known != 1) size = e.indexOp("arith.muli", size, e.index(known));
  return e.fromIndex(size, f);
}

// The mean over `red`, kept with size-1 dims, in float type t.
Value meanOf(Emitter& e, const Value& x, const std::vector<bool>& red, DType t, const std::string& n) {
  Value sum = reduce(e, x.type, {over(x, x.type)}, red, true, t, t, 0,
                     [&](Scalars& s, std::vector<std::string>& v, const std::string& acc) {
                       return s.op("arith.addf", v[0], acc, t);
                     });
  return pointwise(e, sum.type, {over(sum, sum.type)}, t,
                   [&](Scalars& s, std::vector<std::string>& v) { return s.op("arith.divf", v[0], n, t); });
}

// sum((x - mean)^2) over `red`: the second pass of a two-pass variance, which is what PyTorch's
// Welford and two-pass kernels both compute up to rounding (a one-pass E[x^2] - E[x]^2 is not).
Value squaredDeviations(Emitter& e, const Value& x, const Value& meanKeep, const std::vector<bool>& red, bool keepdim,
                        DType t) {
  return reduce(e, x.type, {over(x, x.type), over(meanKeep, x.type)}, red, keepdim, t, t, 0,
                [&](Scalars& s, std::vector<std::string>& v, const std::string& acc) {
                  std::string d = s.op("arith.subf", v[0], v[1], t);
                  return s.op("arith.addf", s.op("arith.mulf", d, d, t), acc, t);
                });
}

}  // namespace reduction

namespace {

using namespace reduction;

bool has(const OpCall& c, const char* name) { return std::find(c.names.begin(), c.names.end(), name) != c.names.end(); }
bool keepdim(const OpCall& c) { return has(c, "keepdim") && c.flag(c.index("keepdim")); }

// The dims an op reduces: its `dim` argument, where None, [] or no such argument mean all.
std::vector<bool> reducedDims(const OpCall& c, size_t rank) {
  std::vector<bool> red(rank, true);
  if (!has(c, "dim") || c.none(c.index("dim"))) return red;
  std::vector<int64_t> dims = c.ints(c.index("dim"));
  if (dims.empty()) return red;
  red.assign(rank, false);
  for (int64_t d : dims) {
    int64_t n = OpCall::dim(d, rank);  // validates; a rank-0 tensor reduces nothing
    if (rank) red[static_cast<size_t>(n)] = true;
  }
  return red;
}

DType floatCompute(const OpCall& c, const char* what) {
  DType t = computeType(c.out().dtype);
  if (isComplex(t)) throw Unsupported(std::string(what) + " of a complex tensor is not lowered");
  if (!isFloat(t)) throw Unsupported(std::string(what) + " with an integer result");
  return t;
}

const char* extremeOp(DType t, bool max) {
  if (isFloat(t)) return max ? "arith.maximumf" : "arith.minimumf";  // NaN-propagating, as torch.amax
  if (isUnsigned(t)) return max ? "arith.maxui" : "arith.minui";
  return max ? "arith.maxsi" : "arith.minsi";
}

// The max (or min) over `red`, kept, in x's compute type (exact: no rounding happens).
Value extreme(Emitter& e, const Value& x, const std::vector<bool>& red, bool keep, bool max) {
  DType t = computeType(x.type.dtype);
  const char* op = extremeOp(t, max);
  return reduce(
      e, x.type, {over(x, x.type)}, red, keep, t, t, max ? -INFINITY : INFINITY,
      [=](Scalars& s, std::vector<std::string>& v, const std::string& acc) { return s.op(op, v[0], acc, t); });
}

// The row-major index (over the reduced dims) of the first element equal to the kept extreme m;
// a NaN counts as equal, as the max of a row with a NaN is that NaN (PyTorch's first NaN).
Value firstIndex(Emitter& e, const Value& x, const Value& m, const std::vector<bool>& red, bool keep) {
  DType t = m.type.dtype;
  std::vector<std::string> sizes(x.type.rank());
  for (size_t d = 0; d < x.type.rank(); ++d)
    if (red[d]) sizes[d] = e.dimSize(x.type, d);
  return reduce(e, x.type, {over(x, x.type), over(m, x.type)}, red, keep, t, DType::I64, INFINITY,
                [&](Scalars& s, std::vector<std::string>& v, const std::string& acc) {
                  std::string hit = s.cmp(isFloat(t) ? "oeq" : "eq", v[0], v[1], t);
                  if (isFloat(t)) hit = s.op("arith.ori", hit, s.cmp("uno", v[0], v[0], t), DType::Bool);
                  std::string linear;
                  for (size_t d = 0; d < x.type.rank(); ++d) {
                    if (!red[d]) continue;
                    std::string i = e.loopIndex(d);
                    linear = linear.empty() ? i : e.indexOp("arith.addi", e.indexOp("arith.muli", linear, sizes[d]), i);
                  }
                  std::string at = e.fromIndex(linear.empty() ? e.index(0) : linear);
                  return s.select(hit, s.op("arith.minsi", acc, at, DType::I64), acc, DType::I64);
                });
}

// sum, mean and prod, accumulated in the output dtype's compute type (an int sum is int64 there).
LowerFn accumulate(bool mean, bool product) {
  return [=](OpCall& c) {
    const Value& x = c.tensor(0);
    std::vector<bool> red = reducedDims(c, x.type.rank());
    DType out = c.out().dtype;
    DType t = mean && isComplex(out) ? out : mean ? floatCompute(c, "mean") : computeType(out);
    const char* op = product ? (isComplex(t) ? "complex.mul"
                                : isFloat(t) ? "arith.mulf"
                                             : "arith.muli")
                             : (isComplex(t) ? "complex.add"
                                : isFloat(t) ? "arith.addf"
                                             : "arith.addi");
    if (t == DType::Bool) throw Unsupported("a sum or product accumulated as bool");
    Value r =
        reduce(c.e, x.type, {over(x, x.type)}, red, keepdim(c), t, t, product ? 1 : 0,
               [=](Scalars& s, std::vector<std::string>& v, const std::string& acc) { return s.op(op, v[0], acc, t); });
    if (!mean) return c.e.convert(r, out);
    std::string n = count(c.e, x.type, red, t);
    return pointwise(c.e, r.type.withDtype(out), {over(r, r.type)}, t, [&](Scalars& s, std::vector<std::string>& v) {
      return s.op(isComplex(t) ? "complex.div" : "arith.divf", v[0], n, t);
    });
  };
}

// var, std, var_mean: sum of squared deviations over max(N - correction, 0), accumulated in
// float64 whatever the dtype, as PyTorch's CPU kernels accumulate (Welford's, two-pass over all
// elements): in float32 a sum over a million elements is off in its fourth digit.
LowerFn moments(bool root, bool withMean) {
  return [=](OpCall& c) {
    const Value& x = c.tensor(0);
    std::vector<bool> red = reducedDims(c, x.type.rank());
    bool keep = keepdim(c);
    floatCompute(c, "variance");
    DType t = DType::F64;
    double correction = 1;
    if (has(c, "correction") && !c.none(c.index("correction")))
      correction = c.real(c.index("correction"));
    else if (has(c, "unbiased"))
      correction = c.flag(c.index("unbiased")) ? 1 : 0;
    std::string n = count(c.e, x.type, red, t);
    Value mean = meanOf(c.e, x, red, t, n);
    Value ss = squaredDeviations(c.e, x, mean, red, keep, t);
    Scalars sc = c.e.scalars();
    std::string dof =
        sc.op("arith.maximumf", sc.op("arith.subf", n, sc.constant(correction, t), t), sc.constant(0, t), t);
    Value var = pointwise(c.e, ss.type.withDtype(c.out(0).dtype), {over(ss, ss.type)}, t,
                          [&](Scalars& s, std::vector<std::string>& v) {
                            std::string q = s.op("arith.divf", v[0], dof, t);
                            return root ? s.unary("math.sqrt", q, t) : q;
                          });
    if (!withMean) return var;
    return Value::list({var, c.e.convert(keep ? mean : squeeze(c.e, mean, red), c.out(1).dtype)});
  };
}

// max.dim / min.dim (values and indices) and argmax / argmin (indices only).
LowerFn extremeWithIndex(bool max, bool values) {
  return [=](OpCall& c) {
    const Value& x = c.tensor(0);
    std::vector<bool> red = reducedDims(c, x.type.rank());
    bool keep = keepdim(c);
    Value m = extreme(c.e, x, red, true, max);
    Value idx = firstIndex(c.e, x, m, red, keep);
    if (!values) return idx;
    return Value::list({c.e.convert(keep ? m : squeeze(c.e, m, red), c.out(0).dtype), idx});
  };
}

// linalg_vector_norm: ord inf/-inf a max/min of |x|, 0 a count of nonzeros, else (sum |x|^p)^(1/p).
Value vectorNorm(OpCall& c) {
  const Value& x = c.tensor(0);
  std::vector<bool> red = reducedDims(c, x.type.rank());
  DType t = floatCompute(c, "a norm");
  double p = c.real(c.index("ord"));
  Value r;
  if (std::isinf(p)) {
    const char* op = p > 0 ? "arith.maximumf" : "arith.minimumf";
    r = reduce(c.e, x.type, {over(x, x.type)}, red, keepdim(c), t, t, p > 0 ? 0 : INFINITY,
               [=](Scalars& s, std::vector<std::string>& v, const std::string& acc) {
                 return s.op(op, s.unary("math.absf", v[0], t), acc, t);
               });
    return c.e.convert(r, c.out().dtype);
  }
  r = reduce(c.e, x.type, {over(x, x.type)}, red, keepdim(c), t, t, 0,
             [=](Scalars& s, std::vector<std::string>& v, const std::string& acc) {
               std::string term;
               if (p == 0)
                 term = s.select(s.cmp("une", v[0], s.constant(0, t), t), s.constant(1, t), s.constant(0, t), t);
               else if (p == 1)
                 term = s.unary("math.absf", v[0], t);
               else if (p == 2)
                 term = s.op("arith.mulf", v[0], v[0], t);
               else
                 term = s.op("math.powf", s.unary("math.absf", v[0], t), s.constant(p, t), t);
               return s.op("arith.addf", term, acc, t);
             });
  return pointwise(c.e, r.type.withDtype(c.out().dtype), {over(r, r.type)}, t,
                   [=](Scalars& s, std::vector<std::string>& v) {
                     if (p == 0 || p == 1) return v[0];
                     if (p == 2) return s.unary("math.sqrt", v[0], t);
                     return s.op("math.powf", v[0], s.constant(1 / p, t), t);
                   });
}

// log(sum(exp(x - m))) + m with m the max, taken as 0 where it is infinite (PyTorch's guard that
// keeps an all -inf row at -inf and a +inf row at +inf instead of nan).
Value logSumExp(OpCall& c) {
  const Value& x = c.tensor(0);
  std::vector<bool> red = reducedDims(c, x.type.rank());
  bool keep = keepdim(c);
  DType t = floatCompute(c, "logsumexp");
  Value xf = c.e.convert(x, t);
  Value m = extreme(c.e, xf, red, true, true);
  auto shift = [t](Scalars& s, const std::string& max) {
    return s.select(s.cmp("oeq", s.unary("math.absf", max, t), s.constant(INFINITY, t), t), s.constant(0, t), max, t);
  };
  Value sum =
      reduce(c.e, x.type, {over(xf, x.type), over(m, x.type)}, red, keep, t, t, 0,
             [&](Scalars& s, std::vector<std::string>& v, const std::string& acc) {
               return s.op("arith.addf", s.unary("math.exp", s.op("arith.subf", v[0], shift(s, v[1]), t), t), acc, t);
             });
  return pointwise(c.e, sum.type.withDtype(c.out().dtype), {over(sum, sum.type), kept(m, red, keep)}, t,
                   [&](Scalars& s, std::vector<std::string>& v) {
                     return s.op("arith.addf", s.unary("math.log", v[0], t), shift(s, v[1]), t);
                   });
}

LowerFn anyAll(bool any) {
  return [=](OpCall& c) {
    const Value& x = c.tensor(0);
    std::vector<bool> red = reducedDims(c, x.type.rank());
    const char* op = any ? "arith.ori" : "arith.andi";
    Value r = reduce(c.e, x.type, {over(x, x.type)}, red, keepdim(c), DType::Bool, DType::Bool, any ? 0 : 1,
                     [=](Scalars& s, std::vector<std::string>& v, const std::string& acc) {
                       return s.op(op, v[0], acc, DType::Bool);
                     });
    return c.e.convert(r, c.out().dtype);
  };
}

enum class Softmax { Plain, Log, Safe };

// Softmax along one dim, shifted by the row max for stability as PyTorch's kernels are; in the
// output dtype's compute type (half_to_float and a dtype argument show in the IR's output dtype).
Value softmax(OpCall& c, Softmax kind) {
  const Value& x = c.tensor(0);
  std::vector<bool> red(x.type.rank(), false);
  if (x.type.rank()) red[static_cast<size_t>(OpCall::dim(c.integer(1), x.type.rank()))] = true;
  DType t = floatCompute(c, "softmax");
  Value xf = c.e.convert(x, t);
  Value m = extreme(c.e, xf, red, true, true);
  Value sum = reduce(c.e, x.type, {over(xf, x.type), over(m, x.type)}, red, true, t, t, 0,
                     [&](Scalars& s, std::vector<std::string>& v, const std::string& acc) {
                       return s.op("arith.addf", s.unary("math.exp", s.op("arith.subf", v[0], v[1], t), t), acc, t);
                     });
  return pointwise(c.e, x.type.withDtype(c.out().dtype), {over(xf, x.type), over(m, x.type), over(sum, x.type)}, t,
                   [&](Scalars& s, std::vector<std::string>& v) {
                     std::string shifted = s.op("arith.subf", v[0], v[1], t);
                     if (kind == Softmax::Log) return s.op("arith.subf", shifted, s.unary("math.log", v[2], t), t);
                     std::string y = s.op("arith.divf", s.unary("math.exp", shifted, t), v[2], t);
                     if (kind == Softmax::Plain) return y;
                     // A row that is all -inf (fully masked attention) gives 0, not nan.
                     return s.select(s.cmp("oeq", v[1], s.constant(-INFINITY, t), t), s.constant(0, t), y, t);
                   });
}

// _softmax_backward_data: y * (g - sum(g * y)); _log_softmax_backward_data: g - exp(y) * sum(g).
Value softmaxBackward(OpCall& c, bool log) {
  const Value& g = c.tensor(0);
  const Value& y = c.tensor(1);
  std::vector<bool> red(g.type.rank(), false);
  if (g.type.rank()) red[static_cast<size_t>(OpCall::dim(c.integer(2), g.type.rank()))] = true;
  DType t = computeType(promote(promote(g.type.dtype, y.type.dtype), c.out().dtype));
  if (!isFloat(t)) throw Unsupported("softmax backward of an integer tensor");
  Value sum = reduce(c.e, g.type, {over(g, g.type), over(y, g.type)}, red, true, t, t, 0,
                     [&](Scalars& s, std::vector<std::string>& v, const std::string& acc) {
                       return s.op("arith.addf", log ? v[0] : s.op("arith.mulf", v[0], v[1], t), acc, t);
                     });
  return pointwise(c.e, g.type.withDtype(c.out().dtype), {over(g, g.type), over(y, g.type), over(sum, g.type)}, t,
                   [&](Scalars& s, std::vector<std::string>& v) {
                     if (log)
                       return s.op("arith.subf", v[0], s.op("arith.mulf", s.unary("math.exp", v[1], t), v[2], t), t);
                     return s.op("arith.mulf", v[1], s.op("arith.subf", v[0], v[2], t), t);
                   });
}

// cumsum and cumprod along `dim`: one scf.for nest, `dim` innermost, carrying the result and the
// running value, which restarts at each row's first element: O(n), where a reduction over
// j <= i would be O(n^2) per row. As PyTorch's CPU kernel: the input converted to the result's
// dtype, accumulated in its accumulation type (double for float32, float for float16 and
// bfloat16, int64 for integers), each prefix rounded to the result's dtype where it is stored.
enum class Scan { Sum, Product, LogSumExp };

// out[i] = combine(out[i-1], x[i]) along the dim; logcumsumexp's combine is log(exp(a) + exp(b)),
// written max + log1p(exp(min - max)) so it does not overflow. Two infinities of one sign give
// that infinity (min - max would be NaN), as PyTorch's CPU kernel does.
std::string combine(Scalars& s, Scan kind, const std::string& a, const std::string& b, DType t) {
  if (kind == Scan::Sum) return s.op(isFloat(t) ? "arith.addf" : "arith.addi", a, b, t);
  if (kind == Scan::Product) return s.op(isFloat(t) ? "arith.mulf" : "arith.muli", a, b, t);
  std::string high = s.op("arith.maximumf", a, b, t), low = s.op("arith.minimumf", a, b, t);
  std::string sum =
      s.op("arith.addf", high, s.unary("math.log1p", s.unary("math.exp", s.op("arith.subf", low, high, t), t), t), t);
  std::string infinite = s.cmp("oeq", s.unary("math.absf", low, t), s.constant(HUGE_VAL, t), t);
  std::string same = s.op("arith.andi", s.cmp("oeq", low, high, t), infinite, DType::Bool);
  return s.select(same, high, sum, t);
}

LowerFn scan(Scan kind) {
  return [=](OpCall& c) {
    const Value& x = c.tensor(0);
    const TensorType& out = c.out();
    size_t rank = x.type.rank();
    if (isComplex(out.dtype))
      throw Unsupported("a cumulative sum, product or logsumexp of a complex tensor is not lowered");
    if (rank == 0) return c.e.convert(x, out.dtype);
    size_t dim = static_cast<size_t>(OpCall::dim(c.integer(1), rank));
    DType acc = !isFloat(out.dtype) ? DType::I64 : bitWidth(out.dtype) == 16 ? DType::F32 : DType::F64;
    std::vector<size_t> dims;  // loop k runs over dim dims[k]
    for (size_t d = 0; d < rank; ++d)
      if (d != dim) dims.push_back(d);
    dims.push_back(dim);
    Strings sizes = sizesOf(c.e, x.type), order;
    for (size_t d : dims) order.push_back(sizes[d]);
    double identity = kind == Scan::Product ? 1 : kind == Scan::Sum ? 0 : -HUGE_VAL;
    std::string start = c.e.scalars().constant(identity, acc);
    Strings r = loopNest(c.e, order, {c.e.empty(out), start}, {out.str(), elementType(acc)},
                         [&](const Strings& iv, const Strings& carried) {
                           Strings at(rank);
                           for (size_t k = 0; k < rank; ++k) at[dims[k]] = iv[k];
                           Scalars s = c.e.scalars();
                           std::string prev =
                               s.select(c.e.indexCmp("eq", at[dim], c.e.index(0)), start, carried[1], acc);
                           std::string v =
                               s.cast(s.cast(extract(c.e, x.ssa, x.type, at), x.type.dtype, out.dtype), out.dtype, acc);
                           std::string next = combine(s, kind, prev, v, acc);
                           return Strings{insert(c.e, s.cast(next, acc, out.dtype), carried[0], out, at), next};
                         });
    return Value::tensor(r[0], out);
  };
}

}  // namespace

void addReductionOps(OpTable& t) {
  for (const char* name : {"aten::sum.default", "aten::sum.dim_IntList"}) t[name] = accumulate(false, false);
  for (const char* name : {"aten::mean.default", "aten::mean.dim"}) t[name] = accumulate(true, false);
  for (const char* name : {"aten::prod.default", "aten::prod.dim_int"}) t[name] = accumulate(false, true);
  for (auto [name, max] : {std::pair{"aten::amax.default", true},
                           {"aten::amin.default", false},
                           {"aten::max.default", true},
                           {"aten::min.default", false}})
    t[name] = [max = max](OpCall& c) {
      const Value& x = c.tensor(0);
      return c.e.convert(extreme(c.e, x, reducedDims(c, x.type.rank()), keepdim(c), max), c.out().dtype);
    };
  t["aten::max.dim"] = extremeWithIndex(true, true);
  t["aten::min.dim"] = extremeWithIndex(false, true);
  t["aten::argmax.default"] = extremeWithIndex(true, false);
  t["aten::argmin.default"] = extremeWithIndex(false, false);
  for (const char* name : {"aten::var.correction", "aten::var.dim", "aten::var.default"})
    t[name] = moments(false, false);
  for (const char* name : {"aten::std.correction", "aten::std.dim", "aten::std.default"})
    t[name] = moments(true, false);
  for (const char* name : {"aten::var_mean.correction", "aten::var_mean.dim"}) t[name] = moments(false, true);
  t["aten::linalg_vector_norm.default"] = vectorNorm;
  t["aten::logsumexp.default"] = logSumExp;
  for (const char* name : {"aten::any.default", "aten::any.dim", "aten::any.dims"}) t[name] = anyAll(true);
  for (const char* name : {"aten::all.default", "aten::all.dim", "aten::all.dims"}) t[name] = anyAll(false);
  for (const char* name : {"aten::_softmax.default", "aten::softmax.int"})
    t[name] = [](OpCall& c) { return softmax(c, Softmax::Plain); };
  for (const char* name : {"aten::_log_softmax.default", "aten::log_softmax.int"})
    t[name] = [](OpCall& c) { return softmax(c, Softmax::Log); };
  t["aten::_safe_softmax.default"] = [](OpCall& c) { return softmax(c, Softmax::Safe); };
  t["aten::_softmax_backward_data.default"] = [](OpCall& c) { return softmaxBackward(c, false); };
  t["aten::_log_softmax_backward_data.default"] = [](OpCall& c) { return softmaxBackward(c, true); };
  t["aten::cumsum.default"] = scan(Scan::Sum);
  t["aten::cumprod.default"] = scan(Scan::Product);
  t["aten::logcumsumexp.default"] = scan(Scan::LogSumExp);
}

}  // namespace dynrep::replay::lowering
