// aten implementations of the prims:: operators decompositions leave in stored graphs.
#include "prims.h"

#include <cstdint>
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

// prims.fma(a, b, c): a * b + c.
c10::IValue fma(const std::vector<c10::IValue>& a) {
  return a.at(0).toTensor() * a.at(1).toTensor() + a.at(2).toTensor();
}

// An int[] argument, however the runner resolved it (a list, or a tuple of ints).
std::vector<int64_t> intList(const c10::IValue& v) {
  if (v.isIntList()) return v.toIntVector();
  std::vector<int64_t> out;
  for (const c10::IValue& item : v.toTupleRef().elements()) out.push_back(item.toInt());
  return out;
}

// Inductor's random prims, as their Python definitions (torch/_inductor/inductor_prims.py)
// compute them eagerly: from the default generator, not from the seed.
c10::IValue inductorSeeds(const std::vector<c10::IValue>& a) {
  return at::randint(INT64_MAX, {a.at(0).toInt()}, at::TensorOptions().dtype(at::kLong));
}
c10::IValue inductorLookupSeed(const std::vector<c10::IValue>& a) {
  return a.at(0).toTensor()[a.at(1).toInt()].clone();
}
c10::IValue inductorRandom(const std::vector<c10::IValue>& a) {
  std::vector<int64_t> size = intList(a.at(0));
  at::TensorOptions options = at::TensorOptions().dtype(at::kFloat);
  return a.at(2).toStringRef() == "randn" ? at::randn(size, options) : at::rand(size, options);
}
c10::IValue inductorRandint(const std::vector<c10::IValue>& a) {
  return at::randint(a.at(0).toInt(), a.at(1).toInt(), intList(a.at(2)), at::TensorOptions().dtype(at::kLong));
}

}  // namespace

Primitive findPrimitive(const std::string& target) {
  static const std::map<std::string, Primitive> kPrimitives = {
      {"prims::iota.default", iota},
      {"prims::convert_element_type.default", convertElementType},
      {"prims::broadcast_in_dim.default", broadcastInDim},
      {"prims::fma.default", fma},
      {"prims::inductor_seeds.default", inductorSeeds},
      {"prims::inductor_lookup_seed.default", inductorLookupSeed},
      {"prims::inductor_random.default", inductorRandom},
      {"prims::inductor_randint.default", inductorRandint},
  };
  auto it = kPrimitives.find(target);
  return it == kPrimitives.end() ? nullptr : it->second;
}

}  // namespace dynrep::replay::run
