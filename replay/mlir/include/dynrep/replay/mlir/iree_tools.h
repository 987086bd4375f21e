// Where IREE's command-line tools are (iree-base-compiler and iree-base-runtime, from PyPI):
// replay-mlir finds them and hands their paths to the commands that compile or run through
// IREE (replay/mlir/iree.h).
#pragma once

#include <string>
#include <vector>

namespace dynrep::replay::lowering {

// What to install where a tool is missing; messages name it.
extern const char kIreeInstall[];

struct IreeTools {
  std::string compile, run, benchmark;  // paths; empty where not found
  bool found() const { return !compile.empty() && !run.empty() && !benchmark.empty(); }
  // Which of them are missing and how to get them; "" when all are there.
  std::string missing() const;
};
// Each tool from `folders` (the package's own), then PATH; only from $DYNREP_IREE_TOOLS (a
// folder) where that is set.
IreeTools findIree(const std::vector<std::string>& folders);

}  // namespace dynrep::replay::lowering
