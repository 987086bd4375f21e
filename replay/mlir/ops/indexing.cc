// Indexing: gathers (embedding, gather, index, index_select, as_strided) are linalg.generics
// over the result that tensor.extract from the source at computed coordinates; scatters
// (embedding/index_put/scatter backward-style writes) are scf.for nests threading one tensor
// through tensor.insert, which one-shot-bufferize updates in place, so the cost is the number
// of elements written, not vocabulary x indices. Index values are wrapped (where PyTorch
// accepts negatives) and clamped, so an index PyTorch would reject cannot write out of bounds.
#include <cmath>

#include "ops.h"

namespace dynrep::replay::lowering {

namespace {

std::vector<std::string> identity(size_t rank, size_t from = 0) {
  std::vector<std::string> m;
  for (size_t d = 0; d < rank; ++d) m.push_back("d" + std::to_string(from + d));
  return m;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

std::string loopIndex(Emitter& e, size_t d) {
  std::string i = e.fresh("li");
  e.line(i + " = linalg.index " + std::to_string(d) + " : index");
  return i;
}

std::string ix(Emitter& e, const std::string& op, const std::string& a, const std::string& b) {
  std::string out = e.fresh("ix");
  e.line(out + " = " + op + " " + a + ", " + b + " : index");
  return out;
}

std::string extract(Emitter& e, const std::string& t, const TensorType& type, const std::vector<std::string>& at) {
  std::string v = e.fresh("x");
  e.line(v + " = tensor.extract " + t + "[" + join(at) + "] : " + type.str());
  return v;
}

std::string insert(Emitter& e, const std::string& v, const std::string& t, const TensorType& type, const std::vector<std::string>& at) {
  std::string r = e.fresh("in");
  e.line(r + " = tensor.insert " + v + " into " + t + "[" + join(at) + "] : " + type.str());
  return r;
}

void requireIntegerIndex(const TensorType& t) {
  if (t.dtype == DType::Bool || t.dtype == DType::U8) throw Unsupported("boolean (mask) indices are not lowered: the result's size depends on the data");
  if (isFloat(t.dtype)) throw Unsupported("float tensors used as indices");
}

// An element of an index tensor as an in-bounds index into a dim of `size`.
std::string boundIndex(Emitter& e, const std::string& v, DType t, const std::string& size, bool wrap) {
  std::string i = e.fresh("ic");
  e.line(i + " = arith.index_cast " + v + " : " + elementType(t) + " to index");
  std::string zero = e.index(0);
  if (wrap) {
    std::string neg = e.fresh("neg");
    e.line(neg + " = arith.cmpi slt, " + i + ", " + zero + " : index");
    std::string w = ix(e, "arith.addi", i, size), s = e.fresh("ws");
    e.line(s + " = arith.select " + neg + ", " + w + ", " + i + " : index");
    i = s;
  }
  std::string last = ix(e, "arith.subi", size, e.index(1));
  return ix(e, "arith.minsi", ix(e, "arith.maxsi", i, zero), last);
}

// Nested scf.for loops over `sizes` (index SSA values) threading the tensor `init` of type t;
// body gets the induction variables and the current tensor and returns the next one.
using LoopBody = std::function<std::string(const std::vector<std::string>&, const std::string&)>;
std::string loops(Emitter& e, const std::vector<std::string>& sizes, const std::string& init, const TensorType& t, const LoopBody& body,
                  std::vector<std::string> ivs = {}) {
  if (ivs.size() == sizes.size()) return body(ivs, init);
  std::string name = e.fresh("for"), iv = e.fresh("iv"), acc = e.fresh("acc");
  std::string lo = e.index(0), step = e.index(1);
  e.open(name + " = scf.for " + iv + " = " + lo + " to " + sizes[ivs.size()] + " step " + step + " iter_args(" + acc + " = " + init +
         ") -> (" + t.str() + ") {");
  ivs.push_back(iv);
  std::string next = loops(e, sizes, acc, t, body, ivs);
  e.line("scf.yield " + next + " : " + t.str());
  e.close("}");
  return name;
}

std::vector<std::string> sizesOf(Emitter& e, const TensorType& t) {
  std::vector<std::string> s;
  for (size_t d = 0; d < t.rank(); ++d) s.push_back(e.dimSize(t, d));
  return s;
}

Value converted(Emitter& e, const Value& v, DType to) {
  if (v.type.dtype == to) return v;
  return e.elementwise(v.type.withDtype(to), {v}, computeType(to), [](Scalars&, std::vector<std::string>& a) { return a[0]; });
}

// ---- advanced indexing -----------------------------------------------------------------------

// self[indices] as PyTorch lays it out: the index tensors broadcast to a shape B, which takes
// the place of the indexed dims when they are consecutive, and goes first otherwise.
struct IndexPlan {
  std::vector<const Value*> at;  // per self dim: its index tensor, or null (a full slice)
  size_t bRank = 0, bStart = 0;
  std::vector<int64_t> slots;    // result dim -> self dim (>= 0), or -1 - B position
};

IndexPlan plan(const Value& self, const Value& list) {
  if (list.kind != Value::Kind::List) throw Unsupported("indices are not a list");
  if (list.items.size() > self.type.rank()) throw Unsupported("more indices than dims");
  IndexPlan p;
  p.at.assign(self.type.rank(), nullptr);
  int64_t first = -1, last = -1;
  for (size_t i = 0; i < list.items.size(); ++i) {
    const Value& v = list.items[i];
    if (v.isNone()) continue;
    if (!v.isTensor()) throw Unsupported("an index that is not a tensor");
    requireIntegerIndex(v.type);
    p.at[i] = &v;
    p.bRank = std::max(p.bRank, v.type.rank());
    if (first < 0) first = static_cast<int64_t>(i);
    last = static_cast<int64_t>(i);
  }
  if (first < 0) throw Unsupported("indexing with no index tensor");
  bool adjacent = true;
  for (int64_t i = first; i <= last; ++i) adjacent = adjacent && p.at[static_cast<size_t>(i)];
  for (size_t d = 0; d < self.type.rank(); ++d) {
    if (static_cast<int64_t>(d) == first) {
      if (!adjacent) continue;
      p.bStart = p.slots.size();
      for (size_t j = 0; j < p.bRank; ++j) p.slots.push_back(-1 - static_cast<int64_t>(j));
    }
    if (!p.at[d]) p.slots.push_back(static_cast<int64_t>(d));
  }
  if (!adjacent) {
    std::vector<int64_t> b;
    for (size_t j = 0; j < p.bRank; ++j) b.push_back(-1 - static_cast<int64_t>(j));
    p.slots.insert(p.slots.begin(), b.begin(), b.end());
    p.bStart = 0;
  }
  return p;
}

// The size of each result dim (for loops): B's from the first index tensor that is not 1 there.
std::vector<std::string> resultSizes(Emitter& e, const Value& self, const IndexPlan& p) {
  std::vector<std::string> sizes;
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
      const Dim& d = t->type.dims[m];
      if (d.isStatic() && d.size == 1) continue;
      size = e.dimSize(t->type, m);
      break;
    }
    sizes.push_back(size);
  }
  return sizes;
}

// Coordinates into self for result coordinates `r`; `selfSizes` are function-level values.
std::vector<std::string> selfCoordinates(Emitter& e, const Value& self, const IndexPlan& p, const std::vector<std::string>& r,
                                         const std::vector<std::string>& selfSizes) {
  std::vector<std::string> at(self.type.rank());
  for (size_t k = 0; k < p.slots.size(); ++k)
    if (p.slots[k] >= 0) at[static_cast<size_t>(p.slots[k])] = r[k];
  for (size_t d = 0; d < self.type.rank(); ++d) {
    const Value* t = p.at[d];
    if (!t) continue;
    std::vector<std::string> ti;
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
  IndexPlan p = plan(self, c.arg(1));
  const TensorType& out = c.out();
  if (out.rank() != p.slots.size()) throw Unsupported("the IR's result rank differs from the indexing's");
  std::vector<std::string> selfSizes = sizesOf(c.e, self.type);
  std::string name = c.e.generic(out, identity(out.rank()), {}, std::vector<std::string>(out.rank(), "parallel"), [&](std::vector<std::string>&) {
    std::vector<std::string> r;
    for (size_t d = 0; d < out.rank(); ++d) r.push_back(loopIndex(c.e, d));
    std::string v = extract(c.e, self.ssa, self.type, selfCoordinates(c.e, self, p, r, selfSizes));
    return c.e.scalars().cast(v, self.type.dtype, out.dtype);
  });
  return Value::tensor(name, out);
}

// self with self[indices] = values (or += values): a loop over the indexed result's elements.
Value indexPut(OpCall& c) {
  const Value& self = c.tensor(0);
  IndexPlan p = plan(self, c.arg(1));
  const Value& values = c.tensor(2);
  bool accumulate = c.flag(3);
  const TensorType& out = c.out();
  std::vector<std::string> selfSizes = sizesOf(c.e, self.type), sizes = resultSizes(c.e, self, p);
  if (values.type.rank() > sizes.size()) throw Unsupported("index_put values of higher rank than the indexed result");
  Value base = converted(c.e, self, out.dtype);
  DType ct = computeType(out.dtype);
  std::string r = loops(c.e, sizes, base.ssa, out, [&](const std::vector<std::string>& iv, const std::string& acc) {
    std::vector<std::string> at = selfCoordinates(c.e, self, p, iv, selfSizes), vi;
    size_t lead = sizes.size() - values.type.rank();
    for (size_t m = 0; m < values.type.rank(); ++m) {
      const Dim& d = values.type.dims[m];
      vi.push_back(d.isStatic() && d.size == 1 ? c.e.index(0) : iv[lead + m]);
    }
    Scalars s = c.e.scalars();
    std::string v = s.cast(extract(c.e, values.ssa, values.type, vi), values.type.dtype, ct);
    if (accumulate) {
      std::string old = s.cast(extract(c.e, acc, out, at), out.dtype, ct);
      v = s.op(isFloat(ct) ? "arith.addf" : ct == DType::Bool ? "arith.ori" : "arith.addi", old, v, ct);
    }
    return insert(c.e, s.cast(v, ct, out.dtype), acc, out, at);
  });
  return Value::tensor(r, out);
}

// scatter / scatter_add: out[.. index[p] ..] (=|+=|*=) src[p] for every position p of index.
Value scatter(OpCall& c, const std::string& reduce) {
  const Value& self = c.tensor(0);
  const TensorType& out = c.out();
  size_t rank = self.type.rank(), dim = static_cast<size_t>(OpCall::dim(c.integer(1), rank));
  const Value& index = c.tensor(2);
  requireIntegerIndex(index.type);
  const Value& src = c.arg(3);
  if (index.type.rank() != rank && !(rank == 0 && index.type.rank() <= 1)) throw Unsupported("scatter index of a different rank");
  std::vector<std::string> selfSizes = sizesOf(c.e, self.type);
  DType ct = computeType(out.dtype);
  Scalars fs = c.e.scalars();
  std::string scalar = src.isTensor() ? "" : fs.of(src, ct);
  Value base = converted(c.e, self, out.dtype);
  std::string r = loops(c.e, sizesOf(c.e, index.type), base.ssa, out, [&](const std::vector<std::string>& iv, const std::string& acc) {
    Scalars s = c.e.scalars();
    std::vector<std::string> at = iv;
    if (rank == 0) at.clear();
    else at[dim] = boundIndex(c.e, extract(c.e, index.ssa, index.type, iv), index.type.dtype, selfSizes[dim], true);
    std::string v = src.isTensor() ? s.cast(extract(c.e, src.ssa, src.type, src.type.rank() ? iv : std::vector<std::string>{}), src.type.dtype, ct) : scalar;
    if (!reduce.empty()) {
      std::string old = s.cast(extract(c.e, acc, out, at), out.dtype, ct);
      bool add = reduce == "add" || reduce == "sum";
      v = s.op(isFloat(ct) ? (add ? "arith.addf" : "arith.mulf") : (add ? "arith.addi" : "arith.muli"), old, v, ct);
    }
    return insert(c.e, s.cast(v, ct, out.dtype), acc, out, at);
  });
  return Value::tensor(r, out);
}

// index_add: out[.., index[i], ..] += alpha * source[.., i, ..] (the gradient of index_select).
Value indexAdd(OpCall& c) {
  const Value& self = c.tensor(0);
  const Value& index = c.tensor(2);
  const Value& src = c.tensor(3);
  requireIntegerIndex(index.type);
  const TensorType& out = c.out();
  if (self.type.rank() == 0 || src.type.rank() != self.type.rank()) throw Unsupported("index_add of a 0-d tensor or of a source of another rank");
  size_t dim = static_cast<size_t>(OpCall::dim(c.integer(1), self.type.rank()));
  DType ct = computeType(out.dtype);
  const Value& alpha = c.arg(c.index("alpha"));
  std::vector<std::string> selfSizes = sizesOf(c.e, self.type);
  Scalars fs = c.e.scalars();
  std::string scale = alpha.isConst() && alpha.number == 1 ? "" : fs.of(alpha, ct);
  Value base = converted(c.e, self, out.dtype);
  std::string r = loops(c.e, sizesOf(c.e, src.type), base.ssa, out, [&](const std::vector<std::string>& iv, const std::string& acc) {
    Scalars s = c.e.scalars();
    std::vector<std::string> at = iv;
    std::string i = extract(c.e, index.ssa, index.type, index.type.rank() ? std::vector<std::string>{iv[dim]} : std::vector<std::string>{});
    at[dim] = boundIndex(c.e, i, index.type.dtype, selfSizes[dim], true);
    std::string v = s.cast(extract(c.e, src.ssa, src.type, iv), src.type.dtype, ct);
    if (!scale.empty()) v = s.op(isFloat(ct) ? "arith.mulf" : "arith.muli", v, scale, ct);
    v = s.op(isFloat(ct) ? "arith.addf" : "arith.addi", s.cast(extract(c.e, acc, out, at), out.dtype, ct), v, ct);
    return insert(c.e, s.cast(v, ct, out.dtype), acc, out, at);
  });
  return Value::tensor(r, out);
}

// ---- embedding -------------------------------------------------------------------------------

Value embedding(OpCall& c) {
  const Value& weight = c.tensor(0);
  const Value& ids = c.tensor(1);
  requireIntegerIndex(ids.type);
  const TensorType& out = c.out();
  if (weight.type.rank() != 2 || out.rank() != ids.type.rank() + 1) throw Unsupported("embedding of a weight that is not 2-d");
  std::string rows = c.e.dimSize(weight.type, 0);
  size_t r = out.rank();
  std::string name = c.e.generic(out, identity(r), {{ids.ssa, ids.type, identity(r - 1)}}, std::vector<std::string>(r, "parallel"),
                                 [&](std::vector<std::string>& a) {
                                   std::string row = boundIndex(c.e, a[0], ids.type.dtype, rows, false);
                                   std::string v = extract(c.e, weight.ssa, weight.type, {row, loopIndex(c.e, r - 1)});
                                   return c.e.scalars().cast(v, weight.type.dtype, out.dtype);
                                 });
  return Value::tensor(name, out);
}

// Each index adds its gradient row to the weight row it picked: one row update per index
// (extract_slice / generic / insert_slice on the loop's tensor, done in place), accumulated
// in float32 for float16/bfloat16.
Value embeddingBackward(OpCall& c) {
  const Value& grad = c.tensor(0);
  const Value& ids = c.tensor(1);
  requireIntegerIndex(ids.type);
  bool byFreq = c.flag(4);
  const TensorType& out = c.out();
  if (out.rank() != 2 || grad.type.rank() != ids.type.rank() + 1) throw Unsupported("embedding_dense_backward shapes");
  DType ct = computeType(out.dtype);
  TensorType acc = out.withDtype(ct);
  Scalars fs = c.e.scalars();
  std::string pad = fs.of(c.arg(3), DType::I64);
  std::string rows = c.e.dimSize(out, 0), width = c.e.dimSize(out, 1);
  std::vector<std::string> idSizes = sizesOf(c.e, ids.type);
  auto rowOf = [&](const std::vector<std::string>& iv) {
    std::string id = extract(c.e, ids.ssa, ids.type, iv);
    std::string id64 = c.e.scalars().cast(id, ids.type.dtype, DType::I64);
    return std::pair{boundIndex(c.e, id, ids.type.dtype, rows, false), id64};
  };
  // scale_grad_by_freq divides each gradient by how often its index occurs.
  TensorType countType{DType::I64, {out.dims[0]}};
  std::string counts;
  if (byFreq)
    counts = loops(c.e, idSizes, c.e.fill(countType, 0), countType, [&](const std::vector<std::string>& iv, const std::string& t) {
      std::string row = rowOf(iv).first;
      Scalars s = c.e.scalars();
      std::string n = s.op("arith.addi", extract(c.e, t, countType, {row}), s.constant(1, DType::I64), DType::I64);
      return insert(c.e, n, t, countType, {row});
    });
  TensorType rowType{ct, {out.dims[1]}}, gradRow{grad.type.dtype, {grad.type.dims.back()}};
  std::string sizeText = out.dims[1].isStatic() ? std::to_string(out.dims[1].size) : width;
  std::string r = loops(c.e, idSizes, c.e.fill(acc, 0), acc, [&](const std::vector<std::string>& iv, const std::string& t) {
    auto [row, id64] = rowOf(iv);
    Scalars s = c.e.scalars();
    std::string skip = s.cmp("eq", id64, pad, DType::I64);
    std::string count = byFreq ? s.cast(extract(c.e, counts, countType, {row}), DType::I64, ct) : "";
    std::vector<std::string> offs = iv, gsizes(iv.size(), "1"), ones(iv.size() + 1, "1");
    offs.push_back(c.e.index(0));
    gsizes.push_back(grad.type.dims.back().isStatic() ? std::to_string(grad.type.dims.back().size) : width);
    std::string g = c.e.fresh("grow");
    c.e.line(g + " = tensor.extract_slice " + grad.ssa + "[" + join(offs) + "] [" + join(gsizes) + "] [" + join(ones) + "] : " +
             grad.type.str() + " to " + gradRow.str());
    std::string place = "[" + row + ", " + c.e.index(0) + "] [1, " + sizeText + "] [1, 1]";
    std::string old = c.e.fresh("wrow");
    c.e.line(old + " = tensor.extract_slice " + t + place + " : " + acc.str() + " to " + rowType.str());
    std::string sum = c.e.generic(rowType, {"d0"}, {{g, gradRow, {"d0"}}}, {"parallel"}, [&](std::vector<std::string>& a) {
      Scalars b = c.e.scalars();
      std::string v = b.cast(a[0], grad.type.dtype, ct);
      if (byFreq) v = b.op("arith.divf", v, count, ct);
      v = b.select(skip, b.constant(0, ct), v, ct);
      return b.op("arith.addf", a[1], v, ct);
    }, old);
    std::string next = c.e.fresh("wput");
    c.e.line(next + " = tensor.insert_slice " + sum + " into " + t + place + " : " + rowType.str() + " into " + acc.str());
    return next;
  });
  return converted(c.e, Value::tensor(r, acc), out.dtype);
}

// ---- losses ----------------------------------------------------------------------------------

// -self[n, t] * weight[t] (0 where t is ignore_index) and the weight itself, for target value t.
struct NllTerm {
  std::string loss, weight;
};
NllTerm nllTerm(OpCall& c, const std::string& target, const std::string& n, const std::string& classes, DType ct) {
  const Value& self = c.tensor(0);
  const Value& target_ = c.tensor(1);
  Scalars s = c.e.scalars();
  std::string t = s.cast(target, target_.type.dtype, DType::I64);
  std::string ignored = s.cmp("eq", t, s.of(c.arg(4), DType::I64), DType::I64);
  std::string cls = boundIndex(c.e, s.select(ignored, s.constant(0, DType::I64), t, DType::I64), DType::I64, classes, false);
  std::vector<std::string> at = {cls};
  if (self.type.rank() == 2) at.insert(at.begin(), n);
  std::string x = s.cast(extract(c.e, self.ssa, self.type, at), self.type.dtype, ct);
  std::string w = s.constant(1, ct);
  if (!c.none(2)) w = s.cast(extract(c.e, c.tensor(2).ssa, c.tensor(2).type, {cls}), c.tensor(2).type.dtype, ct);
  w = s.select(ignored, s.constant(0, ct), w, ct);
  return {s.unary("arith.negf", s.op("arith.mulf", x, w, ct), ct), w};
}

Value nllForward(OpCall& c) {
  const Value& self = c.tensor(0);
  const Value& target = c.tensor(1);
  requireIntegerIndex(target.type);
  if (self.type.rank() < 1 || self.type.rank() > 2) throw Unsupported("nll_loss of a " + std::to_string(self.type.rank()) + "-d input");
  int64_t reduction = c.integer(3);
  DType ct = computeType(c.out(0).dtype);
  std::string classes = c.e.dimSize(self.type, self.type.rank() - 1);
  size_t loopsN = self.type.rank() - 1;
  std::vector<std::string> tmap = identity(target.type.rank());
  if (reduction == 0) {
    const TensorType& out = c.out(0);
    std::string name = c.e.generic(out, identity(out.rank()), {{target.ssa, target.type, tmap}}, std::vector<std::string>(out.rank(), "parallel"),
                                   [&](std::vector<std::string>& a) {
                                     std::string n = loopsN ? loopIndex(c.e, 0) : "";
                                     return c.e.scalars().cast(nllTerm(c, a[0], n, classes, ct).loss, ct, out.dtype);
                                   });
    return Value::list({Value::tensor(name, out), Value::tensor(c.e.fill(c.out(1), 0), c.out(1))});
  }
  TensorType scalar{ct, {}};
  auto total = [&](bool weights) {
    std::string name = c.e.generic(scalar, {}, {{target.ssa, target.type, tmap}}, std::vector<std::string>(loopsN, "reduction"),
                                   [&](std::vector<std::string>& a) {
                                     NllTerm term = nllTerm(c, a[0], loopsN ? loopIndex(c.e, 0) : "", classes, ct);
                                     return c.e.scalars().op("arith.addf", a[1], weights ? term.weight : term.loss, ct);
                                   }, c.e.fill(scalar, 0));
    return Value::tensor(name, scalar);
  };
  Value loss = total(false), weight = total(true);
  if (reduction == 1)
    loss = c.e.elementwise(scalar, {loss, weight}, ct, [&](Scalars& s, std::vector<std::string>& v) { return s.op("arith.divf", v[0], v[1], ct); });
  else if (reduction != 2) throw Unsupported("nll_loss reduction " + std::to_string(reduction));
  return Value::list({converted(c.e, loss, c.out(0).dtype), converted(c.e, weight, c.out(1).dtype)});
}

// grad_input[n, c] = weight[t] * -(grad / total_weight for mean) where c == t and t is not ignored.
Value nllBackward(OpCall& c) {
  const Value& grad = c.tensor(0);
  const Value& self = c.tensor(1);
  const Value& target = c.tensor(2);
  const Value& total = c.tensor(6);
  requireIntegerIndex(target.type);
  int64_t reduction = c.integer(4);
  const TensorType& out = c.out();
  size_t r = out.rank();
  if (r < 1 || r > 2) throw Unsupported("nll_loss_backward of a " + std::to_string(r) + "-d input");
  DType ct = computeType(out.dtype);
  std::string classes = c.e.dimSize(self.type, r - 1);
  std::vector<GenericInput> ins = {{target.ssa, target.type, identity(target.type.rank())},
                                   {grad.ssa, grad.type, reduction == 0 ? identity(grad.type.rank()) : std::vector<std::string>(grad.type.rank(), "0")},
                                   {total.ssa, total.type, std::vector<std::string>(total.type.rank(), "0")}};
  std::string name = c.e.generic(out, identity(r), ins, std::vector<std::string>(r, "parallel"), [&](std::vector<std::string>& a) {
    Scalars s = c.e.scalars();
    std::string t = s.cast(a[0], target.type.dtype, DType::I64);
    std::string col = c.e.fresh("col");
    c.e.line(col + " = arith.index_cast " + loopIndex(c.e, r - 1) + " : index to i64");
    std::string hit = s.op("arith.andi", s.cmp("eq", t, col, DType::I64), s.cmp("ne", t, s.of(c.arg(5), DType::I64), DType::I64), DType::Bool);
    std::string g = s.cast(a[1], grad.type.dtype, ct);
    if (reduction == 1) g = s.op("arith.divf", g, s.cast(a[2], total.type.dtype, ct), ct);
    g = s.unary("arith.negf", g, ct);
    if (!c.none(3)) {
      std::string cls = boundIndex(c.e, s.select(hit, t, s.constant(0, DType::I64), DType::I64), DType::I64, classes, false);
      g = s.op("arith.mulf", s.cast(extract(c.e, c.tensor(3).ssa, c.tensor(3).type, {cls}), c.tensor(3).type.dtype, ct), g, ct);
    }
    return s.cast(s.select(hit, g, s.constant(0, ct), ct), ct, out.dtype);
  });
  return Value::tensor(name, out);
}

// ---- attention -------------------------------------------------------------------------------

// softmax(Q K^T * scale + mask) V in passes: scores, row max, sum of exponentials, and the
// weighted sum of V divided by it as the CPU flash kernel does (acc * (1 / sum)).
Value flashAttention(OpCall& c) {
  const Value& q = c.tensor(0);
  const Value& k = c.tensor(1);
  const Value& v = c.tensor(2);
  if (q.type.rank() != 4 || k.type.rank() != 4 || v.type.rank() != 4) throw Unsupported("attention on tensors that are not 4-d");
  if (c.real(c.index("dropout_p")) != 0) throw Unsupported("attention dropout draws from PyTorch's random generator");
  bool causal = c.flag(c.index("is_causal"));
  const Value& mask = c.arg(c.index("attn_mask"));
  size_t si = c.index("scale");
  double scale = c.none(si) ? 0 : c.real(si);
  if (c.none(si)) {
    if (!q.type.dims[3].isStatic()) throw Unsupported("attention with a symbolic head size and no scale");
    scale = 1.0 / std::sqrt(static_cast<double>(q.type.dims[3].size));
  }
  DType ct = computeType(q.type.dtype);
  const Dim &B = q.type.dims[0], &H = q.type.dims[1], &L = q.type.dims[2], &S = k.type.dims[2];
  TensorType scoresT{ct, {B, H, L, S}}, rowT{ct, {B, H, L}};
  std::vector<std::string> p4(4, "parallel"), bhl = {"d0", "d1", "d2"};
  std::string raw = c.e.generic(scoresT, identity(4), {{q.ssa, q.type, {"d0", "d1", "d2", "d4"}}, {k.ssa, k.type, {"d0", "d1", "d3", "d4"}}},
                                {"parallel", "parallel", "parallel", "parallel", "reduction"}, [&](std::vector<std::string>& a) {
                                  Scalars s = c.e.scalars();
                                  return s.op("arith.addf", a[2], s.op("arith.mulf", s.cast(a[0], q.type.dtype, ct), s.cast(a[1], k.type.dtype, ct), ct), ct);
                                }, c.e.fill(scoresT, 0));
  std::vector<GenericInput> ins = {{raw, scoresT, identity(4)}};
  if (mask.isTensor()) {
    std::vector<std::string> m;
    for (size_t d = 0; d < mask.type.rank(); ++d) {
      size_t o = 4 - mask.type.rank() + d;
      const Dim& md = mask.type.dims[d];
      m.push_back(md.isStatic() && md.size == 1 && !(scoresT.dims[o].isStatic() && scoresT.dims[o].size == 1) ? "0" : "d" + std::to_string(o));
    }
    ins.push_back({mask.ssa, mask.type, m});
  }
  std::string scores = c.e.generic(scoresT, identity(4), ins, p4, [&](std::vector<std::string>& a) {
    Scalars s = c.e.scalars();
    std::string x = s.op("arith.mulf", a[0], s.constant(scale, ct), ct);
    std::string ninf = s.constant(-HUGE_VAL, ct);
    if (mask.isTensor() && mask.type.dtype == DType::Bool) x = s.select(a[1], x, ninf, ct);
    else if (mask.isTensor()) x = s.op("arith.addf", x, s.cast(a[1], mask.type.dtype, ct), ct);
    if (causal) {
      std::string above = c.e.fresh("above");
      c.e.line(above + " = arith.cmpi sgt, " + loopIndex(c.e, 3) + ", " + loopIndex(c.e, 2) + " : index");
      x = s.select(above, ninf, x, ct);
    }
    return x;
  });
  std::vector<std::string> reduceLast = {"parallel", "parallel", "parallel", "reduction"};
  std::string mx = c.e.generic(rowT, bhl, {{scores, scoresT, identity(4)}}, reduceLast, [&](std::vector<std::string>& a) {
    return c.e.scalars().op("arith.maximumf", a[0], a[1], ct);
  }, c.e.fill(rowT, -HUGE_VAL));
  // A row masked entirely keeps max -inf; subtracting 0 instead keeps exp(-inf) = 0, not nan.
  auto shifted = [&](Scalars& s, const std::string& x, const std::string& m) {
    std::string dead = s.cmp("oeq", m, s.constant(-HUGE_VAL, ct), ct);
    return s.unary("math.exp", s.op("arith.subf", x, s.select(dead, s.constant(0, ct), m, ct), ct), ct);
  };
  std::string sum = c.e.generic(rowT, bhl, {{scores, scoresT, identity(4)}, {mx, rowT, bhl}}, reduceLast, [&](std::vector<std::string>& a) {
    Scalars s = c.e.scalars();
    return s.op("arith.addf", a[2], shifted(s, a[0], a[1]), ct);
  }, c.e.fill(rowT, 0));
  TensorType outT = c.out(0).withDtype(ct);
  std::string acc = c.e.generic(outT, identity(4), {{scores, scoresT, {"d0", "d1", "d2", "d4"}}, {mx, rowT, bhl}, {v.ssa, v.type, {"d0", "d1", "d4", "d3"}}},
                                {"parallel", "parallel", "parallel", "parallel", "reduction"}, [&](std::vector<std::string>& a) {
                                  Scalars s = c.e.scalars();
                                  return s.op("arith.addf", a[3], s.op("arith.mulf", shifted(s, a[0], a[1]), s.cast(a[2], v.type.dtype, ct), ct), ct);
                                }, c.e.fill(outT, 0));
  std::string o = c.e.generic(c.out(0), identity(4), {{acc, outT, identity(4)}, {sum, rowT, bhl}}, p4, [&](std::vector<std::string>& a) {
    Scalars s = c.e.scalars();
    return s.cast(s.op("arith.mulf", a[0], s.op("arith.divf", s.constant(1, ct), a[1], ct), ct), ct, c.out(0).dtype);
  });
  std::string lse = c.e.generic(c.out(1), bhl, {{mx, rowT, bhl}, {sum, rowT, bhl}}, {"parallel", "parallel", "parallel"}, [&](std::vector<std::string>& a) {
    Scalars s = c.e.scalars();
    return s.cast(s.op("arith.addf", a[0], s.unary("math.log", a[1], ct), ct), ct, c.out(1).dtype);
  });
  return Value::list({Value::tensor(o, c.out(0)), Value::tensor(lse, c.out(1))});
}

// ---- sizes and scalars -------------------------------------------------------------------------

Value sizeScalar(Emitter& e, const std::vector<const Dim*>& dims) {
  int64_t known = 1;
  bool constant = true;
  for (const Dim* d : dims) constant = constant && d->isStatic(), known *= d->isStatic() ? d->size : 1;
  if (constant) return Value::integer(known);
  std::string v = e.index(1);
  for (const Dim* d : dims) v = ix(e, "arith.muli", v, e.sizeOf(*d));
  std::string i = e.fresh("sz");
  e.line(i + " = arith.index_cast " + v + " : index to i64");
  return Value::scalar(Value::Kind::Int, i);
}

std::string indexOf(Emitter& e, const Value& v) {
  if (v.isConst()) return e.index(static_cast<int64_t>(v.number));
  if (v.kind != Value::Kind::Int) throw Unsupported("a size that is not an integer");
  std::string i = e.fresh("iv");
  e.line(i + " = arith.index_cast " + v.ssa + " : i64 to index");
  return i;
}

// as_strided of a contiguous input: out[i...] = flat[offset + sum i_d * stride_d].
Value asStrided(OpCall& c) {
  const Value& x = c.tensor(0);
  const TensorType& out = c.out();
  const Value& strides = c.arg(2);
  if (strides.kind != Value::Kind::List || strides.items.size() != out.rank()) throw Unsupported("as_strided strides");
  std::vector<std::string> st;
  for (const Value& s : strides.items) st.push_back(indexOf(c.e, s));
  std::string offset = c.none(3) ? c.e.index(0) : indexOf(c.e, c.arg(3));
  std::string flat = x.ssa;
  TensorType flatT{x.type.dtype, {}};
  if (x.type.rank() > 0) {
    Dim n{1, ""};
    for (const Dim& d : x.type.dims) {
      if (!d.isStatic() || !n.isStatic()) n = Dim{-1, "dyn"};
      else n.size *= d.size;
    }
    flatT.dims.push_back(n);
    std::vector<std::string> all;
    for (size_t d = 0; d < x.type.rank(); ++d) all.push_back(std::to_string(d));
    flat = c.e.fresh("flat");
    c.e.line(flat + " = tensor.collapse_shape " + x.ssa + " [[" + join(all) + "]] : " + x.type.str() + " into " + flatT.str());
  }
  std::string name = c.e.generic(out, identity(out.rank()), {}, std::vector<std::string>(out.rank(), "parallel"), [&](std::vector<std::string>&) {
    std::string at = offset;
    for (size_t d = 0; d < out.rank(); ++d) at = ix(c.e, "arith.addi", at, ix(c.e, "arith.muli", loopIndex(c.e, d), st[d]));
    std::vector<std::string> idx;
    if (!flatT.dims.empty()) idx.push_back(at);
    return c.e.scalars().cast(extract(c.e, flat, flatT, idx), x.type.dtype, out.dtype);
  });
  return Value::tensor(name, out);
}

}  // namespace

void addIndexingOps(OpTable& t) {
  t["aten::embedding.default"] = embedding;
  t["aten::embedding_dense_backward.default"] = embeddingBackward;
  t["aten::gather.default"] = [](OpCall& c) {
    const Value& self = c.tensor(0);
    const Value& index = c.tensor(2);
    requireIntegerIndex(index.type);
    const TensorType& out = c.out();
    size_t r = out.rank(), dim = static_cast<size_t>(OpCall::dim(c.integer(1), self.type.rank()));
    if (self.type.rank() != r) throw Unsupported("gather with index and input of different ranks");
    std::vector<std::string> sizes = sizesOf(c.e, self.type);
    std::string name = c.e.generic(out, identity(r), {{index.ssa, index.type, identity(r)}}, std::vector<std::string>(r, "parallel"),
                                   [&](std::vector<std::string>& a) {
                                     std::vector<std::string> at;
                                     for (size_t d = 0; d < r; ++d)
                                       at.push_back(d == dim ? boundIndex(c.e, a[0], index.type.dtype, sizes[d], true) : loopIndex(c.e, d));
                                     return c.e.scalars().cast(extract(c.e, self.ssa, self.type, at), self.type.dtype, out.dtype);
                                   });
    return Value::tensor(name, out);
  };
  t["aten::index.Tensor"] = t["aten::_unsafe_index.Tensor"] = indexTensor;
  t["aten::index_put.default"] = t["aten::_unsafe_index_put.default"] = t["aten::index_put_.default"] = indexPut;
  t["aten::index_select.default"] = [](OpCall& c) {
    const Value& self = c.tensor(0);
    const Value& index = c.tensor(2);
    requireIntegerIndex(index.type);
    const TensorType& out = c.out();
    size_t r = out.rank(), dim = static_cast<size_t>(OpCall::dim(c.integer(1), self.type.rank()));
    if (self.type.rank() != r || index.type.rank() > 1) throw Unsupported("index_select shapes");
    std::vector<std::string> sizes = sizesOf(c.e, self.type), imap;
    if (r > 0 && index.type.rank() == 1) imap.push_back("d" + std::to_string(dim));
    std::string name = c.e.generic(out, identity(r), {{index.ssa, index.type, imap}}, std::vector<std::string>(r, "parallel"),
                                   [&](std::vector<std::string>& a) {
                                     std::vector<std::string> at;
                                     for (size_t d = 0; d < r; ++d)
                                       at.push_back(d == dim ? boundIndex(c.e, a[0], index.type.dtype, sizes[d], true) : loopIndex(c.e, d));
                                     return c.e.scalars().cast(extract(c.e, self.ssa, self.type, at), self.type.dtype, out.dtype);
                                   });
    return Value::tensor(name, out);
  };
  t["aten::scatter.src"] = t["aten::scatter.value"] = [](OpCall& c) { return scatter(c, ""); };
  t["aten::scatter_add.default"] = [](OpCall& c) { return scatter(c, "add"); };
  t["aten::index_add.default"] = indexAdd;
  t["aten::scatter.reduce"] = t["aten::scatter.value_reduce"] = [](OpCall& c) {
    const Value& r = c.arg(c.index("reduce"));
    if (r.kind != Value::Kind::Text || (r.text != "add" && r.text != "multiply")) throw Unsupported("scatter reduce '" + r.text + "'");
    return scatter(c, r.text);
  };
  t["aten::nll_loss_forward.default"] = nllForward;
  t["aten::nll_loss_backward.default"] = nllBackward;
  t["aten::as_strided.default"] = asStrided;
  t["aten::_scaled_dot_product_flash_attention_for_cpu.default"] = flashAttention;
  t["aten::sym_size.int"] = [](OpCall& c) {
    const Value& x = c.tensor(0);
    return sizeScalar(c.e, {&x.type.dims[static_cast<size_t>(OpCall::dim(c.integer(1), x.type.rank()))]});
  };
  t["aten::sym_numel.default"] = [](OpCall& c) {
    std::vector<const Dim*> dims;
    for (const Dim& d : c.tensor(0).type.dims) dims.push_back(&d);
    return sizeScalar(c.e, dims);
  };
  t["aten::sym_stride.int"] = [](OpCall& c) {  // the graph's values are contiguous
    const Value& x = c.tensor(0);
    std::vector<const Dim*> dims;
    for (size_t d = static_cast<size_t>(OpCall::dim(c.integer(1), x.type.rank())) + 1; d < x.type.rank(); ++d) dims.push_back(&x.type.dims[d]);
    return sizeScalar(c.e, dims);
  };
  t["aten::_local_scalar_dense.default"] = [](OpCall& c) {
    const Value& x = c.tensor(0);
    std::string v = extract(c.e, x.ssa, x.type, std::vector<std::string>(x.type.rank(), c.e.index(0)));
    Scalars s = c.e.scalars();
    if (isFloat(x.type.dtype)) return Value::scalar(Value::Kind::Float, s.cast(v, x.type.dtype, DType::F64));
    if (x.type.dtype == DType::Bool) return Value::scalar(Value::Kind::Bool, v);
    return Value::scalar(Value::Kind::Int, s.cast(v, x.type.dtype, DType::I64));
  };
}

}  // namespace dynrep::replay::lowering
