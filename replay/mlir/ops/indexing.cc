// Indexing. Gathers (embedding, gather, index, index_select, as_strided) are linalg.generics
// over the result that tensor.extract the source at computed coordinates. Scatters (index_put,
// scatter, index_add, embedding_dense_backward) are scf.for nests threading one tensor through
// tensor.insert, which one-shot-bufferize updates in place: the cost is the number of elements
// written, not vocabulary x indices (masked_scatter's nest also carries how many elements it
// has taken). sort and topk place each element at its rank in its row. Index values are wrapped
// where PyTorch accepts negative ones and clamped, so an index PyTorch would have rejected
// cannot write out of bounds. Losses are in losses.cc, attention in attention.cc.
#include <algorithm>

#include "indexing.h"
#include "reduction.h"

namespace dynrep::replay::lowering {

std::string extract(Emitter& e, const std::string& t, const TensorType& type, const Strings& at) {
  return e.assign("x", "tensor.extract " + t + "[" + join(at) + "] : " + type.str());
}
std::string insert(Emitter& e, const std::string& v, const std::string& t, const TensorType& type, const Strings& at) {
  return e.assign("in", "tensor.insert " + v + " into " + t + "[" + join(at) + "] : " + type.str());
}
Strings sizesOf(Emitter& e, const TensorType& t) {
  Strings s;
  for (size_t d = 0; d < t.rank(); ++d) s.push_back(e.dimSize(t, d));
  return s;
}
void requireIntegerIndex(const Value& t) {
  if (t.type.dtype == DType::Bool) throw Unsupported("a bool tensor used as an index");
  if (isFloat(t.type.dtype)) throw Unsupported("float tensors used as indices");
}

// An element of an index tensor as an in-bounds index into a dim of `size` (uint8 zero-extended:
// it is never negative).
std::string boundIndex(Emitter& e, const std::string& v, DType t, const std::string& size, bool wrap) {
  std::string cast = isUnsigned(t) ? "arith.index_castui " : "arith.index_cast ";
  std::string i = e.assign("ic", cast + v + " : " + elementType(t) + " to index"), zero = e.index(0);
  if (wrap && !isUnsigned(t)) {
    std::string neg = e.indexCmp("slt", i, zero);
    i = e.assign("ws", "arith.select " + neg + ", " + e.indexOp("arith.addi", i, size) + ", " + i + " : index");
  }
  return e.indexOp("arith.minsi", e.indexOp("arith.maxsi", i, zero), e.indexOp("arith.subi", size, e.index(1)));
}

static Strings nest(Emitter& e, const Strings& sizes, const Strings& init, const Strings& types, const LoopBody& body,
                    Strings ivs) {
  if (ivs.size() == sizes.size()) return body(ivs, init);
  std::string name = e.fresh("for"), iv = e.fresh("iv"), lo = e.index(0), step = e.index(1);
  Strings carried, args, results;
  for (size_t k = 0; k < init.size(); ++k) {
    carried.push_back(e.fresh("acc"));
    args.push_back(carried.back() + " = " + init[k]);
    results.push_back(init.size() == 1 ? name : name + "#" + std::to_string(k));
  }
  std::string arity = init.size() == 1 ? "" : ":" + std::to_string(init.size());
  e.open(name + arity + " = scf.for " + iv + " = " + lo + " to " + sizes[ivs.size()] + " step " + step + " iter_args(" +
         join(args) + ") -> (" + join(types) + ") {");
  ivs.push_back(iv);
  e.line("scf.yield " + join(nest(e, sizes, carried, types, body, ivs)) + " : " + join(types));
  e.close("}");
  return results;
}

Strings loopNest(Emitter& e, const Strings& sizes, const Strings& init, const Strings& types, const LoopBody& body) {
  return nest(e, sizes, init, types, body, {});
}

namespace {

// Nested scf.for loops over `sizes` threading the tensor `init` of type t; body gets the
// induction variables and the current tensor and returns the next one.
using TensorLoopBody = std::function<std::string(const Strings&, const std::string&)>;
std::string loops(Emitter& e, const Strings& sizes, const std::string& init, const TensorType& t,
                  const TensorLoopBody& body) {
  return loopNest(e, sizes, {init}, {t.str()},
                  [&](const Strings& iv, const Strings& acc) { return Strings{body(iv, acc[0])}; })[0];
}

// out = self, then for each position p of a tensor of `sizes`: out[target(p)] = value(p), or
// combined with the old element by `reduce` ("add", "multiply"), in the compute type.
using Coordinates = std::function<Strings(const Strings&)>;
using Element = std::function<std::string(Scalars&, const Strings&, DType)>;
// The op combining an old element with a scattered one: add/sum, multiply/prod, amax, amin.
std::string combineOp(const std::string& reduce, DType ct) {
  bool add = reduce == "add" || reduce == "sum", mul = reduce == "multiply" || reduce == "prod";
  if (ct == DType::Bool) return add || reduce == "amax" ? "arith.ori" : "arith.andi";  // bool: max is or, min is and
  if (isFloat(ct))
    return add ? "arith.addf" : mul ? "arith.mulf" : reduce == "amax" ? "arith.maximumf" : "arith.minimumf";
  if (isUnsigned(ct)) return add ? "arith.addi" : mul ? "arith.muli" : reduce == "amax" ? "arith.maxui" : "arith.minui";
  return add ? "arith.addi" : mul ? "arith.muli" : reduce == "amax" ? "arith.maxsi" : "arith.minsi";
}

Value scatterLoop(OpCall& c, const Strings& sizes, const Coordinates& target, const Element& value,
                  const std::string& reduce, const TensorType& out, const std::string& init) {
  DType ct = computeType(out.dtype);
  std::string r = loops(c.e, sizes, init, out, [&](const Strings& iv, const std::string& acc) {
    Scalars s = c.e.scalars();
    Strings at = target(iv);
    std::string v = value(s, iv, ct);
    if (!reduce.empty()) v = s.op(combineOp(reduce, ct), s.cast(extract(c.e, acc, out, at), out.dtype, ct), v, ct);
    return insert(c.e, s.cast(v, ct, out.dtype), acc, out, at);
  });
  return Value::tensor(r, out);
}
Value scatterLoop(OpCall& c, const Strings& sizes, const Coordinates& target, const Element& value,
                  const std::string& reduce) {
  return scatterLoop(c, sizes, target, value, reduce, c.out(), c.e.convert(c.tensor(0), c.out().dtype).ssa);
}

// out[i] = self[i with dim replaced by index[indexAt(i)]]: gather and index_select.
Value gatherAlong(OpCall& c, const Value& index, size_t dim, const Strings& indexMap) {
  const Value& self = c.tensor(0);
  const TensorType& out = c.out();
  requireIntegerIndex(index);
  // A 0-d input has one element, read whatever the index (PyTorch accepts only 0 or -1); an
  // empty index may have any rank, and an empty result reads nothing.
  if (std::any_of(out.dims.begin(), out.dims.end(), [](const Dim& d) { return d.size == 0; }))
    return Value::tensor(c.e.empty(out), out);
  if (self.type.rank() != out.rank() && self.type.rank() != 0)
    throw Unsupported("an index and an input of different ranks");
  Strings sizes = sizesOf(c.e, self.type);
  std::string name = c.e.generic(
      out, loopDims(out.rank()), {{index.ssa, index.type, indexMap}}, Strings(out.rank(), "parallel"), [&](Strings& a) {
        Strings at;
        for (size_t d = 0; d < self.type.rank(); ++d)
          at.push_back(d == dim ? boundIndex(c.e, a[0], index.type.dtype, sizes[d], true) : c.e.loopIndex(d));
        return c.e.scalars().cast(extract(c.e, self.ssa, self.type, at), self.type.dtype, out.dtype);
      });
  return Value::tensor(name, out);
}

// ---- advanced indexing -----------------------------------------------------------------------

// self[indices] as PyTorch lays it out: the index tensors broadcast to a shape B, which takes
// the place of the indexed dims when they are consecutive and goes first otherwise.
struct IndexPlan {
  std::vector<const Value*> at;  // per self dim: its index tensor, or null (a full slice)
  size_t bRank = 0, bStart = 0;
  std::vector<int64_t> slots;  // result dim -> self dim (>= 0), or -1 - position in B
};

IndexPlan plan(const Value& self, const Value& list) {
  if (list.kind != Value::Kind::List || list.items.size() > self.type.rank())
    throw Unsupported("indices are not a list of at most rank entries");
  IndexPlan p;
  p.at.assign(self.type.rank(), nullptr);
  int64_t first = -1, last = -1;
  for (size_t i = 0; i < list.items.size(); ++i) {
    if (list.items[i].isNone()) continue;
    if (!list.items[i].isTensor()) throw Unsupported("an index that is not a tensor");
    requireIntegerIndex(list.items[i]);
    p.at[i] = &list.items[i];
    p.bRank = std::max(p.bRank, list.items[i].type.rank());
    if (first < 0) first = static_cast<int64_t>(i);
    last = static_cast<int64_t>(i);
  }
  if (first < 0) throw Unsupported("indexing with no index tensor");
  bool adjacent = true;
  for (int64_t i = first; i <= last; ++i) adjacent = adjacent && p.at[static_cast<size_t>(i)];
  std::vector<int64_t> b;
  for (size_t j = 0; j < p.bRank; ++j) b.push_back(-1 - static_cast<int64_t>(j));
  if (!adjacent) p.slots = b;
  for (size_t d = 0; d < self.type.rank(); ++d) {
    if (adjacent && static_cast<int64_t>(d) == first)
      p.bStart = p.slots.size(), p.slots.insert(p.slots.end(), b.begin(), b.end());
    if (!p.at[d]) p.slots.push_back(static_cast<int64_t>(d));
  }
  return p;
}

// The size of each result dim (the loops of index_put): B's from the first index tensor whose
// dim there is not 1.
Strings resultSizes(Emitter& e, const Value& self, const IndexPlan& p) {
  Strings sizes;
  for (int64_t slot : p.slots) {
    if (slot >= 0) {
      sizes.push_back(e.dimSize(self.type, static_cast<size_t>(slot)));
      continue;
    }
    size_t j = static_cast<size_t>(-1 - slot);
    std::string size = e.index(1);
    for (const Value* t : p.at) {
      if (!t || t->type.rank() + j < p.bRank) continue;
      size_t m = j + t->type.rank() - p.bRank;
      if (t->type.dims[m].isStatic() && t->type.dims[m].size == 1) continue;
      size = e.dimSize(t->type, m);
      break;
    }
    sizes.push_back(size);
  }
  return sizes;
}

// Coordinates into self for result coordinates `r`; `selfSizes` are function-level values.
Strings selfCoordinates(Emitter& e, const IndexPlan& p, const Strings& r, const Strings& selfSizes) {
  Strings at(p.at.size());
  for (size_t k = 0; k < p.slots.size(); ++k)
    if (p.slots[k] >= 0) at[static_cast<size_t>(p.slots[k])] = r[k];
  for (size_t d = 0; d < p.at.size(); ++d) {
    const Value* t = p.at[d];
    if (!t) continue;
    Strings ti;
    for (size_t m = 0; m < t->type.rank(); ++m) {
      const Dim& dim = t->type.dims[m];
      ti.push_back(dim.isStatic() && dim.size == 1 ? e.index(0) : r[p.bStart + p.bRank - t->type.rank() + m]);
    }
    at[d] = boundIndex(e, extract(e, t->ssa, t->type, ti), t->type.dtype, selfSizes[d], true);
  }
  return at;
}

Value indexTensor(OpCall& c) {
  const Value& self = c.tensor(0);
  const TensorType& out = c.out();
  Value indices = hasMaskIndex(c.arg(1)) ? expandMaskIndex(c.e, c.arg(1), &out) : c.arg(1);
  IndexPlan p = plan(self, indices);
  if (out.rank() != p.slots.size()) throw Unsupported("the IR's result rank differs from the indexing's");
  Strings selfSizes = sizesOf(c.e, self.type);
  std::string name = c.e.generic(out, loopDims(out.rank()), {}, Strings(out.rank(), "parallel"), [&](Strings&) {
    Strings r;
    for (size_t d = 0; d < out.rank(); ++d) r.push_back(c.e.loopIndex(d));
    std::string v = extract(c.e, self.ssa, self.type, selfCoordinates(c.e, p, r, selfSizes));
    return c.e.scalars().cast(v, self.type.dtype, out.dtype);
  });
  return Value::tensor(name, out);
}

// self with self[indices] = values (+= with accumulate), values broadcast to the indexed shape.
Value indexPut(OpCall& c) {
  const Value& self = c.tensor(0);
  const Value& values = c.tensor(2);
  bool mask = hasMaskIndex(c.arg(1));
  Value indices = mask ? expandMaskIndex(c.e, c.arg(1), nullptr) : c.arg(1);
  IndexPlan p = plan(self, indices);
  Strings selfSizes = sizesOf(c.e, self.type), sizes = resultSizes(c.e, self, p);
  if (values.type.rank() > sizes.size()) throw Unsupported("index_put values of higher rank than the indexed result");
  // A mask's count is known only now: values that PyTorch would reject must not be read past their end.
  for (size_t m = 0; mask && m < values.type.rank(); ++m) {
    if (values.type.dims[m].isStatic() && values.type.dims[m].size == 1) continue;
    std::string ok = c.e.indexCmp("eq", c.e.dimSize(values.type, m), sizes[sizes.size() - values.type.rank() + m]);
    c.e.line("cf.assert " + ok + ", " +
             mlirString("index_put: values dim " + std::to_string(m) + " must match the masked shape"));
  }
  return scatterLoop(
      c, sizes, [&](const Strings& iv) { return selfCoordinates(c.e, p, iv, selfSizes); },
      [&](Scalars& s, const Strings& iv, DType ct) {
        Strings vi;
        for (size_t m = 0; m < values.type.rank(); ++m) {
          const Dim& d = values.type.dims[m];
          vi.push_back(d.isStatic() && d.size == 1 ? c.e.index(0) : iv[sizes.size() - values.type.rank() + m]);
        }
        return s.cast(extract(c.e, values.ssa, values.type, vi), values.type.dtype, ct);
      },
      c.flag(3) ? "add" : "");
}

// scatter(self, dim, index, src | value): out[.. index[p] ..] (=, +=, *=) src[p] for p in index.
Value scatter(OpCall& c, const std::string& reduce) {
  const Value& self = c.tensor(0);
  const Value& index = c.tensor(2);
  const Value& src = c.arg(3);
  requireIntegerIndex(index);
  size_t rank = self.type.rank(), dim = static_cast<size_t>(OpCall::dim(c.integer(1), rank));
  if (index.type.rank() != rank) throw Unsupported("scatter with an index of another rank");
  Strings selfSizes = sizesOf(c.e, self.type);
  std::string scalar = src.isTensor() ? "" : c.e.scalars().of(src, computeType(c.out().dtype));
  return scatterLoop(
      c, sizesOf(c.e, index.type),
      [&](const Strings& iv) {
        Strings at = iv;  // a 0-d self has its one element, whatever the index
        if (rank)
          at[dim] = boundIndex(c.e, extract(c.e, index.ssa, index.type, iv), index.type.dtype, selfSizes[dim], true);
        return at;
      },
      [&](Scalars& s, const Strings& iv, DType ct) {
        return src.isTensor() ? s.cast(extract(c.e, src.ssa, src.type, iv), src.type.dtype, ct) : scalar;
      },
      reduce);
}

// scatter_reduce(self, dim, index, src, reduce, include_self): sum, prod, amax, amin or mean
// of the values scattered to each position, with self's value unless include_self is false;
// a position nothing is scattered to keeps self's.
Value scatterReduce(OpCall& c) {
  const Value& self = c.tensor(0);
  const Value& index = c.tensor(2);
  const Value& src = c.tensor(3);
  requireIntegerIndex(index);
  std::string reduce = c.arg(4).text;
  bool includeSelf = c.none(5) || c.flag(5);
  size_t rank = self.type.rank(), dim = static_cast<size_t>(OpCall::dim(c.integer(1), rank));
  if (index.type.rank() != rank) throw Unsupported("scatter_reduce with an index of another rank");
  if (reduce != "sum" && reduce != "prod" && reduce != "amax" && reduce != "amin" && reduce != "mean")
    throw Unsupported("scatter_reduce with reduce='" + reduce + "'");
  const TensorType& out = c.out();
  DType ct = computeType(out.dtype);
  Strings selfSizes = sizesOf(c.e, self.type), indexSizes = sizesOf(c.e, index.type);
  auto target = [&](const Strings& iv) {
    Strings at = iv;  // a 0-d self has its one element, whatever the index
    if (rank)
      at[dim] = boundIndex(c.e, extract(c.e, index.ssa, index.type, iv), index.type.dtype, selfSizes[dim], true);
    return at;
  };
  auto source = [&](Scalars& s, const Strings& iv, DType t) {
    return s.cast(extract(c.e, src.ssa, src.type, iv), src.type.dtype, t);
  };
  std::string base = c.e.convert(self, out.dtype).ssa;
  if (!includeSelf) {  // the positions scattered to start from the reduction's identity (amax: the dtype's lowest
                       // value)
    bool extreme = reduce == "amax" || reduce == "amin";
    std::string identity =
        extreme ? reduction::limit(c.e, ct, reduce == "amin") : c.e.scalars().constant(reduce == "prod" ? 1 : 0, ct);
    base = scatterLoop(
               c, indexSizes, target, [&](Scalars&, const Strings&, DType) { return identity; }, "", out, base)
               .ssa;
  }
  Value acc = scatterLoop(c, indexSizes, target, source, reduce == "mean" ? "sum" : reduce, out, base);
  if (reduce != "mean") return acc;
  // mean: the sum over how many values it holds (self counting as one when included).
  TensorType countT = out.withDtype(DType::I64);
  Value count = scatterLoop(
      c, indexSizes, target, [&](Scalars& s, const Strings&, DType) { return s.constant(1, DType::I64); }, "add",
      countT, c.e.fill(countT, includeSelf ? 1 : 0));
  return c.e.elementwise(out, {acc, count, self}, ct, [&](Scalars& s, Strings& v) {
    std::string n = v[1], none = s.cmp(isFloat(ct) ? "oeq" : "eq", n, s.constant(0, ct), ct);  // operands arrive in ct
    std::string mean = isFloat(ct) ? s.op("arith.divf", v[0], n, ct)
                                   : s.op("arith.floordivsi", v[0], s.select(none, s.constant(1, ct), n, ct), ct);
    return s.select(none, v[2], mean, ct);
  });
}

// x sorted along `dim` (x's rank > 0), values as `valuesT` and indices as `indicesT` (x's shape):
// each element's place is how many elements of its row come before it (smaller, or equal and
// earlier: stable; NaN sorts last ascending, first descending, as PyTorch's), computed by one
// reduction over the row; values and indices are then written to their places. O(n^2) per
// row, with no data-dependent control flow.
Value sortAlong(OpCall& c, const Value& x, size_t dim, bool descending, const TensorType& valuesT,
                const TensorType& indicesT) {
  size_t rank = x.type.rank();
  DType ct = computeType(x.type.dtype);
  // loops: x's dims, then j (the row position compared with).
  Strings self = loopDims(rank), other = loopDims(rank);
  other[dim] = "d" + std::to_string(rank);
  Strings iters(rank, "parallel");
  iters.push_back("reduction");
  TensorType placeT = x.type.withDtype(DType::I64);
  std::string place = c.e.generic(
      placeT, loopDims(rank), {{x.ssa, x.type, self}, {x.ssa, x.type, other}}, iters,
      [&](Strings& a) {
        Scalars s = c.e.scalars();
        std::string mine = s.cast(a[0], x.type.dtype, ct), theirs = s.cast(a[1], x.type.dtype, ct), before;
        std::string earlier = c.e.indexCmp("slt", c.e.loopIndex(rank), c.e.loopIndex(dim));
        if (isFloat(ct)) {
          std::string nanMine = s.cmp("uno", mine, mine, ct), nanTheirs = s.cmp("uno", theirs, theirs, ct);
          std::string ordered = s.cmp(descending ? "ogt" : "olt", theirs, mine, ct);
          // NaN counts as the largest value: first descending, last ascending.
          std::string nanFirst =
              descending ? s.op("arith.andi", nanTheirs, s.cmp("ord", mine, mine, ct), DType::Bool) : "";
          std::string numberFirst =
              descending ? "" : s.op("arith.andi", nanMine, s.cmp("ord", theirs, theirs, ct), DType::Bool);
          std::string strictly = s.op("arith.ori", ordered, descending ? nanFirst : numberFirst, DType::Bool);
          std::string same = s.op("arith.ori", s.cmp("oeq", theirs, mine, ct),
                                  s.op("arith.andi", nanMine, nanTheirs, DType::Bool), DType::Bool);
          before = s.op("arith.ori", strictly, s.op("arith.andi", same, earlier, DType::Bool), DType::Bool);
        } else {
          bool u = isUnsigned(x.type.dtype);
          std::string ordered = s.cmp(descending ? (u ? "ugt" : "sgt") : (u ? "ult" : "slt"), theirs, mine, ct);
          before = s.op("arith.ori", ordered, s.op("arith.andi", s.cmp("eq", theirs, mine, ct), earlier, DType::Bool),
                        DType::Bool);
        }
        return s.op("arith.addi", a[2], s.cast(before, DType::Bool, DType::I64), DType::I64);
      },
      c.e.fill(placeT, 0));
  Strings sizes = sizesOf(c.e, x.type);
  auto target = [&](const Strings& iv) {
    Strings at = iv;
    at[dim] = c.e.toIndex(extract(c.e, place, placeT, iv));
    return at;
  };
  Value values = scatterLoop(
      c, sizes, target,
      [&](Scalars& s, const Strings& iv, DType t) { return s.cast(extract(c.e, x.ssa, x.type, iv), x.type.dtype, t); },
      "", valuesT, c.e.empty(valuesT));
  Value indices = scatterLoop(
      c, sizes, target,
      [&](Scalars& s, const Strings& iv, DType t) { return s.cast(c.e.fromIndex(iv[dim]), DType::I64, t); }, "",
      indicesT, c.e.empty(indicesT));
  return Value::list({values, indices});
}

// sort(self, dim, descending) and sort.stable.
Value sort(OpCall& c, bool stableOverload) {
  const Value& x = c.tensor(0);
  size_t rank = x.type.rank();
  if (rank == 0) return Value::list({x, Value::tensor(c.e.fill(c.out(1), 0), c.out(1))});
  size_t dimArg = stableOverload ? 2 : 1, descArg = stableOverload ? 3 : 2;
  size_t dim = static_cast<size_t>(OpCall::dim(c.none(dimArg) ? -1 : c.integer(dimArg), rank));
  return sortAlong(c, x, dim, !c.none(descArg) && c.flag(descArg), c.out(0), c.out(1));
}

// topk(self, k, dim, largest, sorted): the first k of the stable sort (descending when
// largest), so ties keep their order of appearance; PyTorch leaves the order among ties, and
// with sorted=False the order of the k, unspecified, and they are returned sorted.
Value topk(OpCall& c) {
  const Value& x = c.tensor(0);
  size_t rank = x.type.rank();
  if (rank == 0) return Value::list({c.e.convert(x, c.out(0).dtype), Value::tensor(c.e.fill(c.out(1), 0), c.out(1))});
  size_t dim = static_cast<size_t>(OpCall::dim(c.none(2) ? -1 : c.integer(2), rank));
  Value all =
      sortAlong(c, x, dim, c.none(3) || c.flag(3), x.type.withDtype(c.out(0).dtype), x.type.withDtype(c.out(1).dtype));
  Value parts[2];
  for (size_t i = 0; i < 2; ++i) {
    const TensorType& out = c.out(i);
    Strings sizes;
    for (size_t d = 0; d < rank; ++d)
      sizes.push_back(out.dims[d].isStatic() ? std::to_string(out.dims[d].size) : c.e.dimSize(out, d));
    parts[i] =
        Value::tensor(c.e.assign("top", "tensor.extract_slice " + all.items[i].ssa + "[" + join(Strings(rank, "0")) +
                                            "] [" + join(sizes) + "] [" + join(Strings(rank, "1")) +
                                            "] : " + all.items[i].type.str() + " to " + out.str()),
                      out);
  }
  return Value::list({parts[0], parts[1]});
}

// masked_scatter(self, mask, source): out[i] = mask[i] ? source.flatten()[n] : self[i], n the
// number of true mask elements before i (row-major over the broadcast shape): one scf.for nest
// carrying the output and that count. A source is read only where the mask is true, so an
// empty one is never read.
Value maskedScatter(OpCall& c) {
  const Value& self = c.tensor(0);
  const Value& mask = c.tensor(1);
  const Value& src = c.tensor(2);
  const TensorType& out = c.out();
  if (self.type.rank() > out.rank() || mask.type.rank() > out.rank())
    throw Unsupported("masked_scatter operands of higher rank than the result");
  // An operand read at the result's coordinates, broadcast (right-aligned; static size-1 dims at 0).
  auto at = [&](const TensorType& t, const Strings& iv) {
    Strings r;
    for (size_t m = 0; m < t.rank(); ++m) {
      const Dim& d = t.dims[m];
      const Dim& o = out.dims[out.rank() - t.rank() + m];
      r.push_back(d.isStatic() && d.size == 1 && !(o.isStatic() && o.size == 1) ? c.e.index(0)
                                                                                : iv[out.rank() - t.rank() + m]);
    }
    return r;
  };
  std::string flat = src.ssa, last;  // the source flattened, and its last position
  TensorType flatT{src.type.dtype, {}};
  if (src.type.rank() > 0) {
    Dim n{1, ""};
    Strings all;
    std::string count = c.e.dimSize(src.type, 0);
    for (size_t d = 0; d < src.type.rank(); ++d) {
      const Dim& dim = src.type.dims[d];
      n = dim.isStatic() && n.isStatic() ? Dim{n.size * dim.size, ""} : Dim{-1, "n"};
      all.push_back(std::to_string(d));
      if (d) count = c.e.indexOp("arith.muli", count, c.e.dimSize(src.type, d));
    }
    flatT.dims.push_back(n);
    if (src.type.rank() > 1)
      flat = c.e.assign("flat", "tensor.collapse_shape " + src.ssa + " [[" + join(all) + "]] : " + src.type.str() +
                                    " into " + flatT.str());
    last = c.e.indexOp("arith.subi", count, c.e.index(1));
  }
  std::string init = c.e.empty(out);
  Strings r =
      loopNest(c.e, sizesOf(c.e, out), {init, c.e.index(0)}, {out.str(), "index"},
               [&](const Strings& iv, const Strings& carried) {
                 Scalars s = c.e.scalars();
                 std::string m =
                     s.cast(extract(c.e, mask.ssa, mask.type, at(mask.type, iv)), mask.type.dtype, DType::Bool);
                 std::string v = c.e.fresh("ms");
                 c.e.open(v + " = scf.if " + m + " -> (" + elementType(out.dtype) + ") {");
                 std::string pick = flatT.dims.empty()
                                        ? extract(c.e, flat, flatT, {})
                                        : extract(c.e, flat, flatT, {c.e.indexOp("arith.minsi", carried[1], last)});
                 c.e.line("scf.yield " + s.cast(pick, src.type.dtype, out.dtype) + " : " + elementType(out.dtype));
                 c.e.label("} else {");
                 c.e.line("scf.yield " +
                          s.cast(extract(c.e, self.ssa, self.type, at(self.type, iv)), self.type.dtype, out.dtype) +
                          " : " + elementType(out.dtype));
                 c.e.close("}");
                 std::string next = c.e.indexOp(
                     "arith.addi", carried[1],
                     c.e.assign("one", "arith.select " + m + ", " + c.e.index(1) + ", " + c.e.index(0) + " : index"));
                 return Strings{insert(c.e, v, carried[0], out, iv), next};
               });
  return Value::tensor(r[0], out);
}

// index_add(self, dim, index, source, alpha): out[.. index[i] ..] += alpha * source[.. i ..].
Value indexAdd(OpCall& c) {
  const Value& self = c.tensor(0);
  const Value& index = c.tensor(2);
  const Value& src = c.tensor(3);
  requireIntegerIndex(index);
  if (self.type.rank() == 0 || src.type.rank() != self.type.rank())
    throw Unsupported("index_add of a 0-d tensor or of a source of another rank");
  size_t dim = static_cast<size_t>(OpCall::dim(c.integer(1), self.type.rank()));
  const Value& alpha = c.arg(c.index("alpha"));
  Strings selfSizes = sizesOf(c.e, self.type);
  DType ct = computeType(c.out().dtype);
  std::string scale = alpha.isConst() && alpha.number == 1 ? "" : c.e.scalars().of(alpha, ct);
  return scatterLoop(
      c, sizesOf(c.e, src.type),
      [&](const Strings& iv) {
        Strings at = iv;
        std::string i = extract(c.e, index.ssa, index.type, index.type.rank() ? Strings{iv[dim]} : Strings{});
        at[dim] = boundIndex(c.e, i, index.type.dtype, selfSizes[dim], true);
        return at;
      },
      [&](Scalars& s, const Strings& iv, DType t) {
        std::string v = s.cast(extract(c.e, src.ssa, src.type, iv), src.type.dtype, t);
        return scale.empty() ? v : s.op(isFloat(t) ? "arith.mulf" : "arith.muli", v, scale, t);
      },
      "add");
}

// ---- embedding -------------------------------------------------------------------------------

Value embedding(OpCall& c) {
  const Value& weight = c.tensor(0);
  const Value& ids = c.tensor(1);
  const TensorType& out = c.out();
  requireIntegerIndex(ids);
  if (weight.type.rank() != 2 || out.rank() != ids.type.rank() + 1)
    throw Unsupported("embedding of a weight that is not 2-d");
  std::string rows = c.e.dimSize(weight.type, 0);
  size_t r = out.rank();
  std::string name =
      c.e.generic(out, loopDims(r), {{ids.ssa, ids.type, loopDims(r - 1)}}, Strings(r, "parallel"), [&](Strings& a) {
        std::string row = boundIndex(c.e, a[0], ids.type.dtype, rows, false);
        return c.e.scalars().cast(extract(c.e, weight.ssa, weight.type, {row, c.e.loopIndex(r - 1)}), weight.type.dtype,
                                  out.dtype);
      });
  return Value::tensor(name, out);
}

// Each index adds its gradient row to the row it picked: per index, the weight-gradient row is
// extracted, updated by a generic and inserted back, in place; float32 for float16/bfloat16.
Value embeddingBackward(OpCall& c) {
  const Value& grad = c.tensor(0);
  const Value& ids = c.tensor(1);
  const TensorType& out = c.out();
  requireIntegerIndex(ids);
  if (out.rank() != 2 || grad.type.rank() != ids.type.rank() + 1) throw Unsupported("embedding_dense_backward shapes");
  bool byFreq = c.flag(4);
  DType ct = computeType(out.dtype);
  TensorType acc = out.withDtype(ct), rowType{ct, {out.dims[1]}}, gradRow{grad.type.dtype, {grad.type.dims.back()}};
  TensorType countType{DType::I64, {out.dims[0]}};
  std::string pad = c.e.scalars().of(c.arg(3), DType::I64), rows = c.e.dimSize(out, 0), width = c.e.dimSize(out, 1);
  std::string widthText = out.dims[1].isStatic() ? std::to_string(out.dims[1].size) : width;
  Strings idSizes = sizesOf(c.e, ids.type);
  auto rowOf = [&](const Strings& iv) {
    return boundIndex(c.e, extract(c.e, ids.ssa, ids.type, iv), ids.type.dtype, rows, false);
  };
  std::string counts;  // scale_grad_by_freq divides each gradient by how often its index occurs
  if (byFreq)
    counts = loops(c.e, idSizes, c.e.fill(countType, 0), countType, [&](const Strings& iv, const std::string& t) {
      std::string row = rowOf(iv);
      Scalars s = c.e.scalars();
      return insert(c.e, s.op("arith.addi", extract(c.e, t, countType, {row}), s.constant(1, DType::I64), DType::I64),
                    t, countType, {row});
    });
  std::string r = loops(c.e, idSizes, c.e.fill(acc, 0), acc, [&](const Strings& iv, const std::string& t) {
    std::string id = extract(c.e, ids.ssa, ids.type, iv), row = boundIndex(c.e, id, ids.type.dtype, rows, false);
    Scalars s = c.e.scalars();
    std::string skip = s.cmp("eq", s.cast(id, ids.type.dtype, DType::I64), pad, DType::I64);
    std::string count = byFreq ? s.cast(extract(c.e, counts, countType, {row}), DType::I64, ct) : "";
    Strings offs = iv, sizes(iv.size(), "1"), ones(iv.size() + 1, "1");
    offs.push_back(c.e.index(0));
    sizes.push_back(widthText);
    std::string g = c.e.assign("grow", "tensor.extract_slice " + grad.ssa + "[" + join(offs) + "] [" + join(sizes) +
                                           "] [" + join(ones) + "] : " + grad.type.str() + " to " + gradRow.str());
    std::string place = "[" + row + ", " + c.e.index(0) + "] [1, " + widthText + "] [1, 1]";
    std::string old =
        c.e.assign("wrow", "tensor.extract_slice " + t + place + " : " + acc.str() + " to " + rowType.str());
    std::string sum = c.e.generic(
        rowType, {"d0"}, {{g, gradRow, {"d0"}}}, {"parallel"},
        [&](Strings& a) {
          Scalars b = c.e.scalars();
          std::string v = b.cast(a[0], grad.type.dtype, ct);
          if (byFreq) v = b.op("arith.divf", v, count, ct);
          return b.op("arith.addf", a[1], b.select(skip, b.constant(0, ct), v, ct), ct);
        },
        old);
    return c.e.assign("wput", "tensor.insert_slice " + sum + " into " + t + place + " : " + rowType.str() + " into " +
                                  acc.str());
  });
  return c.e.convert(Value::tensor(r, acc), out.dtype);
}

// ---- sizes and scalars -----------------------------------------------------------------------

// The product of dims [from, to) of x as an Int: a constant when all are static, else read
// with tensor.dim (a data-dependent size has no expression to evaluate).
Value sizeProduct(Emitter& e, const Value& x, size_t from, size_t to) {
  int64_t known = 1;
  std::string v;
  for (size_t d = from; d < to; ++d) {
    if (x.type.dims[d].isStatic()) {
      known *= x.type.dims[d].size;
      continue;
    }
    std::string dim =
        e.assign("dim", "tensor.dim " + x.ssa + ", " + e.index(static_cast<int64_t>(d)) + " : " + x.type.str());
    v = v.empty() ? dim : e.indexOp("arith.muli", v, dim);
  }
  if (v.empty()) return Value::integer(known);
  if (known != 1) v = e.indexOp("arith.muli", v, e.index(known));
  return Value::scalar(Value::Kind::Int, e.fromIndex(v));
}

}  // namespace

void addIndexingOps(OpTable& t) {
  t["aten::embedding.default"] = embedding;
  t["aten::embedding_dense_backward.default"] = embeddingBackward;
  t["aten::gather.default"] = [](OpCall& c) {
    const Value& index = c.tensor(2);
    return gatherAlong(c, index, static_cast<size_t>(OpCall::dim(c.integer(1), c.tensor(0).type.rank())),
                       loopDims(index.type.rank()));
  };
  t["aten::index_select.default"] = [](OpCall& c) {
    const Value& index = c.tensor(2);
    size_t dim = static_cast<size_t>(OpCall::dim(c.integer(1), c.tensor(0).type.rank()));
    if (index.type.rank() > 1) throw Unsupported("index_select with a multi-dimensional index");
    // A 0-d result (of a 0-d input) reads the index's one element.
    if (c.out().rank() == 0) return gatherAlong(c, index, dim, Strings(index.type.rank(), "0"));
    return gatherAlong(c, index, dim, index.type.rank() ? Strings{"d" + std::to_string(dim)} : Strings{});
  };
  t["aten::index.Tensor"] = t["aten::_unsafe_index.Tensor"] = indexTensor;
  t["aten::index_put.default"] = t["aten::_unsafe_index_put.default"] = t["aten::_index_put_impl.default"] = indexPut;
  t["aten::scatter.src"] = t["aten::scatter.value"] = [](OpCall& c) { return scatter(c, ""); };
  t["aten::scatter_add.default"] = [](OpCall& c) { return scatter(c, "add"); };
  t["aten::scatter_reduce.two"] = scatterReduce;
  t["aten::sort.default"] = [](OpCall& c) { return sort(c, false); };
  t["aten::sort.stable"] = [](OpCall& c) { return sort(c, true); };
  t["aten::topk.default"] = topk;
  t["aten::masked_scatter.default"] = maskedScatter;
  t["aten::scatter.reduce"] = t["aten::scatter.value_reduce"] = [](OpCall& c) {
    const Value& r = c.arg(c.index("reduce"));
    if (r.kind != Value::Kind::Text || (r.text != "add" && r.text != "multiply"))
      throw Unsupported("scatter reduce '" + r.text + "'");
    return scatter(c, r.text);
  };
  t["aten::index_add.default"] = indexAdd;
  t["aten::sym_size.int"] = [](OpCall& c) {
    size_t d = static_cast<size_t>(OpCall::dim(c.integer(1), c.tensor(0).type.rank()));
    return sizeProduct(c.e, c.tensor(0), d, d + 1);
  };
  t["aten::sym_numel.default"] = [](OpCall& c) { return sizeProduct(c.e, c.tensor(0), 0, c.tensor(0).type.rank()); };
  t["aten::_local_scalar_dense.default"] = [](OpCall& c) {
    const Value& x = c.tensor(0);
    std::string v = extract(c.e, x.ssa, x.type, Strings(x.type.rank(), c.e.index(0)));
    Scalars s = c.e.scalars();
    if (isFloat(x.type.dtype)) return Value::scalar(Value::Kind::Float, s.cast(v, x.type.dtype, DType::F64));
    if (x.type.dtype == DType::Bool) return Value::scalar(Value::Kind::Bool, v);
    return Value::scalar(Value::Kind::Int, s.cast(v, x.type.dtype, DType::I64));
  };
}

}  // namespace dynrep::replay::lowering
