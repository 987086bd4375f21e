// Re-lowering a stored aten graph (graph IR format 2) to MLIR, without PyTorch: the torch
// dialect as torch-mlir's FX importer writes it, or linalg-on-tensors (with tensor, arith, math,
// scf) that MLIR verifies, lowers to LLVM and runs (engine.h, check.h).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dynrep/replay/query/graph_ir.h"

namespace dynrep::replay::lowering {

enum class Dialect { Torch, Linalg, LLVM };

// A node that was not lowered (an operator without a lowering, an argument it does not take).
struct NodeIssue {
  std::string node, op, schema, message;
  std::string line;   // the user's line: file:line  code
  std::string scope;  // module path (class)
};

// A custom-op library: func.func definitions named after operators ("mylib::rms_norm.default",
// or an aten op to override its built-in lowering), with their signatures as MLIR types.
struct LibraryFunction {
  std::vector<std::string> argTypes, resultTypes;
};
struct Library {
  std::string text;  // the module's body, appended to each lowered module and inlined
  std::map<std::string, LibraryFunction> functions;
};

struct LowerOptions {
  Dialect dialect = Dialect::Linalg;
  const Library* library = nullptr;
  // Final ranges of the compile's symbols ("s0" -> [2, 64]); the lowered function checks them at entry.
  std::map<std::string, std::pair<int64_t, int64_t>> ranges;
  std::string compileId;
  // Graph constants (get_attr targets) -> their raw bytes, from the store; printed as dense
  // literals. A constant without bytes is reported.
  std::map<std::string, std::string> constants;
};

// One input or output of the lowered function, in graph order.
struct Port {
  std::string name;         // placeholder node, or the output position
  std::string type;         // MLIR type: tensor<?x4xf32>, i64
  ValueMeta meta;           // the IR's description (inputs); outputs: a tensor's dtype alone
  int result = -1;          // outputs: the function result it is, -1 for a None output
  std::string random = {};  // inputs: the node that draws random numbers whose output this is (random_ops.h)
  size_t randomOutput = 0;
};

struct LoweredGraph {
  std::string event;              // aot_forward_graph
  std::string function;           // forward, backward, inference
  std::string text;               // the MLIR module
  int nodes = 0;                  // call_function nodes
  std::vector<NodeIssue> issues;  // empty: every node lowered
  std::vector<Port> inputs, outputs;
  bool complete() const { return issues.empty(); }
};

// Lowers one graph IR: what the graph holds but cannot be lowered is in the result's issues; an
// error result only for a graph of IR format 1 (NotSupported, without schemas) or a lowering
// that failed outside every node (InvalidArgument, with the reason).
Result<LoweredGraph> lowerGraph(const Graph& ir, const LowerOptions& options);

}  // namespace dynrep::replay::lowering
