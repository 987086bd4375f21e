#include "prims.h"

#include <map>

#include <ATen/ATen.h>

namespace dynrep::replay::run {

namespace {

// prims.iota(length, *, start, step, dtype, device, requires_grad): start + step * [0, length).
c10::IValue iota(const std::vector<c10::IValue>& a) {
  int64_t length = a.at(0).toInt(), start = a.at(1).toInt(), step = a.at(2).toInt();
  at::TensorOptions options = at::TensorOptions().dtype(a.at(3).toScalarType()).device(a.at(4).toDevice());
  return at::arange(start, start + step * length, step, options);
}

// prims.convert_element_type(a, dtype).
c10::IValue convertElementType(const std::vector<c10::IValue>& a) {
  return a.at(0).toTensor().to(a.at(1).toScalarType());
}

// prims.broadcast_in_dim(a, shape, broadcast_dimensions): a's dims land at the given positions.
c10::IValue broadcastInDim(const std::vector<c10::IValue>& a) {
  at::Tensor t = a.at(0).toTensor();
  std::vector<int64_t> shape = a.at(1).toIntVector(), dims = a.at(2).toIntVector();
  std::vector<int64_t> view(shape.size(), 1);
  for (size_t i = 0; i < dims.size(); ++i) view[dims[i]] = t.size(static_cast<int64_t>(i));
  return t.reshape(view).expand(shape);
}

}  // namespace

Primitive findPrimitive(const std::string& target) {
  static const std::map<std::string, Primitive> kPrimitives = {
      {"prims::iota.default", iota},
      {"prims::convert_element_type.default", convertElementType},
      {"prims::broadcast_in_dim.default", broadcastInDim},
  };
  auto it = kPrimitives.find(target);
  return it == kPrimitives.end() ? nullptr : it->second;
}

}  // namespace dynrep::replay::run
