// Views, permutations, slices, concatenation and repeats. The graphs are functional (AOTAutograd
// removed mutation), so a view is a value: reshapes become tensor.reshape, permutations and
// broadcasts a linalg.generic with a permuted map, slices tensor.extract_slice.
#include "indexing.h"

namespace dynrep::replay::lowering {

namespace {

// x reshaped to `out` (same elements, row-major), sizes from the IR's output type. The shape
// operand holds i64, not index: IREE lets no tensor of index cross between its dispatches.
Value reshape(Emitter& e, const Value& x, const TensorType& out) {
  if (x.type.dtype == out.dtype && sameShape(x.type, out)) return x;
  std::vector<std::string> sizes;
  for (size_t d = 0; d < out.rank(); ++d) sizes.push_back(e.fromIndex(e.dimSize(out, d)));
  std::string shape = e.fresh("shape");
  std::string shapeType = "tensor<" + std::to_string(out.rank()) + "xi64>";
  e.line(shape + " = tensor.from_elements " + join(sizes) + " : " + shapeType);
  std::string name = e.fresh("r");
  e.line(name + " = tensor.reshape " + x.ssa + "(" + shape + ") : (" + x.type.str() + ", " + shapeType + ") -> " +
         out.str());
  return Value::tensor(name, out);
}

// out[d...] = x[map(d...)], a copy with a permuted or broadcast indexing map.
Value remap(Emitter& e, const Value& x, const TensorType& out, const std::vector<std::string>& map) {
  std::string name =
      e.generic(out, loopDims(out.rank()), {{x.ssa, x.type, map}}, std::vector<std::string>(out.rank(), "parallel"),
                [](std::vector<std::string>& a) { return a[0]; });
  return Value::tensor(name, out);
}

Value permute(Emitter& e, const Value& x, const std::vector<int64_t>& perm, const TensorType& out) {
  std::vector<std::string> map(x.type.rank());
  for (size_t i = 0; i < perm.size(); ++i)
    map[static_cast<size_t>(OpCall::dim(perm[i], x.type.rank()))] = "d" + std::to_string(i);
  return remap(e, x, out, map);
}

// An index value: a constant or arithmetic on an SSA size.
std::string startIndex(Emitter& e, int64_t start, const TensorType& t, size_t d) {
  if (start >= 0 && t.dims[d].isStatic()) return e.index(std::min(start, t.dims[d].size));
  if (start >= 0) {
    std::string v = e.fresh("st");
    e.line(v + " = arith.minsi " + e.index(start) + ", " + e.dimSize(t, d) + " : index");
    return v;
  }
  std::string sum = e.fresh("st");
  e.line(sum + " = arith.addi " + e.dimSize(t, d) + ", " + e.index(start) + " : index");
  std::string v = e.fresh("st");
  e.line(v + " = arith.maxsi " + sum + ", " + e.index(0) + " : index");
  return v;
}

// tensor.extract_slice with per-dim offsets, the result's sizes and strides; `drop` removes
// size-1 dims (select).
Value slice(Emitter& e, const Value& x, const std::vector<std::string>& offsets, const TensorType& out,
            const std::vector<int64_t>& steps, int64_t drop = -1) {
  std::vector<std::string> sizes, strides;
  TensorType result;
  result.dtype = x.type.dtype;
  size_t o = 0;
  for (size_t d = 0; d < x.type.rank(); ++d) {
    if (static_cast<int64_t>(d) == drop) {
      sizes.push_back("1");
    } else {
      const Dim& od = out.dims.at(o++);
      sizes.push_back(od.isStatic() ? std::to_string(od.size) : e.sizeOf(od));
      result.dims.push_back(od);
    }
    strides.push_back(std::to_string(steps[d]));
  }
  std::string name = e.fresh("sl");
  e.line(name + " = tensor.extract_slice " + x.ssa + "[" + join(offsets) + "] [" + join(sizes) + "] [" + join(strides) +
         "] : " + x.type.str() + " to " + result.str());
  return Value::tensor(name, result);
}

Value insert(Emitter& e, const Value& piece, const std::string& dest, const TensorType& destType,
             const std::vector<std::string>& offsets, const std::vector<int64_t>& steps) {
  std::vector<std::string> sizes, strides;
  for (size_t d = 0; d < piece.type.rank(); ++d) {
    sizes.push_back(piece.type.dims[d].isStatic() ? std::to_string(piece.type.dims[d].size) : e.dimSize(piece.type, d));
    strides.push_back(std::to_string(steps[d]));
  }
  std::string name = e.fresh("ins");
  e.line(name + " = tensor.insert_slice " + piece.ssa + " into " + dest + "[" + join(offsets) + "] [" + join(sizes) +
         "] [" + join(strides) + "] : " + piece.type.str() + " into " + destType.str());
  return Value::tensor(name, destType);
}

std::vector<std::string> zeros(Emitter& e, size_t rank) { return std::vector<std::string>(rank, e.index(0)); }

// Pieces of x along `dim`, each as long as its output type says (split, split_with_sizes, chunk).
Value split(OpCall& c, int64_t dimArg) {
  const Value& x = c.tensor(0);
  size_t dim = static_cast<size_t>(OpCall::dim(dimArg, x.type.rank()));
  std::vector<Value> pieces;
  std::string offset = c.e.index(0);
  for (const TensorType& out : c.outs) {
    std::vector<std::string> offsets = zeros(c.e, x.type.rank());
    offsets[dim] = offset;
    pieces.push_back(slice(c.e, x, offsets, out, std::vector<int64_t>(x.type.rank(), 1)));
    std::string next = c.e.fresh("off");
    c.e.line(next + " = arith.addi " + offset + ", " + c.e.dimSize(out, dim) + " : index");
    offset = next;
  }
  return Value::list(pieces);
}

// The lowerings, one per row of kShapeOps below.
Value lowerView(OpCall& c) {
  if (c.tensor(0).type.dtype != c.out().dtype) throw Unsupported("a view that reinterprets the dtype");
  return reshape(c.e, c.tensor(0), c.out());
}

// unfold(x, dim, size, step): dim becomes the windows' starts and a last dim of `size` runs
// inside each window, out[..., i, ..., k] = x[..., i * step + k, ...].
Value lowerUnfold(OpCall& c) {
  const Value& x = c.tensor(0);
  size_t rank = x.type.rank(), out = c.out().rank();
  if (rank == 0) return reshape(c.e, x, c.out());  // a 0-d tensor unfolds to one window of 1
  size_t dim = static_cast<size_t>(OpCall::dim(c.integer(1), rank));
  int64_t step = c.integer(3);
  std::vector<std::string> map = loopDims(rank);
  map[dim] = "d" + std::to_string(dim) + " * " + std::to_string(step) + " + d" + std::to_string(out - 1);
  return remap(c.e, x, c.out(), map);
}

Value lowerPermute(OpCall& c) { return permute(c.e, c.tensor(0), c.ints(1), c.out()); }

Value lowerT(OpCall& c) {
  const Value& x = c.tensor(0);
  if (x.type.rank() < 2) return x;
  return permute(c.e, x, {1, 0}, c.out());
}

Value lowerTranspose(OpCall& c) {
  const Value& x = c.tensor(0);
  size_t r = x.type.rank();
  if (r < 2) return x;
  std::vector<int64_t> perm;
  for (size_t i = 0; i < r; ++i) perm.push_back(static_cast<int64_t>(i));
  std::swap(perm[static_cast<size_t>(OpCall::dim(c.integer(1), r))],
            perm[static_cast<size_t>(OpCall::dim(c.integer(2), r))]);
  return permute(c.e, x, perm, c.out());
}

Value lowerExpand(OpCall& c) { return remap(c.e, c.tensor(0), c.out(), broadcastMap(c.tensor(0).type, c.out())); }

Value lowerSlice(OpCall& c) {
  const Value& x = c.tensor(0);
  size_t dim = static_cast<size_t>(OpCall::dim(c.integer(1), x.type.rank()));
  int64_t start = c.none(2) ? 0 : c.integer(2), step = c.none(4) ? 1 : c.integer(4);
  std::vector<std::string> offsets = zeros(c.e, x.type.rank());
  offsets[dim] = startIndex(c.e, start, x.type, dim);
  std::vector<int64_t> steps(x.type.rank(), 1);
  steps[dim] = step;
  return slice(c.e, x, offsets, c.out(), steps);
}

Value lowerSelect(OpCall& c) {
  const Value& x = c.tensor(0);
  size_t dim = static_cast<size_t>(OpCall::dim(c.integer(1), x.type.rank()));
  std::vector<std::string> offsets = zeros(c.e, x.type.rank());
  offsets[dim] = startIndex(c.e, c.integer(2), x.type, dim);
  return slice(c.e, x, offsets, c.out(), std::vector<int64_t>(x.type.rank(), 1), static_cast<int64_t>(dim));
}

Value lowerSplit(OpCall& c) { return split(c, c.integer(2)); }

Value lowerUnbind(OpCall& c) {
  const Value& x = c.tensor(0);
  size_t dim = static_cast<size_t>(OpCall::dim(c.integer(1), x.type.rank()));
  std::vector<Value> pieces;
  for (size_t i = 0; i < c.outs.size(); ++i) {
    std::vector<std::string> offsets = zeros(c.e, x.type.rank());
    offsets[dim] = c.e.index(static_cast<int64_t>(i));
    pieces.push_back(
        slice(c.e, x, offsets, c.outs[i], std::vector<int64_t>(x.type.rank(), 1), static_cast<int64_t>(dim)));
  }
  return Value::list(pieces);
}

Value lowerCat(OpCall& c) {
  const TensorType& out = c.out();
  size_t dim = static_cast<size_t>(OpCall::dim(c.integer(1), out.rank()));
  std::string dest = c.e.empty(out);
  Value acc = Value::tensor(dest, out);
  std::string offset = c.e.index(0);
  for (const Value& piece : c.arg(0).items) {
    if (!piece.isTensor()) throw Unsupported("cat of a non-tensor");
    if (piece.type.rank() != out.rank()) continue;  // PyTorch skips legacy empty 1-d pieces
    Value p = c.e.convert(piece, out.dtype);
    std::vector<std::string> offsets = zeros(c.e, out.rank());
    offsets[dim] = offset;
    acc = insert(c.e, p, acc.ssa, out, offsets, std::vector<int64_t>(out.rank(), 1));
    std::string next = c.e.fresh("off");
    c.e.line(next + " = arith.addi " + offset + ", " + c.e.dimSize(p.type, dim) + " : index");
    offset = next;
  }
  return acc;
}

// repeat(self, repeats): the result (as many dims as repeats; the extra ones lead) reads self
// at its index mod self's size along each dim: an affine `mod` where every size is static and
// nonzero, else a tensor.extract at remainders of the run-time sizes.
Value lowerRepeat(OpCall& c) {
  const Value& x = c.tensor(0);
  const TensorType& out = c.out();
  size_t r = x.type.rank();
  if (out.rank() < r) throw Unsupported("repeat with fewer repeats than dims");
  size_t lead = out.rank() - r;
  bool known = true;
  Strings map;
  for (size_t d = 0; d < r; ++d) {
    const Dim &in = x.type.dims[d], &o = out.dims[lead + d];
    std::string i = "d" + std::to_string(lead + d);
    known = known && in.isStatic() && in.size > 0;
    map.push_back(in.size == 1 ? "0" : o.isStatic() && o.size == in.size ? i : i + " mod " + std::to_string(in.size));
  }
  if (known) return remap(c.e, x, out, map);
  Strings sizes = sizesOf(c.e, x.type);
  std::string name = c.e.generic(out, loopDims(out.rank()), {}, Strings(out.rank(), "parallel"), [&](Strings&) {
    Strings at;
    for (size_t d = 0; d < r; ++d) at.push_back(c.e.indexOp("arith.remui", c.e.loopIndex(lead + d), sizes[d]));
    return c.e.scalars().cast(extract(c.e, x.ssa, x.type, at), x.type.dtype, out.dtype);
  });
  return Value::tensor(name, out);
}

// flip(self, dims): each element read at size - 1 - i along the flipped dims (an extract at a
// computed index: a reversed affine map cannot use a symbolic size).
Value lowerFlip(OpCall& c) {
  const Value& x = c.tensor(0);
  std::vector<bool> flipped(x.type.rank(), false);
  for (int64_t d : c.ints(1)) flipped[static_cast<size_t>(OpCall::dim(d, x.type.rank()))] = true;
  const TensorType& out = c.out();
  std::string r = c.e.generic(out, loopDims(out.rank()), {}, Strings(out.rank(), "parallel"), [&](Strings&) {
    Strings at;
    for (size_t d = 0; d < out.rank(); ++d) {
      std::string i = c.e.loopIndex(d);
      at.push_back(flipped[d]
                       ? c.e.indexOp("arith.subi", c.e.indexOp("arith.subi", c.e.dimSize(x.type, d), c.e.index(1)), i)
                       : i);
    }
    return c.e.scalars().cast(extract(c.e, x.ssa, x.type, at), x.type.dtype, out.dtype);
  });
  return Value::tensor(r, out);
}

// diagonal(self, offset, dim1, dim2): the other dims, then the diagonal's position k, read at
// dim1 = k + max(0, -offset), dim2 = k + max(0, offset).
Value lowerDiagonal(OpCall& c) {
  const Value& x = c.tensor(0);
  size_t r = x.type.rank();
  int64_t offset = c.none(1) ? 0 : c.integer(1);
  size_t d1 = static_cast<size_t>(OpCall::dim(c.none(2) ? 0 : c.integer(2), r)),
         d2 = static_cast<size_t>(OpCall::dim(c.none(3) ? 1 : c.integer(3), r));
  if (d1 == d2) throw Unsupported("diagonal of a dim with itself");
  const TensorType& out = c.out();
  std::string r1 = c.e.generic(out, loopDims(out.rank()), {}, Strings(out.rank(), "parallel"), [&](Strings&) {
    std::string k = c.e.loopIndex(out.rank() - 1);
    Strings at(r);
    size_t o = 0;
    for (size_t d = 0; d < r; ++d)
      if (d != d1 && d != d2) at[d] = c.e.loopIndex(o++);
    at[d1] = c.e.indexOp("arith.addi", k, c.e.index(std::max<int64_t>(0, -offset)));
    at[d2] = c.e.indexOp("arith.addi", k, c.e.index(std::max<int64_t>(0, offset)));
    return c.e.scalars().cast(extract(c.e, x.ssa, x.type, at), x.type.dtype, out.dtype);
  });
  return Value::tensor(r1, out);
}

// self with src written at a slice's (or a select's) place: what functionalization makes of
// an in-place write into a view.
Value lowerSliceScatter(OpCall& c) {
  const Value& self = c.tensor(0);
  size_t dim = static_cast<size_t>(OpCall::dim(c.integer(2), self.type.rank()));
  std::vector<std::string> offsets = zeros(c.e, self.type.rank());
  offsets[dim] = startIndex(c.e, c.none(3) ? 0 : c.integer(3), self.type, dim);
  std::vector<int64_t> steps(self.type.rank(), 1);
  steps[dim] = c.none(5) ? 1 : c.integer(5);
  return insert(c.e, c.e.convert(c.tensor(1), self.type.dtype), self.ssa, self.type, offsets, steps);
}

Value lowerSelectScatter(OpCall& c) {
  const Value& self = c.tensor(0);
  size_t dim = static_cast<size_t>(OpCall::dim(c.integer(2), self.type.rank()));
  TensorType unsq = c.tensor(1).type;
  unsq.dims.insert(unsq.dims.begin() + static_cast<long>(dim), Dim{1, ""});
  Value piece = reshape(c.e, c.e.convert(c.tensor(1), self.type.dtype), unsq.withDtype(self.type.dtype));
  std::vector<std::string> offsets = zeros(c.e, self.type.rank());
  offsets[dim] = startIndex(c.e, c.integer(3), self.type, dim);
  return insert(c.e, piece, self.ssa, self.type, offsets, std::vector<int64_t>(self.type.rank(), 1));
}

// The gradient of a slice: zeros with the gradient written at the slice's place.
Value lowerSliceBackward(OpCall& c) {
  const Value& g = c.tensor(0);
  const TensorType& out = c.out();
  size_t dim = static_cast<size_t>(OpCall::dim(c.integer(2), out.rank()));
  std::vector<std::string> offsets = zeros(c.e, out.rank());
  offsets[dim] = startIndex(c.e, c.integer(3), out, dim);
  std::vector<int64_t> steps(out.rank(), 1);
  steps[dim] = c.integer(5);
  return insert(c.e, g, c.e.fill(out, 0), out, offsets, steps);
}

Value lowerSelectBackward(OpCall& c) {
  const Value& g = c.tensor(0);
  const TensorType& out = c.out();
  size_t dim = static_cast<size_t>(OpCall::dim(c.integer(2), out.rank()));
  TensorType unsq = out;
  unsq.dims[dim] = Dim{1, ""};
  Value g1 = reshape(c.e, g, unsq);
  std::vector<std::string> offsets = zeros(c.e, out.rank());
  offsets[dim] = startIndex(c.e, c.integer(3), out, dim);
  return insert(c.e, g1, c.e.fill(out, 0), out, offsets, std::vector<int64_t>(out.rank(), 1));
}

// A constant pad: the output filled with the value, the input written at its low offsets
// (tensor.pad's bufferization mishandles dynamic sizes in MLIR 19).
Value lowerConstantPad(OpCall& c) {
  const Value& x = c.tensor(0);
  const Value& pad = c.arg(1);
  if (pad.kind != Value::Kind::List) throw Unsupported("constant_pad_nd's pad is not a list");
  double value = c.none(2) ? 0 : c.real(2);
  size_t r = x.type.rank();
  std::vector<std::string> offsets = zeros(c.e, r);
  for (size_t i = 0; i + 1 < pad.items.size() && i / 2 < r; i += 2) {
    const Value &low = pad.items[i], &high = pad.items[i + 1];
    for (const Value* p : {&low, &high}) {
      if (p->isConst() && p->number < 0) throw Unsupported("negative padding (a crop) is not lowered");
      if (!p->isConst() && p->kind != Value::Kind::Int) throw Unsupported("a pad that is not an integer");
    }
    // a pad computed from sizes (fft's n - size) is asserted not to be a crop
    for (const Value* p : {&low, &high})
      if (!p->isConst())
        c.e.line("cf.assert " + c.e.indexCmp("sge", c.e.toIndex(p->ssa), c.e.index(0)) + ", " +
                 mlirString("constant_pad_nd: a pad computed from sizes is negative (a crop), which is not lowered"));
    offsets[r - 1 - i / 2] = low.isConst() ? c.e.index(static_cast<int64_t>(low.number)) : c.e.toIndex(low.ssa);
  }
  return insert(c.e, x, c.e.fill(c.out(), value), c.out(), offsets, std::vector<int64_t>(r, 1));
}

Value lowerTriangle(OpCall& c) {
  const Value& x = c.tensor(0);
  int64_t diagonal = c.integer(1);
  bool lower = c.target == "aten::tril.default";
  size_t r = x.type.rank();
  std::string name = c.e.generic(c.out(), loopDims(r), {{x.ssa, x.type, loopDims(r)}},
                                 std::vector<std::string>(r, "parallel"), [&](std::vector<std::string>& a) {
                                   Scalars s = c.e.scalars();
                                   std::string diff =
                                       c.e.indexOp("arith.subi", c.e.loopIndex(r - 1), c.e.loopIndex(r - 2));
                                   std::string keep = c.e.indexCmp(lower ? "sle" : "sge", diff, c.e.index(diagonal));
                                   return s.select(keep, a[0], s.constant(0, x.type.dtype), x.type.dtype);
                                 });
  return Value::tensor(name, c.out());
}

const OpRow kShapeOps[] = {
    {"aten::view.default", lowerView},
    {"aten::_unsafe_view.default", lowerView},
    {"aten::reshape.default", lowerView},
    {"aten::unsqueeze.default", lowerView},
    {"aten::squeeze.dim", lowerView},
    {"aten::squeeze.dims", lowerView},
    {"aten::squeeze.default", lowerView},
    {"aten::flatten.using_ints", lowerView},
    {"aten::view.dtype", lowerView},
    {"aten::_reshape_alias.default", lowerView},
    {"aten::unflatten.int", lowerView},
    // prims' reshapes (graphs that call them directly, or decompositions that stop at them):
    // each keeps the row-major order of the elements, so each is a reshape to its output.
    {"prims::collapse.default", lowerView},
    {"prims::collapse_view.default", lowerView},
    {"prims::split_dim.default", lowerView},
    {"prims::reshape.default", lowerView},
    {"prims::squeeze.default", lowerView},
    {"prims::view_of.default", lowerView},
    {"aten::unfold.default", lowerUnfold},
    {"aten::permute.default", lowerPermute},
    {"aten::t.default", lowerT},
    {"aten::transpose.int", lowerTranspose},
    {"aten::swapaxes.default", lowerTranspose},
    {"aten::expand.default", lowerExpand},
    {"aten::broadcast_to.default", lowerExpand},
    {"aten::expand_as.default", lowerExpand},
    {"aten::slice.Tensor", lowerSlice},
    {"aten::select.int", lowerSelect},
    {"aten::split.Tensor", lowerSplit},
    {"aten::split_with_sizes.default", lowerSplit},
    {"aten::chunk.default", lowerSplit},
    {"aten::unbind.int", lowerUnbind},
    {"aten::cat.default", lowerCat},
    {"aten::repeat.default", lowerRepeat},
    {"aten::flip.default", lowerFlip},
    {"aten::diagonal.default", lowerDiagonal},
    {"aten::diagonal_copy.default", lowerDiagonal},
    {"aten::slice_scatter.default", lowerSliceScatter},
    {"aten::select_scatter.default", lowerSelectScatter},
    {"aten::slice_backward.default", lowerSliceBackward},
    {"aten::select_backward.default", lowerSelectBackward},
    {"aten::constant_pad_nd.default", lowerConstantPad},
    {"aten::tril.default", lowerTriangle},
    {"aten::triu.default", lowerTriangle},
};

}  // namespace

void addShapeOps(OpTable& t) { addRows(t, kShapeOps); }

}  // namespace dynrep::replay::lowering
