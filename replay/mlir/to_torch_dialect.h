// The torch dialect form of a graph, as torch-mlir's FX importer writes it (to_torch_dialect.cc).
#pragma once

#include "dynrep/replay/mlir/lower.h"

namespace dynrep::replay::lowering {

LoweredGraph lowerTorchDialect(const Graph& ir, const LowerOptions& options);

}  // namespace dynrep::replay::lowering
