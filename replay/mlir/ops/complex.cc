// Complex tensors (complex64 as complex<f32>, complex128 as complex<f64>): their parts (real,
// imag, view_as_real, view_as_complex), abs, conj, and the list of operators whose lowerings
// are written for complex values too. Any other operator meeting a complex tensor is refused:
// most spell arith ops by isFloat, and a complex value would be read as something else.
#include <set>

#include "ops.h"

namespace dynrep::replay::lowering {

namespace {

// out[...] = f(x[...]) for a complex x and a real out (its parts' dtype).
Value ofParts(OpCall& c, const std::function<std::string(Scalars&, const std::string&, DType)>& f) {
  const Value& x = c.tensor(0);
  const TensorType& out = c.out();
  DType t = x.type.dtype;
  std::string ssa = c.e.generic(out, loopDims(out.rank()), {{x.ssa, x.type, broadcastMap(x.type, out)}},
                                Strings(out.rank(), "parallel"), [&](Strings& a) {
                                  Scalars s = c.e.scalars();
                                  return s.cast(f(s, a[0], t), componentType(t), out.dtype);
                                });
  return Value::tensor(ssa, out);
}

// real, imag: a part of a complex tensor; of a real tensor, real is the tensor itself.
LowerFn part(const char* op) {
  return [op](OpCall& c) {
    const Value& x = c.tensor(0);
    if (!isComplex(x.type.dtype)) {
      if (std::string(op) == "complex.im") throw Unsupported("imag of a real tensor (PyTorch rejects it)");
      return x;
    }
    return ofParts(c, [op](Scalars& s, const std::string& z, DType t) { return s.unary(op, z, t); });
  };
}

// view_as_real: [..., 2] of real and imaginary parts, a copy (values matter here, not aliasing).
Value viewAsReal(OpCall& c) {
  const Value& x = c.tensor(0);
  if (!isComplex(x.type.dtype)) throw Unsupported("view_as_real of a real tensor (PyTorch rejects it)");
  const TensorType& out = c.out();
  size_t rank = out.rank();
  std::string ssa = c.e.generic(out, loopDims(rank), {{x.ssa, x.type, loopDims(rank - 1)}}, Strings(rank, "parallel"),
                                [&](Strings& a) {
                                  Scalars s = c.e.scalars();
                                  DType t = x.type.dtype, part = componentType(t);
                                  std::string re = s.unary("complex.re", a[0], t), im = s.unary("complex.im", a[0], t);
                                  std::string first = c.e.indexCmp("eq", c.e.loopIndex(rank - 1), c.e.index(0));
                                  return s.cast(s.select(first, re, im, part), part, out.dtype);
                                });
  return Value::tensor(ssa, out);
}

// view_as_complex: x[..., 0] + i x[..., 1], x's last dim of size 2 read twice.
Value viewAsComplex(OpCall& c) {
  const Value& x = c.tensor(0);
  const TensorType& out = c.out();
  if (!isComplex(out.dtype) || x.type.rank() == 0) throw Unsupported("view_as_complex whose result is not complex");
  size_t rank = out.rank();
  Strings re = loopDims(rank), im = loopDims(rank);
  re.push_back("0"), im.push_back("1");
  std::string ssa = c.e.generic(out, loopDims(rank), {{x.ssa, x.type, re}, {x.ssa, x.type, im}},
                                Strings(rank, "parallel"), [&](Strings& a) {
                                  Scalars s = c.e.scalars();
                                  DType part = componentType(out.dtype);
                                  std::string name = c.e.fresh("cx");
                                  c.e.line(name + " = complex.create " + s.cast(a[0], x.type.dtype, part) + ", " +
                                           s.cast(a[1], x.type.dtype, part) + " : " + elementType(out.dtype));
                                  return name;
                                });
  return Value::tensor(ssa, out);
}

// x with `op` applied where x is complex, x itself where it is real (conj of a real tensor).
LowerFn complexOnly(const char* op) {
  return [op](OpCall& c) {
    const Value& x = c.tensor(0);
    if (!isComplex(x.type.dtype)) return c.e.convert(x, c.out().dtype);
    return c.e.elementwise(c.out(), {x}, x.type.dtype,
                           [&](Scalars& s, Strings& v) { return s.unary(op, v[0], x.type.dtype); });
  };
}

}  // namespace

bool loweredForComplex(const std::string& target) {
  static const std::set<std::string> kLowered = {
      // elementwise (ops/elementwise.cc picks the complex dialect's ops) and copies
      "aten::add.Tensor", "aten::add.Scalar", "aten::sub.Tensor", "aten::sub.Scalar", "aten::rsub.Tensor",
      "aten::rsub.Scalar", "aten::mul.Tensor", "aten::mul.Scalar", "aten::div.Tensor", "aten::div.Scalar",
      "aten::neg.default", "aten::abs.default", "aten::exp.default", "aten::eq.Tensor", "aten::eq.Scalar",
      "aten::ne.Tensor", "aten::ne.Scalar", "aten::where.self", "aten::where.ScalarSelf", "aten::where.ScalarOther",
      "aten::clone.default", "aten::_to_copy.default", "aten::lift_fresh_copy.default", "aten::detach.default",
      "aten::alias.default", "aten::contiguous.default", "aten::_copy.default", "prims::convert_element_type.default",
      "aten::to.dtype", "aten::type_as.default", "aten::positive.default", "aten::copy_.default", "aten::copy.default",
      // this file
      "aten::real.default", "aten::imag.default", "aten::view_as_real.default", "aten::view_as_complex.default",
      "aten::_conj.default", "aten::conj.default", "aten::conj_physical.default", "aten::resolve_conj.default",
      "aten::resolve_neg.default",
      // ops/fft.cc
      "aten::_fft_r2c.default", "aten::_fft_c2c.default", "aten::_fft_c2r.default",
      // reductions accumulating in the complex dialect
      "aten::sum.default", "aten::sum.dim_IntList", "aten::mean.default", "aten::mean.dim",
      // shapes and fills: they move or fill elements of any type
      "aten::view.default", "aten::_unsafe_view.default", "aten::reshape.default", "aten::unsqueeze.default",
      "aten::squeeze.dim", "aten::squeeze.dims", "aten::squeeze.default", "aten::flatten.using_ints",
      "aten::view.dtype", "aten::_reshape_alias.default", "aten::unflatten.int", "aten::permute.default",
      "aten::t.default", "aten::transpose.int", "aten::swapaxes.default", "aten::expand.default",
      "aten::broadcast_to.default", "aten::expand_as.default", "aten::slice.Tensor", "aten::select.int",
      "aten::split.Tensor", "aten::split_with_sizes.default", "aten::chunk.default", "aten::unbind.int",
      "aten::cat.default", "aten::repeat.default", "aten::flip.default", "aten::constant_pad_nd.default",
      "aten::zeros.default", "aten::zeros_like.default", "aten::new_zeros.default", "aten::ones.default",
      "aten::ones_like.default", "aten::new_ones.default", "aten::empty.memory_format", "aten::empty_like.default",
      "aten::new_empty.default", "aten::full.default", "aten::full_like.default", "aten::new_full.default",
      "aten::fill.Scalar", "aten::scalar_tensor.default", "aten::sym_size.int", "aten::sym_numel.default"};
  return kLowered.count(target) > 0;
}

void addComplexOps(OpTable& t) {
  LowerFn realAbs = t.at("aten::abs.default");
  t["aten::abs.default"] = [realAbs](OpCall& c) {
    if (!isComplex(c.tensor(0).type.dtype)) return realAbs(c);
    return ofParts(c, [](Scalars& s, const std::string& z, DType d) { return s.unary("complex.abs", z, d); });
  };
  LowerFn realExp = t.at("aten::exp.default");
  t["aten::exp.default"] = [realExp](OpCall& c) {
    if (!isComplex(c.out().dtype)) return realExp(c);
    return complexOnly("complex.exp")(c);
  };
  t["aten::real.default"] = part("complex.re");
  t["aten::imag.default"] = part("complex.im");
  t["aten::view_as_real.default"] = viewAsReal;
  t["aten::view_as_complex.default"] = viewAsComplex;
  // _conj is a lazy view in PyTorch; here every value is materialized, so it conjugates.
  for (const char* name : {"aten::_conj.default", "aten::conj.default", "aten::conj_physical.default"})
    t[name] = complexOnly("complex.conj");
  // The conjugate and negative bits are resolved already: values are always materialized.
  for (const char* name : {"aten::resolve_conj.default", "aten::resolve_neg.default"})
    t[name] = [](OpCall& c) { return c.tensor(0); };
}

}  // namespace dynrep::replay::lowering
