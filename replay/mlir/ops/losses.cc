// Losses: nll_loss forward and backward over class indices, with weights, ignore_index and
// every reduction. (Other losses reach the lowering through their Core ATen decomposition.)
#include "indexing.h"

namespace dynrep::replay::lowering {

namespace {

// For target value t of sample n: loss -self[n, t] * w[t] and weight w[t], both 0 when t is
// ignore_index (whose row is not read: it may be out of range).
std::pair<std::string, std::string> nllTerm(OpCall& c, const std::string& target, const std::string& n,
                                            const std::string& classes, DType ct) {
  const Value& self = c.tensor(0);
  Scalars s = c.e.scalars();
  std::string t = s.cast(target, c.tensor(1).type.dtype, DType::I64);
  std::string ignored = s.cmp("eq", t, s.of(c.arg(4), DType::I64), DType::I64);
  std::string cls =
      boundIndex(c.e, s.select(ignored, s.constant(0, DType::I64), t, DType::I64), DType::I64, classes, false);
  Strings at = self.type.rank() == 2 ? Strings{n, cls} : Strings{cls};
  std::string x = s.cast(extract(c.e, self.ssa, self.type, at), self.type.dtype, ct), w = s.constant(1, ct);
  if (!c.none(2)) w = s.cast(extract(c.e, c.tensor(2).ssa, c.tensor(2).type, {cls}), c.tensor(2).type.dtype, ct);
  w = s.select(ignored, s.constant(0, ct), w, ct);
  return {s.unary("arith.negf", s.op("arith.mulf", x, w, ct), ct), w};
}

// (loss, total_weight): per sample (reduction 0), or sums, the loss divided by the total
// weight for mean (1).
Value nllForward(OpCall& c) {
  const Value& self = c.tensor(0);
  const Value& target = c.tensor(1);
  requireIntegerIndex(target);
  if (self.type.rank() < 1 || self.type.rank() > 2)
    throw Unsupported("nll_loss of a " + std::to_string(self.type.rank()) + "-d input");
  int64_t reduction = c.integer(3);
  DType ct = computeType(c.out(0).dtype);
  std::string classes = c.e.dimSize(self.type, self.type.rank() - 1);
  size_t n = self.type.rank() - 1;
  // A 1-d input is one sample: PyTorch's CPU kernel reads the target's first element whatever its
  // size, and every reduction gives that sample's loss and weight (mean divided by the weight).
  bool single = n == 0;
  GenericInput tin{target.ssa, target.type, single ? Strings(target.type.rank(), "0") : loopDims(target.type.rank())};
  if (reduction == 0 && !single) {
    const TensorType& out = c.out(0);
    std::string name = c.e.generic(out, loopDims(out.rank()), {tin}, Strings(out.rank(), "parallel"), [&](Strings& a) {
      return c.e.scalars().cast(nllTerm(c, a[0], n ? c.e.loopIndex(0) : "", classes, ct).first, ct, out.dtype);
    });
    return Value::list({Value::tensor(name, out), Value::tensor(c.e.fill(c.out(1), 0), c.out(1))});
  }
  if (reduction < 0 || reduction > 2) throw Unsupported("nll_loss reduction " + std::to_string(reduction));
  TensorType scalar{ct, {}};
  auto total = [&](bool weights) {
    return Value::tensor(c.e.generic(
                             scalar, {}, {tin}, Strings(n, "reduction"),
                             [&](Strings& a) {
                               auto term = nllTerm(c, a[0], n ? c.e.loopIndex(0) : "", classes, ct);
                               return c.e.scalars().op("arith.addf", a[1], weights ? term.second : term.first, ct);
                             },
                             c.e.fill(scalar, 0)),
                         scalar);
  };
  Value loss = total(false), weight = total(true);
  if (reduction == 1)
    loss = c.e.elementwise(scalar, {loss, weight}, ct,
                           [&](Scalars& s, Strings& v) { return s.op("arith.divf", v[0], v[1], ct); });
  return Value::list({c.e.convert(loss, c.out(0).dtype), c.e.convert(weight, c.out(1).dtype)});
}

// grad_input[n, c] = weight[t] * -(grad, / total_weight for mean) where c == t != ignore_index;
// for a 1-d input, t and grad are the first elements of target and grad_output.
Value nllBackward(OpCall& c) {
  const Value& grad = c.tensor(0);
  const Value& target = c.tensor(2);
  const Value& total = c.tensor(6);
  requireIntegerIndex(target);
  int64_t reduction = c.integer(4);
  const TensorType& out = c.out();
  size_t r = out.rank();
  if (r < 1 || r > 2) throw Unsupported("nll_loss_backward of a " + std::to_string(r) + "-d input");
  DType ct = computeType(out.dtype);
  std::string classes = c.e.dimSize(c.tensor(1).type, r - 1);
  // A 1-d input is one sample: PyTorch's CPU kernel reads the first element of the target and of
  // the gradient whatever their sizes and the reduction (a target of several elements is not
  // refused there), so the lowering reads them too.
  bool batched = r == 2;
  std::vector<GenericInput> ins = {
      {target.ssa, target.type, batched ? loopDims(target.type.rank()) : Strings(target.type.rank(), "0")},
      {grad.ssa, grad.type, reduction == 0 && batched ? loopDims(grad.type.rank()) : Strings(grad.type.rank(), "0")},
      {total.ssa, total.type, Strings(total.type.rank(), "0")}};
  std::string name = c.e.generic(out, loopDims(r), ins, Strings(r, "parallel"), [&](Strings& a) {
    Scalars s = c.e.scalars();
    std::string t = s.cast(a[0], target.type.dtype, DType::I64), col = c.e.fromIndex(c.e.loopIndex(r - 1));
    std::string hit = s.op("arith.andi", s.cmp("eq", t, col, DType::I64),
                           s.cmp("ne", t, s.of(c.arg(5), DType::I64), DType::I64), DType::Bool);
    std::string g = s.cast(a[1], grad.type.dtype, ct);
    if (reduction == 1) g = s.op("arith.divf", g, s.cast(a[2], total.type.dtype, ct), ct);
    g = s.unary("arith.negf", g, ct);
    if (!c.none(3)) {
      std::string cls =
          boundIndex(c.e, s.select(hit, t, s.constant(0, DType::I64), DType::I64), DType::I64, classes, false);
      g = s.op("arith.mulf", s.cast(extract(c.e, c.tensor(3).ssa, c.tensor(3).type, {cls}), c.tensor(3).type.dtype, ct),
               g, ct);
    }
    return s.cast(s.select(hit, g, s.constant(0, ct), ct), ct, out.dtype);
  });
  return Value::tensor(name, out);
}

}  // namespace

void addLossOps(OpTable& t) {
  t["aten::nll_loss_forward.default"] = nllForward;
  t["aten::nll_loss_backward.default"] = nllBackward;
}

}  // namespace dynrep::replay::lowering
