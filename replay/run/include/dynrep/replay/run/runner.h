// The graph runner: executes a stored aten graph's IR through libtorch's dispatcher, one boxed
// call per node built from the operator's schema, without Python. The only C++ that links
// PyTorch (replay-inspect stays free of it and hands `run` to replay-run).
// Thread-safety: runGraph is reentrant; libtorch's own state (seeds, threads) is process-wide.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dynrep/replay/query/job.h"

namespace dynrep::replay::run {

enum class InputSource { Samples, Random };

struct RunOptions {
  std::string graph = "forward";  // forward | backward | inference | dynamo, or an event name
  InputSource inputs = InputSource::Samples;
  std::map<std::string, int64_t> sizes;  // symbol -> value, for random inputs ("s0" -> 7)
  uint64_t seed = 0;
  double rtol = 1e-4, atol = 1e-5;     // float outputs against the stored ones; exact otherwise
  int repeat = 1;                      // calls to time; the first one's outputs are checked
  std::vector<std::string> libraries;  // shared libraries registering custom operators
  std::string dumpPath;                // where to write (inputs, outputs) as tuples (torch.load reads it)
  std::string rawDumpPath;             // the same as a tensor file (query/tensor_file.h), for tools without torch
};

// The node a run stopped at, with where it came from in the user's code.
struct NodeFailure {
  std::string node, op, location, scope, message;
};

struct OutputCheck {
  int position = 0;
  std::string status;  // "bitwise", "close", "differs", "not stored", "shape differs"
  double maxAbsDiff = 0;
};

struct RunReport {
  std::string compileId, graph;          // graph: the trace event, e.g. aot_forward_graph
  std::string inputs;                    // "samples" or "random (seed 0)"
  std::map<std::string, int64_t> sizes;  // the value each symbol had in this run
  // Inputs the capture described but did not store (over the sample cap), filled with seeded
  // random values; the outputs are then checked against a second run, not the stored ones.
  std::vector<std::string> filled;
  int nodes = 0, calls = 0;
  std::vector<OutputCheck> outputs;
  std::optional<NodeFailure> failure;
  double medianSeconds = 0;
  bool ok() const;
};

// "samples", or "random (seed 0)": the inputs a run with `options` takes, as its report names them.
std::string inputsDescription(const RunOptions& options);

// Runs one graph of a compile; the report says how the nodes ran and the outputs compared. A
// failed Status for a problem outside the nodes: no such compile or graph, no samples, sizes it
// does not have, a dump that cannot be written.
Result<RunReport> runGraph(const Job& job, const std::string& compileId, const RunOptions& options);

}  // namespace dynrep::replay::run
