// Operators whose result size is a count of the input's nonzero elements (nonzero, masked_select,
// indexing with a boolean mask). The count is a reduction at function level; it becomes the
// unbacked symbol the IR names for it (u0), so later sizes that mention u0 resolve. The result
// is then filled by one scf.for nest over the input in row-major order, carrying the result and
// how many elements it holds so far: PyTorch's order, exactly.
#include "indexing.h"

namespace dynrep::replay::lowering {

namespace {

// How many elements of `space` the mask (broadcast to it) holds nonzero, as an index. `cover`
// is read too, so that every loop of the reduction has an operand giving its size.
std::string countNonzero(Emitter& e, const Value& mask, const Value* cover, const TensorType& space) {
  TensorType total{DType::I64, {}};
  std::vector<GenericInput> ins{{mask.ssa, mask.type, broadcastMap(mask.type, space)}};
  if (cover) ins.push_back({cover->ssa, cover->type, broadcastMap(cover->type, space)});
  std::string sum = e.generic(
      total, {}, ins, Strings(space.rank(), "reduction"),
      [&](Strings& a) {
        Scalars s = e.scalars();
        std::string one = s.cast(s.cast(a[0], mask.type.dtype, DType::Bool), DType::Bool, DType::I64);
        return s.op("arith.addi", a.back(), one, DType::I64);
      },
      e.fill(total, 0));
  return e.toIndex(extract(e, sum, total, {}));
}

// The count as the size the IR gives it: an unbound plain symbol (nonzero's u0) is bound to it;
// a size already known is asserted equal, as PyTorch's own run would fail otherwise. Without a
// size from the IR (index_put's mask), a fresh internal symbol names it.
Dim sizeOfCount(Emitter& e, const std::string& count, const Dim* want, const std::string& what) {
  if (!want) {
    Dim fresh{-1, "mask_count" + e.fresh("").substr(1)};
    e.bindSymbol(fresh.expr, count);
    return fresh;
  }
  if (!want->isStatic() && Emitter::plainSymbol(want->expr) && !e.bound(want->expr)) {
    e.bindSymbol(want->expr, count);
    return *want;
  }
  std::string expected = e.sizeOf(*want);
  std::string text = want->isStatic() ? std::to_string(want->size) : want->expr;
  e.line("cf.assert " + e.indexCmp("eq", count, expected) + ", " +
         mlirString(what + ": the number of nonzero elements must be " + text));
  return *want;
}

// 1 when the element is nonzero, else 0, as an index.
std::string oneIf(Emitter& e, const std::string& hit) {
  return e.assign("one", "arith.select " + hit + ", " + e.index(1) + ", " + e.index(0) + " : index");
}

// `then` inside scf.if: the new tensor where `hit`, `acc` unchanged otherwise.
std::string insertIf(Emitter& e, const std::string& hit, const std::string& acc, const TensorType& t,
                     const std::function<std::string()>& then) {
  std::string r = e.fresh("put");
  e.open(r + " = scf.if " + hit + " -> (" + t.str() + ") {");
  e.line("scf.yield " + then() + " : " + t.str());
  e.label("} else {");
  e.line("scf.yield " + acc + " : " + t.str());
  e.close("}");
  return r;
}

// The coordinates of x's nonzero elements, row-major, into `init` ([rows, rank] int64): at most
// `limit` rows when given (nonzero_static), all of them otherwise (init holds exactly as many).
std::string fillNonzero(Emitter& e, const Value& x, const std::string& init, const TensorType& out,
                        const std::string& limit) {
  return loopNest(e, sizesOf(e, x.type), {init, e.index(0)}, {out.str(), "index"},
                  [&](const Strings& iv, const Strings& acc) {
                    Scalars s = e.scalars();
                    std::string hit = s.cast(extract(e, x.ssa, x.type, iv), x.type.dtype, DType::Bool);
                    std::string next = oneIf(e, hit);
                    if (!limit.empty()) hit = s.op("arith.andi", hit, e.indexCmp("slt", acc[1], limit), DType::Bool);
                    std::string row = insertIf(e, hit, acc[0], out, [&] {
                      std::string t = acc[0];
                      for (size_t d = 0; d < iv.size(); ++d)
                        t = insert(e, e.fromIndex(iv[d]), t, out, {acc[1], e.index(static_cast<int64_t>(d))});
                      return t;
                    });
                    return Strings{row, e.indexOp("arith.addi", acc[1], next)};
                  })[0];
}

// nonzero(x): [count, rank] int64, `rows` the IR's size for the count (null: none given).
Value nonzeroOf(Emitter& e, const Value& x, const Dim* rows, const std::string& what) {
  std::string count = countNonzero(e, x, nullptr, x.type);
  TensorType out{DType::I64, {sizeOfCount(e, count, rows, what), Dim{static_cast<int64_t>(x.type.rank()), ""}}};
  return Value::tensor(fillNonzero(e, x, e.empty(out), out, ""), out);
}

Value nonzero(OpCall& c) {
  const TensorType& out = c.out();
  if (out.rank() != 2) throw Unsupported("nonzero with a result that is not 2-d");
  return nonzeroOf(c.e, c.tensor(0), &out.dims[0], "nonzero");
}

// nonzero_static(x, size, fill_value): the first `size` coordinates, the rest fill_value.
Value nonzeroStatic(OpCall& c) {
  const Value& x = c.tensor(0);
  const TensorType& out = c.out();
  if (out.rank() != 2 || !out.dims[0].isStatic())
    throw Unsupported("nonzero_static with a result that is not [size, rank]");
  std::string init = c.e.fill(out, static_cast<double>(c.integer(c.index("fill_value"))));
  return Value::tensor(fillNonzero(c.e, x, init, out, c.e.index(out.dims[0].size)), out);
}

// The shape a and b broadcast to (right-aligned): each dim from whichever is not a static 1.
TensorType broadcastShape(const TensorType& a, const TensorType& b) {
  const TensorType& big = a.rank() >= b.rank() ? a : b;
  const TensorType& small = a.rank() >= b.rank() ? b : a;
  TensorType out = big;
  size_t lead = big.rank() - small.rank();
  for (size_t d = 0; d < small.rank(); ++d) {
    const Dim& s = small.dims[d];
    const Dim& g = big.dims[lead + d];
    if (g.isStatic() && g.size == 1) out.dims[lead + d] = s;
  }
  return out;
}

// t's coordinates where the broadcast space is at `iv`: a static 1 read at 0.
Strings broadcastAt(Emitter& e, const TensorType& t, const TensorType& space, const Strings& iv) {
  Strings at;
  Strings map = broadcastMap(t, space);
  size_t lead = space.rank() - t.rank();
  for (size_t m = 0; m < t.rank(); ++m) at.push_back(map[m] == "0" ? e.index(0) : iv[lead + m]);
  return at;
}

// masked_select(self, mask): self's elements where the mask is nonzero, both broadcast, row-major.
Value maskedSelect(OpCall& c) {
  const Value& self = c.tensor(0);
  const Value& mask = c.tensor(1);
  const TensorType& want = c.out();
  if (want.rank() != 1) throw Unsupported("masked_select with a result that is not 1-d");
  TensorType space = broadcastShape(self.type, mask.type);
  std::string count = countNonzero(c.e, mask, &self, space);
  TensorType out{want.dtype, {sizeOfCount(c.e, count, &want.dims[0], "masked_select")}};
  Strings sizes;
  for (const Dim& d : space.dims) sizes.push_back(c.e.sizeOf(d));
  Strings r = loopNest(c.e, sizes, {c.e.empty(out), c.e.index(0)}, {out.str(), "index"},
                       [&](const Strings& iv, const Strings& acc) {
                         Scalars s = c.e.scalars();
                         std::string m = extract(c.e, mask.ssa, mask.type, broadcastAt(c.e, mask.type, space, iv));
                         std::string hit = s.cast(m, mask.type.dtype, DType::Bool);
                         std::string put = insertIf(c.e, hit, acc[0], out, [&] {
                           std::string v = extract(c.e, self.ssa, self.type, broadcastAt(c.e, self.type, space, iv));
                           return insert(c.e, s.cast(v, self.type.dtype, out.dtype), acc[0], out, {acc[1]});
                         });
                         return Strings{put, c.e.indexOp("arith.addi", acc[1], oneIf(c.e, hit))};
                       });
  return Value::tensor(r[0], out);
}

bool isMask(const Value& v) { return v.isTensor() && (v.type.dtype == DType::Bool || v.type.dtype == DType::U8); }

}  // namespace

bool hasMaskIndex(const Value& indices) {
  if (indices.kind != Value::Kind::List) return false;
  for (const Value& v : indices.items)
    if (isMask(v)) return true;
  return false;
}

Value expandMaskIndex(Emitter& e, const Value& indices, const TensorType* result) {
  size_t at = indices.items.size(), tensors = 0;
  for (size_t i = 0; i < indices.items.size(); ++i) {
    if (!indices.items[i].isTensor()) continue;
    tensors++;
    if (isMask(indices.items[i])) at = i;
  }
  if (tensors != 1)
    throw Unsupported("a boolean mask index beside other index tensors (broadcast against its count) is not lowered");
  const Value& mask = indices.items[at];
  if (mask.type.rank() == 0) throw Unsupported("a 0-d boolean mask index is not lowered");
  // One mask and no other index tensor: its count takes the place of the mask's dims in the result.
  const Dim* rows = result && at < result->rank() ? &result->dims[at] : nullptr;
  Value nz = nonzeroOf(e, mask, rows, "a boolean mask index");
  const Dim& n = nz.type.dims[0];
  std::string length = n.isStatic() ? std::to_string(n.size) : e.sizeOf(n);
  TensorType column{DType::I64, {n}};
  std::vector<Value> items(indices.items.begin(), indices.items.begin() + static_cast<long>(at));
  for (size_t j = 0; j < mask.type.rank(); ++j) {
    std::string col = e.assign("col", "tensor.extract_slice " + nz.ssa + "[0, " + std::to_string(j) + "] [" + length +
                                          ", 1] [1, 1] : " + nz.type.str() + " to " + column.str());
    items.push_back(Value::tensor(col, column));
  }
  items.insert(items.end(), indices.items.begin() + static_cast<long>(at) + 1, indices.items.end());
  return Value::list(std::move(items));
}

void addDataDependentOps(OpTable& t) {
  t["aten::nonzero.default"] = nonzero;
  t["aten::nonzero_static.default"] = nonzeroStatic;
  t["aten::masked_select.default"] = maskedSelect;
}

}  // namespace dynrep::replay::lowering
