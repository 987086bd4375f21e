// Host values for the JIT: tensors and scalars read from samples or filled, and their comparison.
#include "host_value.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace dynrep::replay::lowering {

namespace {

float halfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

}  // namespace

size_t HostValue::numel() const {
  size_t n = 1;
  for (int64_t d : shape) n *= static_cast<size_t>(d);
  return n;
}

HostValue HostValue::tensor(DType dtype, std::vector<int64_t> shape) {
  HostValue v;
  v.kind = Kind::Tensor;
  v.dtype = dtype;
  v.shape = std::move(shape);
  v.data.assign(v.numel() * byteSize(dtype), 0);
  return v;
}

double HostValue::part(size_t i) const {
  if (!isComplex(dtype)) return element(i);
  const uint8_t* p = data.data() + i * byteSize(componentType(dtype));
  if (dtype == DType::C128) {
    double x;
    std::memcpy(&x, p, 8);
    return x;
  }
  float x;
  std::memcpy(&x, p, 4);
  return x;
}

double HostValue::element(size_t i) const {
  const uint8_t* p = data.data() + i * byteSize(dtype);
  switch (dtype) {
    case DType::C64:
    case DType::C128: return part(2 * i);
    case DType::F64: {
      double x;
      std::memcpy(&x, p, 8);
      return x;
    }
    case DType::F32: {
      float x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case DType::F16: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      return halfToFloat(x);
    }
    case DType::BF16: {
      uint16_t x;
      std::memcpy(&x, p, 2);
      uint32_t b = static_cast<uint32_t>(x) << 16;
      float f;
      std::memcpy(&f, &b, 4);
      return f;
    }
    case DType::I64: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return static_cast<double>(x);
    }
    case DType::I32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case DType::I16: {
      int16_t x;
      std::memcpy(&x, p, 2);
      return x;
    }
    case DType::I8: return static_cast<int8_t>(*p);
    case DType::U8: return *p;
    case DType::Bool: return *p != 0;
  }
  return 0;
}

std::string HostValue::describe() const {
  switch (kind) {
    case Kind::None: return "None";
    case Kind::Int: return "int " + std::to_string(integer);
    case Kind::Float: return "float " + std::to_string(real);
    case Kind::Bool: return integer ? "True" : "False";
    case Kind::Tensor: break;
  }
  std::string out = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

Comparison compare(const HostValue& got, const HostValue& want, double rtol, double atol) {
  Comparison c;
  if (got.kind != want.kind) return {"shape differs", 0};
  if (got.kind != HostValue::Kind::Tensor) {
    bool same =
        got.integer == want.integer && (got.real == want.real || (std::isnan(got.real) && std::isnan(want.real)));
    return {same ? "bitwise" : "differs",
            std::fabs(got.real - want.real + static_cast<double>(got.integer - want.integer))};
  }
  if (got.shape != want.shape) return {"shape differs", 0};
  if (got.dtype != want.dtype) return {"dtype differs", 0};
  if (got.data == want.data) return {"bitwise", 0};
  bool close = isFloat(got.dtype) || isComplex(got.dtype);
  if (got.dtype == DType::BF16 || got.dtype == DType::F16) {
    rtol = std::max(rtol, got.dtype == DType::BF16 ? 1.6e-2 : 1e-3);
    double scale = 0;
    for (size_t i = 0; i < want.numel(); ++i)
      if (std::isfinite(want.element(i))) scale = std::max(scale, std::fabs(want.element(i)));
    atol = std::max(atol, rtol * scale);
  }
  for (size_t i = 0; i < got.parts(); ++i) {
    double a = got.part(i), b = want.part(i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;  // equal infinities
    double diff = std::fabs(a - b);
    if (std::isnan(diff)) diff = INFINITY;
    c.maxAbsDiff = std::max(c.maxAbsDiff, diff);
    if (!(diff <= atol + rtol * std::fabs(b))) close = false;
  }
  c.status = close ? "close" : "differs";
  return c;
}

}  // namespace dynrep::replay::lowering
