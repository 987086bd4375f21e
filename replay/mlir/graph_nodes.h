// What both lowerings (linalg: to_linalg.cc, torch dialect: to_torch_dialect.cc) read the same way
// from a graph IR node: its MLIR location, its report when it is not lowered, the function name.
#pragma once

#include <string>

#include "dynrep/replay/mlir/lower.h"

namespace dynrep::replay::lowering {

// loc(fused<"node">["user_file.py":LINE:0, "module.path (Class)"]), or loc("node") without either.
std::string nodeLocation(const Node& node);

// The report for a node that was not lowered: its operator and schema, user line and scope.
NodeIssue nodeIssue(const Graph& ir, const Node& node, const std::string& message);

// aot_forward_graph -> forward (the lowered func.func's name).
std::string functionName(const std::string& event);

// `module attributes {dynrep.graph, dynrep.compile} {` and the function's opening line.
std::string moduleOpening(const LoweredGraph& g, const LowerOptions& options, const std::string& signature,
                          const std::string& resultTypes);

}  // namespace dynrep::replay::lowering
