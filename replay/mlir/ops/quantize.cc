// Fake quantization (QAT's observers): each value rounded to its quantized level and back, with
// the mask of values inside [quant_min, quant_max] that the backward reads. As PyTorch's CPU
// kernel computes it: q = zero_point + nearbyint(x * (1.0f / scale)) (half to even), clamped,
// then (q - zero_point) * scale; the mask compares q before the clamp.
#include "ops.h"

namespace dynrep::replay::lowering {

namespace {

// Where scale and zero point come from: constants, or tensors read at `map` (one element, or
// one per channel along an axis).
struct QParams {
  Value scale, zeroPoint;
  Strings map;
};

// (output, mask) of x quantized by `q` into [lo, hi]; `enabled` (a one-element tensor, or
// empty) switches quantization off when below 1, as the tensor-qparams variant does.
Value fakeQuantize(OpCall& c, const QParams& q, int64_t lo, int64_t hi, const Value* enabled) {
  const Value& x = c.tensor(0);
  size_t r = x.type.rank();
  if (!isFloat(x.type.dtype)) throw Unsupported("fake quantization of a non-float tensor");
  DType ct = computeType(x.type.dtype);
  std::vector<GenericInput> ins = {{x.ssa, x.type, loopDims(r)}};
  for (const Value* t : {&q.scale, &q.zeroPoint})
    if (t->isTensor()) ins.push_back({t->ssa, t->type, q.map});
  if (enabled) ins.push_back({enabled->ssa, enabled->type, Strings(enabled->type.rank(), "0")});
  auto compute = [&](bool mask) {
    const TensorType& out = c.out(mask ? 1 : 0);
    return c.e.generic(out, loopDims(r), ins, Strings(r, "parallel"), [&](Strings& a) {
      Scalars s = c.e.scalars();
      size_t next = 1;
      auto read = [&](const Value& v, DType as) {
        return v.isTensor() ? s.cast(a[next++], v.type.dtype, as) : s.of(v, as);
      };
      std::string scale = read(q.scale, DType::F32), zp = read(q.zeroPoint, DType::I64);
      std::string inv = s.op("arith.divf", s.constant(1, DType::F32), scale, DType::F32);
      std::string v = s.cast(a[0], x.type.dtype, ct);
      std::string qf = s.unary("math.roundeven", s.op("arith.mulf", v, s.cast(inv, DType::F32, ct), ct), ct);
      qf = s.op("arith.addf", s.cast(zp, DType::I64, ct), qf, ct);
      std::string result;
      if (mask) {
        result = s.op("arith.andi", s.cmp("oge", qf, s.constant(static_cast<double>(lo), ct), ct),
                      s.cmp("ole", qf, s.constant(static_cast<double>(hi), ct), ct), DType::Bool);
      } else {
        std::string clamped = s.op("arith.minimumf",
                                   s.op("arith.maximumf", s.cast(qf, ct, DType::F64),
                                        s.constant(static_cast<double>(lo), DType::F64), DType::F64),
                                   s.constant(static_cast<double>(hi), DType::F64), DType::F64);
        std::string level = s.op("arith.subi", s.cast(clamped, DType::F64, DType::I64), zp, DType::I64);
        result =
            s.cast(s.op("arith.mulf", s.cast(level, DType::I64, ct), s.cast(scale, DType::F32, ct), ct), ct, out.dtype);
      }
      if (enabled) {
        std::string on = s.cmp("oge", read(*enabled, DType::F64), s.constant(1, DType::F64), DType::F64);
        result = s.select(on, result, mask ? s.constant(1, DType::Bool) : a[0], out.dtype);
      }
      return result;
    });
  };
  return Value::list({Value::tensor(compute(false), c.out(0)), Value::tensor(compute(true), c.out(1))});
}

Value perTensor(OpCall& c) { return fakeQuantize(c, {c.arg(1), c.arg(2), {}}, c.integer(3), c.integer(4), nullptr); }

Value perTensorTensorQParams(OpCall& c) {
  const Value &scale = c.tensor(1), &zp = c.tensor(2);
  return fakeQuantize(c, {scale, zp, Strings(scale.type.rank(), "0")}, c.integer(4), c.integer(5), &c.tensor(3));
}

Value perChannel(OpCall& c) {
  const Value &x = c.tensor(0), &scale = c.tensor(1), &zp = c.tensor(2);
  if (isFloat(zp.type.dtype)) throw Unsupported("per-channel fake quantization with a float zero point");
  int64_t axis = OpCall::dim(c.integer(3), x.type.rank());
  return fakeQuantize(c, {scale, zp, {"d" + std::to_string(axis)}}, c.integer(4), c.integer(5), nullptr);
}

}  // namespace

void addQuantizeOps(OpTable& t) {
  t["aten::fake_quantize_per_tensor_affine_cachemask.default"] = perTensor;
  t["aten::_fake_quantize_per_tensor_affine_cachemask_tensor_qparams.default"] = perTensorTensorQParams;
  t["aten::fake_quantize_per_channel_affine_cachemask.default"] = perChannel;
}

}  // namespace dynrep::replay::lowering
