// lower-check: every aten graph of a store lowered to linalg, verified, run by MLIR's JIT (or
// compiled and run by IREE) on the stored samples (or on random inputs at other sizes, against
// replay-run) and compared.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "dynrep/replay/mlir/iree_tools.h"
#include "dynrep/replay/mlir/lower.h"
#include "dynrep/replay/query/job.h"

namespace dynrep::replay::lowering {

struct CheckOptions {
  const Library* library = nullptr;
  std::map<std::string, int64_t> sizes;  // run at these symbol values, against replay-run
  std::string runner;                    // replay-run's path (for sizes)
  std::string store;                     // the store's path (for replay-run)
  uint64_t seed = 0;
  double rtol = 1e-3, atol = 1e-5;
  // What runs the module: "jit" (MLIR's ExecutionEngine, in this process) or "iree" (IREE's
  // compiler and CPU runtime, iree.h: the tools' paths).
  std::string runtime = "jit";
  IreeTools iree;
  bool timeCalls = false;  // also measure the time of one call (GraphCheck::callSeconds)
};

struct OutputMatch {
  int position = 0;
  // bitwise, close, differs, shape differs, dtype differs, uninitialized (an empty tensor: shape checked)
  std::string status;
  double maxAbsDiff = 0;
};

// How far a graph got, or where it stopped; its name is what lower-check prints.
enum class CheckStage {
  Lowered,           // lowered; stopped before verification (a store or lowering error)
  NotLowered,        // some nodes have no lowering
  UnsupportedValue,  // an input or output of a kind the lowering cannot represent
  NotVerified,       // MLIR does not parse or verify the module
  NotCompiled,       // the JIT (or IREE) could not compile it
  Static,            // none of its inputs has the sizes asked for: not run
  Executed,          // ran; nothing to compare with, or stopped while comparing
  Differs,           // an output differs from the reference
  Matched,           // every output matches
};
// "lowered", "not lowered", "unsupported value", ..., "matched".
const char* stageName(CheckStage stage);

struct GraphCheck {
  std::string compile, event;
  std::string opset = "aten";  // the graph lowered: "aten" as stored, or its "core_aten" decomposition
  std::string opsetReason;     // why the decomposition was lowered, or why it could not be
  int nodes = 0;
  std::map<std::string, int> operators;  // target -> nodes calling it
  std::vector<NodeIssue> issues;         // nodes not lowered
  CheckStage stage = CheckStage::Lowered;
  Status error;           // why it stopped: a verifier or JIT diagnostic, a missing sample; ok when it did not
  std::string reference;  // what the outputs were compared with, when not the stored samples
  std::vector<OutputMatch> outputs;
  std::string runtime = "jit";  // what ran it: "jit" or "iree"
  // jitSeconds: the runtime's compile (MLIR's JIT, or iree-compile); runSeconds: the first call
  // (iree-run-module's whole process); callSeconds: one call, median (timeCalls; 0 otherwise).
  double lowerSeconds = 0, verifySeconds = 0, jitSeconds = 0, runSeconds = 0, callSeconds = 0;
  bool matched() const { return stage == CheckStage::Matched; }
};

std::vector<GraphCheck> checkStore(const Job& job, const CheckOptions& options);
// One graph of a compile ("aot_forward_graph", ...): a backward graph runs its forward first.
GraphCheck checkGraph(const Job& job, const Compile& compile, const std::string& event, const CheckOptions& options);

// The ranges of a compile's symbols, for the entry checks ("s0" -> [2, 64]); the symbol table's
// read error when it cannot be read.
using SymbolRanges = std::map<std::string, std::pair<int64_t, int64_t>>;
Result<SymbolRanges> symbolRanges(const Job& job, const Compile& compile);

// The bytes of a graph's constants, read from the store; the error naming the first constant
// that cannot be read or has another size than the graph says.
Result<std::map<std::string, std::string>> constantBytes(const Job& job, const Graph& ir);

// A stored graph lowered: the aten graph as AOTAutograd made it, or, where one of its nodes
// has no lowering, the Core ATen decomposition capture stored beside it (capture/core_aten.py),
// when that lowers with fewer nodes left out. Per graph, not per node: the two graphs' nodes do
// not correspond one to one.
struct ChosenGraph {
  Graph ir;
  LoweredGraph lowered;
  std::string opset = "aten";
  std::string reason;  // why core_aten was taken, or why it could not be (empty: not needed)
};
Result<ChosenGraph> lowerStoredGraph(const Job& job, const Compile& compile, const std::string& event,
                                     const LowerOptions& options);
// checkGraph of a graph lowerStoredGraph already lowered (with options.library and the compile's
// symbol ranges), without lowering it again: `mlir` lowers once, checks that module, prints it.
GraphCheck checkLowered(const Job& job, const Compile& compile, const std::string& event, ChosenGraph lowered,
                        const CheckOptions& options);

// The graph IR of a compile (graph "forward", "backward", "inference" or an event name) with its
// event; NotFound naming what the compile has, or the reason its IR does not parse.
Result<std::pair<std::string, Graph>> graphIr(const Job& job, const Compile& compile, const std::string& graph);

}  // namespace dynrep::replay::lowering
