// replay-inspect mlir and lower-check, and replay-mlir lower-ir, as library calls: each returns a
// Report (the module or the check's report for stdout, lines for stderr, problemFound when
// something did not lower, verify or match) or the Status that says why it could not run (an
// unknown compile, a library or IR that cannot be read). They print nothing: tools/replay_mlir.cc
// opens the store, prints the Report, writes the module and chooses the exit code.
// Thread-safety: each call is independent.
#pragma once

#include <cstdint>
#include <string>

#include "dynrep/replay/query/job.h"
#include "dynrep/replay/query/report.h"
#include "dynrep/store/status.h"

namespace dynrep::replay::lowering {

struct MlirRequest {
  std::string store, compile, graph = "forward", dialect = "linalg", library;
  std::string runner;           // replay-run, the reference where a value was not stored
  bool allowDifferent = false;  // write the module without checking it against the job's outputs
};
// One compile's graph of `job` (opened from request.store) as MLIR. The Report's output is the
// module, empty when it is not to be written (it computes a different number than the job did,
// or an LLVM module could not be made).
Result<Report> mlirCommand(const Job& job, const MlirRequest& request);
// The same for a graph IR file (request.store names it; compile and graph unused): the lowering
// of one graph without a store, for the FileCheck tests and for IR written by other tools.
Result<Report> lowerIrCommand(const MlirRequest& request);

struct LowerCheckRequest {
  std::string store, library, sizes, runner;
  uint64_t seed = 0;
  bool json = false;
};
// Every graph of `job` (opened from request.store) lowered, verified, run and compared:
// problemFound when any did not match.
Result<Report> lowerCheckCommand(const Job& job, const LowerCheckRequest& request);

}  // namespace dynrep::replay::lowering
