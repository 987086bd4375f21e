// The FFT operators as direct DFTs: each transformed dim is one linalg.generic that sums over the
// input's positions along it (O(n^2), exact up to rounding), accumulated in complex<f64>; the
// normalization and the conversion to the result's dtype come last. Sizes are read from the
// tensors (tensor.dim) and the operator's own size argument, so dynamic sizes need no symbols.
#include <cmath>

#include "ops.h"

namespace dynrep::replay::lowering {

namespace {

enum class Transform { Forward, Inverse, HermitianToReal };

// The size of each dim of x as an index: a constant, or tensor.dim where dynamic.
Strings sizesOf(Emitter& e, const Value& x) {
  Strings sizes;
  for (size_t d = 0; d < x.type.rank(); ++d) {
    if (x.type.dims[d].isStatic()) {
      sizes.push_back(e.index(x.type.dims[d].size));
      continue;
    }
    sizes.push_back(
        e.assign("dim", "tensor.dim " + x.ssa + ", " + e.index(static_cast<int64_t>(d)) + " : " + x.type.str()));
  }
  return sizes;
}

// A new tensor of type t whose dynamic dims have `sizes`, zero-filled when `zero`.
std::string tensorOf(Emitter& e, const TensorType& t, const Strings& sizes, bool zero) {
  Strings dynamic;
  for (size_t d = 0; d < t.rank(); ++d)
    if (!t.dims[d].isStatic()) dynamic.push_back(sizes[d]);
  std::string empty = e.assign("e", "tensor.empty(" + join(dynamic) + ") : " + t.str());
  if (!zero) return empty;
  std::string c = e.scalars().constant(0, t.dtype);
  return e.assign("f", "linalg.fill ins(" + c + " : " + elementType(t.dtype) + ") outs(" + empty + " : " + t.str() +
                           ") -> " + t.str());
}

// One 1-D DFT over `dim`: out[.. k ..] = sum_j x[.. j ..] exp(±2πi (k j mod n) / n). The angle
// is reduced mod n in integers and computed in f64, so a large k j loses no digits. The
// Hermitian-to-real transform reads bins j <= n/2 of a Hermitian signal: bin j and its mirror
// n - j add up to twice the real part of one, bins 0 and n/2 (n even) count once, and the
// imaginary parts those two would need to be real are ignored, as pocketfft and MKL do.
Value dft(Emitter& e, const Value& x, size_t dim, Transform kind, const std::string& n, const TensorType& out,
          const Strings& outSizes) {
  size_t rank = out.rank();
  Strings inMap = loopDims(rank), iterators(rank, "parallel");
  inMap[dim] = "d" + std::to_string(rank);
  iterators.push_back("reduction");
  std::string nf = e.fromIndex(n, DType::F64);
  double turn = (kind == Transform::Forward ? -2 : 2) * M_PI;
  std::string init = tensorOf(e, out, outSizes, true);
  std::string ssa = e.generic(
      out, loopDims(rank), {{x.ssa, x.type, inMap}}, iterators,
      [&](Strings& a) {
        Scalars s = e.scalars();
        const DType f = DType::F64, z = DType::C128;
        std::string k = e.loopIndex(dim), j = e.loopIndex(rank);
        std::string m = e.indexOp("arith.remui", e.indexOp("arith.muli", k, j), n);
        std::string angle = s.op("arith.divf", s.op("arith.mulf", e.fromIndex(m, f), s.constant(turn, f), f), nf, f);
        std::string cos = s.unary("math.cos", angle, f), sin = s.unary("math.sin", angle, f);
        std::string v = s.cast(a[0], x.type.dtype, z);
        if (kind != Transform::HermitianToReal) {
          std::string w = s.op("complex.create", cos, sin, z);
          return s.op("complex.add", a[1], s.op("complex.mul", v, w, z), z);
        }
        std::string re = s.unary("complex.re", v, z), im = s.unary("complex.im", v, z);
        std::string twice = e.indexOp("arith.addi", j, j);
        std::string once = s.op("arith.ori", e.indexCmp("eq", j, e.index(0)), e.indexCmp("eq", twice, n), DType::Bool);
        std::string weight = s.select(once, s.constant(1, f),
                                      s.select(e.indexCmp("ult", twice, n), s.constant(2, f), s.constant(0, f), f), f);
        std::string term = s.op("arith.subf", s.op("arith.mulf", re, cos, f), s.op("arith.mulf", im, sin, f), f);
        return s.op("arith.addf", a[1], s.op("arith.mulf", weight, term, f), f);
      },
      init);
  return Value::tensor(ssa, out);
}

// x's type with `dtype`, and dim `dim` as the result has it.
TensorType stageType(const TensorType& x, const TensorType& result, size_t dim, DType dtype) {
  TensorType t = x.withDtype(dtype);
  t.dims[dim] = result.dims[dim];
  return t;
}

struct FftCall {
  std::vector<size_t> dims;  // the transformed dims, normalized
  int64_t normalization;     // 0 none, 1 by 1/sqrt(n), 2 by 1/n
};

FftCall parse(OpCall& c) {
  const Value& x = c.tensor(0);
  FftCall f;
  for (int64_t d : c.ints(1)) f.dims.push_back(static_cast<size_t>(OpCall::dim(d, x.type.rank())));
  if (f.dims.empty()) throw Unsupported("an FFT over no dims");
  f.normalization = c.integer(2);
  if (f.normalization < 0 || f.normalization > 2)
    throw Unsupported("FFT normalization mode " + std::to_string(f.normalization));
  return f;
}

// v (complex<f64> or f64) scaled by the normalization over `signal` elements and converted to
// the result's dtype.
Value finish(Emitter& e, const Value& v, const TensorType& out, int64_t normalization, const std::string& signal,
             const Strings& sizes) {
  Scalars s = e.scalars();
  const DType f = DType::F64;
  std::string scale;
  if (normalization != 0) {
    std::string n = e.fromIndex(signal, f);
    scale = s.op("arith.divf", s.constant(1, f), normalization == 1 ? s.unary("math.sqrt", n, f) : n, f);
  }
  std::string init = tensorOf(e, out, sizes, false);
  std::string ssa = e.generic(
      out, loopDims(out.rank()), {{v.ssa, v.type, loopDims(out.rank())}}, Strings(out.rank(), "parallel"),
      [&](Strings& a) {
        Scalars b = e.scalars();
        DType t = v.type.dtype;
        std::string r = a[0];
        if (!scale.empty() && t == f) r = b.op("arith.mulf", r, scale, f);
        if (!scale.empty() && t == DType::C128) {
          std::string re = b.op("arith.mulf", b.unary("complex.re", r, t), scale, f);
          std::string im = b.op("arith.mulf", b.unary("complex.im", r, t), scale, f);
          r = b.op("complex.create", re, im, t);
        }
        return b.cast(r, t, out.dtype);
      },
      init);
  return Value::tensor(ssa, out);
}

// _fft_r2c(self, dim, normalization, onesided): the last listed dim real-to-complex (its first
// n/2 + 1 bins when onesided), then a forward complex transform over the others.
Value r2c(OpCall& c) {
  const Value& x = c.tensor(0);
  if (isComplex(x.type.dtype) || !isFloat(x.type.dtype)) throw Unsupported("_fft_r2c of a non-real-float tensor");
  FftCall f = parse(c);
  Strings sizes = sizesOf(c.e, x);
  size_t last = f.dims.back();
  std::string n = sizes[last], signal = n;
  sizes[last] = c.flag(3) ? c.e.indexOp("arith.addi", c.e.indexOp("arith.divui", n, c.e.index(2)), c.e.index(1)) : n;
  Value v = dft(c.e, x, last, Transform::Forward, n, stageType(x.type, c.out(), last, DType::C128), sizes);
  for (size_t i = 0; i + 1 < f.dims.size(); ++i) {
    v = dft(c.e, v, f.dims[i], Transform::Forward, sizes[f.dims[i]], v.type, sizes);
    signal = c.e.indexOp("arith.muli", signal, sizes[f.dims[i]]);
  }
  return finish(c.e, v, c.out(), f.normalization, signal, sizes);
}

// _fft_c2c(self, dim, normalization, forward): one complex transform per listed dim.
Value c2c(OpCall& c) {
  const Value& x = c.tensor(0);
  if (!isComplex(x.type.dtype)) throw Unsupported("_fft_c2c of a real tensor");
  FftCall f = parse(c);
  Transform kind = c.flag(3) ? Transform::Forward : Transform::Inverse;
  Strings sizes = sizesOf(c.e, x);
  Value v = x;
  std::string signal = c.e.index(1);
  for (size_t d : f.dims) {
    v = dft(c.e, v, d, kind, sizes[d], stageType(v.type, c.out(), d, DType::C128), sizes);
    signal = c.e.indexOp("arith.muli", signal, sizes[d]);
  }
  return finish(c.e, v, c.out(), f.normalization, signal, sizes);
}

// _fft_c2r(self, dim, normalization, last_dim_size): inverse complex transforms over all listed
// dims but the last, then the last one from its bins to last_dim_size real values.
Value c2r(OpCall& c) {
  const Value& x = c.tensor(0);
  if (!isComplex(x.type.dtype)) throw Unsupported("_fft_c2r of a real tensor");
  if (!isFloat(c.out().dtype)) throw Unsupported("_fft_c2r whose result is not a real float");
  FftCall f = parse(c);
  Strings sizes = sizesOf(c.e, x);
  Value v = x;
  std::string signal = c.e.index(1);
  for (size_t i = 0; i + 1 < f.dims.size(); ++i) {
    size_t d = f.dims[i];
    v = dft(c.e, v, d, Transform::Inverse, sizes[d], stageType(v.type, c.out(), d, DType::C128), sizes);
    signal = c.e.indexOp("arith.muli", signal, sizes[d]);
  }
  size_t last = f.dims.back();
  const Value& length = c.arg(3);
  sizes[last] = length.isConst() ? c.e.index(static_cast<int64_t>(length.number))
                                 : c.e.toIndex(c.e.scalars().of(length, DType::I64));
  signal = c.e.indexOp("arith.muli", signal, sizes[last]);
  v = dft(c.e, v, last, Transform::HermitianToReal, sizes[last], stageType(v.type, c.out(), last, DType::F64), sizes);
  return finish(c.e, v, c.out(), f.normalization, signal, sizes);
}

}  // namespace

void addFftOps(OpTable& t) {
  t["aten::_fft_r2c.default"] = r2c;
  t["aten::_fft_c2c.default"] = c2c;
  t["aten::_fft_c2r.default"] = c2r;
}

}  // namespace dynrep::replay::lowering
