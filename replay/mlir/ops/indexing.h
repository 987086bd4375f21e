// What the lowerings that read tensors at computed coordinates share (indexing.cc, losses.cc):
// element reads and writes, and index values made safe to use.
#pragma once

#include "ops.h"

namespace dynrep::replay::lowering {

std::string extract(Emitter& e, const std::string& t, const TensorType& type, const Strings& at);  // tensor.extract
std::string insert(Emitter& e, const std::string& v, const std::string& t, const TensorType& type, const Strings& at);
Strings sizesOf(Emitter& e, const TensorType& t);
// Index lists (index, index_put) with a boolean mask (data_dependent.cc): PyTorch reads a mask
// of rank k as the k int64 index tensors nonzero(mask) splits into, and so does the lowering.
// `result` is index's result type, whose dim at the mask's place is the count (null for
// index_put); a mask beside other index tensors throws Unsupported.
bool hasMaskIndex(const Value& indices);
Value expandMaskIndex(Emitter& e, const Value& indices, const TensorType* result);
// Throws Unsupported for a bool or float index tensor (uint8 is an integer index here; only
// index and index_put read it as a mask).
void requireIntegerIndex(const Value& t);
// An element of an index tensor as an in-bounds index into a dim of `size` (negative ones
// wrapped when `wrap`, then clamped).
std::string boundIndex(Emitter& e, const std::string& v, DType t, const std::string& size, bool wrap);
// Nested scf.for loops over `sizes` (index values), the first outermost, carrying `init` (values
// of the MLIR types `types`); the body gets the induction variables and the carried values and
// returns the next ones. Returns the values after the last iteration.
using LoopBody = std::function<Strings(const Strings& ivs, const Strings& carried)>;
Strings loopNest(Emitter& e, const Strings& sizes, const Strings& init, const Strings& types, const LoopBody& body);

}  // namespace dynrep::replay::lowering
