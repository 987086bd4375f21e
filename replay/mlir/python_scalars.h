// The Python functions aten graphs call on symbolic scalars (sizes and what is computed from
// them): operator's arithmetic, comparisons and bit operations, math's rounding, the
// torch.sym_* functions.
#pragma once

#include <string>
#include <vector>

#include "emitter.h"

namespace dynrep::replay::lowering {

// `target` ("_operator.pow", "math.floor", "torch.sym_max") applied to `args` as Python does it,
// giving a value of `result` kind (the IR's: Int, Float or Bool). Constants are folded. Throws
// Unsupported for a function not lowered.
Value pythonScalar(Emitter& e, const std::string& target, const std::vector<Value>& given, Value::Kind result);

}  // namespace dynrep::replay::lowering
