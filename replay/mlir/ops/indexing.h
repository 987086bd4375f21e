// What the lowerings that read tensors at computed coordinates share (indexing.cc, losses.cc):
// element reads and writes, and index values made safe to use.
#pragma once

#include "ops.h"

namespace dynrep::replay::lowering {

std::string extract(Emitter& e, const std::string& t, const TensorType& type, const Strings& at);  // tensor.extract
std::string insert(Emitter& e, const std::string& v, const std::string& t, const TensorType& type, const Strings& at);
Strings sizesOf(Emitter& e, const TensorType& t);
// Throws Unsupported for a mask (bool) or float index tensor.
void requireIntegerIndex(const Value& t);
// An element of an index tensor as an in-bounds index into a dim of `size` (negative ones
// wrapped when `wrap`, then clamped).
std::string boundIndex(Emitter& e, const std::string& v, DType t, const std::string& size, bool wrap);

}  // namespace dynrep::replay::lowering
