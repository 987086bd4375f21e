// grid_sampler_2d: each output position reads the input at the point its grid entry names
// (x, y in [-1, 1]), bilinearly or at the nearest pixel, with PyTorch's padding modes: zeros
// (outside reads 0), border (coordinates clipped), reflection (coordinates mirrored at the
// edges, then clipped). Bicubic is refused by name.
#include "indexing.h"

namespace dynrep::replay::lowering {

namespace {

struct Sampling {
  Emitter& e;
  Scalars s;
  DType t;  // where coordinates are computed
  int64_t padding;
  bool alignCorners;

  std::string c(double v) { return s.constant(v, t); }
  std::string op(const char* name, const std::string& a, const std::string& b) { return s.op(name, a, b, t); }

  // A grid coordinate in [-1, 1] as a position among `size` pixels, in the order PyTorch's CPU
  // kernel computes it (the order decides how a nearest pixel rounds at a half).
  std::string unnormalize(const std::string& coord, const std::string& size) {
    std::string plusOne = op("arith.addf", coord, c(1));
    if (alignCorners) return op("arith.mulf", plusOne, op("arith.divf", op("arith.subf", size, c(1)), c(2)));
    return op("arith.subf", op("arith.mulf", plusOne, op("arith.divf", size, c(2))), c(0.5));
  }
  // maxnumf: a NaN coordinate clips to 0, as PyTorch's CPU kernel clips it
  std::string clip(const std::string& x, const std::string& size) {
    return op("arith.minimumf", op("arith.subf", size, c(1)), op("arith.maxnumf", x, c(0)));
  }
  // x mirrored at low and low + span, as the CPU kernel folds it: |x - low| less whole double
  // spans, then the nearer of it and its mirror (a huge coordinate folds to where float32's
  // rounding leaves it, which the clip then bounds).
  std::string reflect(const std::string& x, const std::string& size) {
    std::string low = c(alignCorners ? 0 : -0.5);
    std::string twice = op("arith.mulf", c(2), alignCorners ? op("arith.subf", size, c(1)) : size);
    std::string in = s.unary("math.absf", op("arith.subf", x, low), t);
    std::string flips = s.unary("math.trunc", op("arith.divf", in, twice), t);
    std::string extra = op("arith.subf", in, op("arith.mulf", flips, twice));
    return op("arith.addf", op("arith.minimumf", extra, op("arith.subf", twice, extra)), low);
  }
  std::string source(const std::string& coord, const std::string& size) {
    std::string x = unnormalize(coord, size);
    if (padding == 1) return clip(x, size);
    if (padding == 2) return clip(reflect(x, size), size);
    return x;
  }
};

Value gridSampler2d(OpCall& c) {
  const Value &x = c.tensor(0), &grid = c.tensor(1);
  const TensorType& out = c.out();
  int64_t mode = c.integer(2), padding = c.integer(3);
  bool align = c.flag(4);
  if (mode == 2) throw Unsupported("bicubic grid sampling is not lowered");
  if (mode != 0 && mode != 1) throw Unsupported("grid sampling mode " + std::to_string(mode));
  if (x.type.rank() != 4 || !isFloat(x.type.dtype)) throw Unsupported("grid sampling of a non-float or non-4-d input");
  if (x.type.dtype == DType::F16 || x.type.dtype == DType::BF16)  // measured: off by whole pixels near edges
    throw Unsupported("float16/bfloat16 grid sampling is not lowered: PyTorch's CPU kernel rounds its coordinates "
                      "in its own mix of precisions, which this lowering does not reproduce");
  Emitter& e = c.e;
  DType ct = computeType(x.type.dtype);
  std::string h = e.dimSize(x.type, 2), w = e.dimSize(x.type, 3);
  Scalars outside = e.scalars();  // the input's sizes as coordinates, once, outside the loops
  std::string fw = outside.cast(e.fromIndex(w, DType::I64), DType::I64, ct);
  std::string fh = outside.cast(e.fromIndex(h, DType::I64), DType::I64, ct);
  std::string name = e.generic(out, loopDims(4), {}, Strings(4, "parallel"), [&](Strings&) {
    Sampling p{e, e.scalars(), ct, padding, align};
    Scalars& s = p.s;
    std::string n = e.loopIndex(0), ch = e.loopIndex(1), oh = e.loopIndex(2), ow = e.loopIndex(3);
    auto at = [&](int64_t k) {
      return s.cast(extract(e, grid.ssa, grid.type, {n, oh, ow, e.index(k)}), grid.type.dtype, ct);
    };
    std::string ix = p.source(at(0), fw), iy = p.source(at(1), fh);
    // x[n, c, y, x] where (x, y) is inside the input, else 0. Compared as floats, so a NaN or
    // huge coordinate is outside (its bilinear weight still makes the sum NaN, as in PyTorch).
    auto read = [&](const std::string& xf, const std::string& yf) {
      std::string inside =
          s.op("arith.andi", s.op("arith.andi", s.cmp("oge", xf, p.c(0), ct), s.cmp("olt", xf, fw, ct), DType::Bool),
               s.op("arith.andi", s.cmp("oge", yf, p.c(0), ct), s.cmp("olt", yf, fh, ct), DType::Bool), DType::Bool);
      auto index = [&](const std::string& f) {
        return e.toIndex(s.cast(s.select(inside, f, p.c(0), ct), ct, DType::I64));
      };
      std::string v = s.cast(extract(e, x.ssa, x.type, {n, ch, index(yf), index(xf)}), x.type.dtype, ct);
      return s.select(inside, v, s.constant(0, ct), ct);
    };
    if (mode == 1)
      return s.cast(read(s.unary("math.roundeven", ix, ct), s.unary("math.roundeven", iy, ct)), ct, out.dtype);
    std::string x0 = s.unary("math.floor", ix, ct), y0 = s.unary("math.floor", iy, ct);
    std::string x1 = p.op("arith.addf", x0, p.c(1)), y1 = p.op("arith.addf", y0, p.c(1));
    std::string wx = p.op("arith.subf", ix, x0), wy = p.op("arith.subf", iy, y0);
    std::string ux = p.op("arith.subf", p.c(1), wx), uy = p.op("arith.subf", p.c(1), wy);
    auto term = [&](const std::string& v, const std::string& a, const std::string& b) {
      return p.op("arith.mulf", v, p.op("arith.mulf", a, b));
    };
    std::string sum = term(read(x0, y0), ux, uy);
    sum = p.op("arith.addf", sum, term(read(x1, y0), wx, uy));
    sum = p.op("arith.addf", sum, term(read(x0, y1), ux, wy));
    sum = p.op("arith.addf", sum, term(read(x1, y1), wx, wy));
    return s.cast(sum, ct, out.dtype);
  });
  return Value::tensor(name, out);
}

}  // namespace

void addGridSampleOps(OpTable& t) { t["aten::grid_sampler_2d.default"] = gridSampler2d; }

}  // namespace dynrep::replay::lowering
