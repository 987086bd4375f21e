// What reads memory positions rather than values: as_strided and sym_stride. The lowering's
// tensors are row-major values; where a position matters, the layout the IR records for the
// input (its strides and storage offset) maps the position back to an element. In a dense
// layout (any permutation of a contiguous one, channels-last among them) storage position p
// holds the element j with j_d = ((p - offset) / stride_d) mod size_d, whatever the dims' order.
// A view's memory is its base's (Value::storage), so as_strided of a view reads the base.
#include <algorithm>
#include <map>
#include <optional>

#include "dynrep/replay/query/size_expr.h"
#include "indexing.h"

namespace dynrep::replay::lowering {

namespace {

struct Layout {
  std::vector<Dim> strides;
  Dim offset{0, ""};
};

std::string product(const std::vector<Dim>& dims, size_t from) {
  int64_t known = 1;
  std::string expr;
  for (size_t d = from; d < dims.size(); ++d) {
    if (dims[d].isStatic())
      known *= dims[d].size;
    else
      expr += (expr.empty() ? "" : "*") + ("(" + dims[d].expr + ")");
  }
  return expr.empty() ? "" : (known == 1 ? expr : std::to_string(known) + "*" + expr);
}

// The input's layout as the IR records it; row-major at offset 0 where it records none (graph
// IR format 1, and stores from before storage offsets were recorded).
Layout layoutOf(const Value& x) {
  const TensorType& t = x.type;
  Layout l;
  if (x.storageOffset) l.offset = *x.storageOffset;
  if (x.strides && x.strides->size() == t.rank()) {
    l.strides = *x.strides;
    return l;
  }
  for (size_t d = 0; d < t.rank(); ++d) {
    std::string expr = product(t.dims, d + 1);
    int64_t known = 1;
    for (size_t k = d + 1; k < t.rank(); ++k) known *= t.dims[k].isStatic() ? t.dims[k].size : 1;
    l.strides.push_back(expr.empty() ? Dim{known, ""} : Dim{-1, expr});
  }
  return l;
}

// A size argument as a Dim: a constant, or the expression the IR prints for it.
Dim argDim(const Value& v) {
  if (v.isConst()) return Dim{static_cast<int64_t>(v.number), ""};
  if (v.kind != Value::Kind::Int || v.sym.empty())
    throw Unsupported("as_strided with a size or stride the graph computes and prints no expression for");
  return Dim{-1, v.sym};
}

void symbolsOf(const SizeExpr& expr, std::map<std::string, int64_t>& into) {
  if (expr.kind == SizeExpr::Kind::Symbol) into.emplace(expr.name, 0);
  for (const SizeExpr& arg : expr.args) symbolsOf(arg, into);
}

// The values of `dims` with every symbol set to a distinct prime, rotated by `trial`: a
// relation between sizes that holds at three such points is taken to hold (they are sums and
// products of the symbols). Nothing when an expression does not evaluate.
std::optional<std::vector<int64_t>> atTrial(const std::vector<Dim>& dims, int trial) {
  static const int64_t kPrimes[] = {7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47};
  std::vector<std::optional<SizeExpr>> parsed;  // none for a static dim
  std::map<std::string, int64_t> symbols;
  for (const Dim& d : dims) {
    parsed.emplace_back();
    if (d.isStatic()) continue;
    Result<SizeExpr> tree = parseSizeExpr(d.expr);
    if (!tree.isOk()) return std::nullopt;
    symbolsOf(*tree, symbols);
    parsed.back() = std::move(*tree);
  }
  size_t i = 0;
  for (auto& [name, value] : symbols) value = kPrimes[(i++ * 5 + static_cast<size_t>(trial) * 3) % 12];
  std::vector<int64_t> out;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!parsed[d]) {
      out.push_back(dims[d].size);
      continue;
    }
    Result<int64_t> v = evaluate(*parsed[d], symbols);
    if (!v.isOk()) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

// Whether `sizes` at `strides` (from `offset`) cover exactly [offset, offset + numel), each
// position once, and every position the view of `outSizes` at `outStrides` from `outOffset`
// reads lies there.
bool denseAndInside(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides, int64_t offset,
                    const std::vector<int64_t>& outSizes, const std::vector<int64_t>& outStrides, int64_t outOffset) {
  std::vector<size_t> order;
  int64_t numel = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    numel *= sizes[d];
    if (sizes[d] > 1) order.push_back(d);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t expect = 1;
  for (size_t d : order) {
    if (strides[d] != expect) return false;
    expect *= sizes[d];
  }
  int64_t lo = outOffset, hi = outOffset;
  for (size_t d = 0; d < outSizes.size(); ++d) {
    if (outSizes[d] == 0) return true;  // reads nothing
    (outStrides[d] < 0 ? lo : hi) += (outSizes[d] - 1) * outStrides[d];
  }
  return lo >= offset && hi < offset + numel;
}

Value asStrided(OpCall& c) {
  // A view's storage is its base's: read from the base, whose layout holds its memory densely
  // where the view's (an expand, a narrow, a step) does not.
  const Value& view = c.tensor(0);
  const Value& x = view.storage ? *view.storage : view;
  const TensorType& out = c.out();
  const Value &sizes = c.arg(1), &strides = c.arg(2);
  if (strides.kind != Value::Kind::List || strides.items.size() != out.rank() || sizes.kind != Value::Kind::List)
    throw Unsupported("as_strided strides");
  Layout in = layoutOf(x);
  Dim outOffset = c.none(3) ? layoutOf(view).offset : argDim(c.arg(3));
  // Everything the check needs, in one list: input sizes, strides, offset; view sizes, strides, offset.
  std::vector<Dim> all = x.type.dims;
  all.insert(all.end(), in.strides.begin(), in.strides.end());
  all.push_back(in.offset);
  for (const Value& s : sizes.items) all.push_back(argDim(s));
  for (const Value& s : strides.items) all.push_back(argDim(s));
  all.push_back(outOffset);
  size_t r = x.type.rank(), o = out.rank();
  for (int trial = 0; trial < 3; ++trial) {
    std::optional<std::vector<int64_t>> v = atTrial(all, trial);
    if (!v) throw Unsupported("as_strided over sizes whose expressions do not evaluate");
    auto at = [&](size_t from, size_t n) { return std::vector<int64_t>(v->begin() + from, v->begin() + from + n); };
    if (!denseAndInside(at(0, r), at(r, r), (*v)[2 * r], at(2 * r + 1, o), at(2 * r + 1 + o, o),
                        (*v)[2 * r + 1 + 2 * o]))
      throw Unsupported("as_strided reads storage its input does not hold densely (the input's strides or storage "
                        "offset leave gaps, or the view reaches outside it): the values there are not in the graph");
    if (all.size() ==
        static_cast<size_t>(std::count_if(all.begin(), all.end(), [](const Dim& d) { return d.isStatic(); })))
      break;  // static: one evaluation is exact
  }
  Emitter& e = c.e;
  Strings viewStrides, inStrides, inSizes;
  for (const Value& s : strides.items) viewStrides.push_back(e.sizeOf(argDim(s)));
  for (size_t d = 0; d < r; ++d) {
    inStrides.push_back(e.indexOp("arith.maxui", e.sizeOf(in.strides[d]), e.index(1)));
    inSizes.push_back(e.dimSize(x.type, d));
  }
  std::string start = e.indexOp("arith.subi", e.sizeOf(outOffset), e.sizeOf(in.offset));
  std::string name = e.generic(out, loopDims(o), {}, Strings(o, "parallel"), [&](Strings&) {
    std::string p = start;
    for (size_t d = 0; d < o; ++d)
      p = e.indexOp("arith.addi", p, e.indexOp("arith.muli", e.loopIndex(d), viewStrides[d]));
    Strings j;
    for (size_t d = 0; d < r; ++d)
      j.push_back(e.indexOp("arith.remui", e.indexOp("arith.divui", p, inStrides[d]), inSizes[d]));
    return e.scalars().cast(extract(e, x.ssa, x.type, j), x.type.dtype, out.dtype);
  });
  return Value::tensor(name, out);
}

}  // namespace

void addStridedOps(OpTable& t) {
  t["aten::as_strided.default"] = asStrided;
  t["aten::sym_stride.int"] = [](OpCall& c) {
    const Value& x = c.tensor(0);
    size_t d = static_cast<size_t>(OpCall::dim(c.integer(1), x.type.rank()));
    Dim stride = layoutOf(x).strides[d];
    if (stride.isStatic()) return Value::integer(stride.size);
    Value v = Value::scalar(Value::Kind::Int, c.e.fromIndex(c.e.sizeOf(stride)));
    v.sym = stride.expr;
    return v;
  };
}

}  // namespace dynrep::replay::lowering
