// The generic-building pieces reductions and normalizations share (ops/reduction.cc): operands
// read through broadcast or keepdim maps, pointwise and reducing linalg.generics, element
// counts and two-pass statistics.
#pragma once

#include "ops.h"

namespace dynrep::replay::lowering::reduction {

struct Operand {
  Value v;
  Strings map;  // its indexing map over the loops of the generic it feeds
};
using Body = std::function<std::string(Scalars&, Strings&)>;
using Combine = std::function<std::string(Scalars&, Strings&, const std::string&)>;

// v read in the loops of `space`, broadcast as PyTorch does.
Operand over(const Value& v, const TensorType& space);
// A keepdim statistic read in the loops of the result of the same reduction with `keepdim`.
Operand kept(const Value& v, const std::vector<bool>& red, bool keepdim);
TensorType reducedType(const TensorType& space, const std::vector<bool>& red, bool keepdim, DType t);
// The largest (max) or lowest value of t as a constant: ±inf for a float, the integer limits
// spelled exactly (a double cannot carry int64's), true or false for bool.
std::string limit(Emitter& e, DType t, bool max);
// A parallel generic over `out`: operands converted to `compute`, the body's value to out's dtype.
Value pointwise(Emitter& e, const TensorType& out, const std::vector<Operand>& ins, DType compute, const Body& body);
Value squeeze(Emitter& e, const Value& keep, const std::vector<bool>& red);
// Reduces `red` dims of `space` from `init`, combining each element (in `compute`) into `acc`.
Value reduce(Emitter& e, const TensorType& space, const std::vector<Operand>& ins, const std::vector<bool>& red,
             bool keepdim, DType compute, DType acc, double init, const Combine& combine);
// How many elements each output element reduces, as a float of type f (sizes read at run time).
std::string count(Emitter& e, const TensorType& space, const std::vector<bool>& red, DType f);
Value meanOf(Emitter& e, const Value& x, const std::vector<bool>& red, DType t, const std::string& n);
Value squaredDeviations(Emitter& e, const Value& x, const Value& meanKeep, const std::vector<bool>& red, bool keepdim,
                        DType t);

}  // namespace dynrep::replay::lowering::reduction
