// PyTorch primitives (prims::) that AOTAutograd's and Inductor's decompositions leave in aten
// graphs. PyTorch registers them from Python (torch._prims), so libtorch alone has no kernel;
// the runner computes the common ones with aten calls, as their Python definitions do.
#pragma once

#include <string>
#include <vector>

#include <ATen/core/ivalue.h>

namespace dynrep::replay::run {

// Arguments in the stored schema's order; returns the node's value.
using Primitive = c10::IValue (*)(const std::vector<c10::IValue>& args);

// The implementation of `prims::name.overload`, or null when the runner has none.
Primitive findPrimitive(const std::string& target);

}  // namespace dynrep::replay::run
