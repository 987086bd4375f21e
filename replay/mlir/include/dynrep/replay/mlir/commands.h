// replay-inspect mlir and lower-check, and replay-mlir lower-ir, as library calls: each returns a
// Report (the module or the check's report for stdout, lines for stderr, problemFound when
// something did not lower, verify or match) or the Status that says why it could not run (an
// unknown compile, a library or IR that cannot be read). They print nothing: tools/replay_mlir.cc
// opens the store, prints the Report, writes the module and chooses the exit code.
// Thread-safety: each call is independent.
#pragma once

#include <cstdint>
#include <string>

#include "dynrep/replay/mlir/iree_tools.h"
#include "dynrep/replay/query/job.h"
#include "dynrep/replay/query/report.h"
#include "dynrep/store/status.h"

namespace dynrep::replay::lowering {

struct MlirRequest {
  std::string store, compile, graph = "forward", dialect = "linalg", library;
  std::string runner;           // replay-run, the reference where a value was not stored
  bool allowDifferent = false;  // write the module without checking it against the job's outputs
  IreeTools iree;               // for ireeCommand
};
// One compile's graph of `job` (opened from request.store) as MLIR. The Report's output is the
// module, empty when it is not to be written (it computes a different number than the job did,
// or an LLVM module could not be made).
Result<Report> mlirCommand(const Job& job, const MlirRequest& request);
// The same for a graph IR file (request.store names it; compile and graph unused): the lowering
// of one graph without a store, for the FileCheck tests and for IR written by other tools.
Result<Report> lowerIrCommand(const MlirRequest& request);

// The graph compiled by IREE for this host's CPU: the linalg module mlirCommand writes, checked
// through IREE's runtime before it is written (as mlirCommand checks through the JIT), as a
// .vmfb, with a manifest (JSON) naming the function's inputs in order (the stored tensor or size
// symbol each one is) and its outputs, so a program without PyTorch can call it.
struct IreeModuleFile {
  Report report;  // notes; problemFound, and vmfb empty, when it is not to be written
  std::string vmfb, manifest;
};
Result<IreeModuleFile> ireeCommand(const Job& job, const MlirRequest& request);

struct LowerCheckRequest {
  std::string store, library, sizes, runner;
  uint64_t seed = 0;
  bool json = false;
  std::string runtime = "jit";  // or "iree"
  bool timeCalls = false;       // also time one call of each graph
  IreeTools iree;
};
// Every graph of `job` (opened from request.store) lowered, verified, run and compared:
// problemFound when any did not match.
Result<Report> lowerCheckCommand(const Job& job, const LowerCheckRequest& request);

}  // namespace dynrep::replay::lowering
