// replay-inspect mlir and lower-check (run by the replay-mlir tool): exit 0 when everything
// lowered (and matched), 1 when something did not, 2 for a store or argument that cannot be used.
#pragma once

#include <iosfwd>
#include <map>
#include <string>

namespace dynrep::replay::lowering {

struct MlirRequest {
  std::string store, compile, graph = "forward", dialect = "linalg", library, output;
  std::string runner;           // replay-run, the reference where a value was not stored
  bool allowDifferent = false;  // write the module without checking it against the job's outputs
};
int mlirCommand(const MlirRequest& request, std::ostream& out, std::ostream& err);
// The same for a graph IR file (request.store names it; compile and graph unused): the lowering
// of one graph without a store, for the FileCheck tests and for IR written by other tools.
int lowerIrCommand(const MlirRequest& request, std::ostream& out, std::ostream& err);

struct LowerCheckRequest {
  std::string store, library, sizes, runner;
  uint64_t seed = 0;
  bool json = false;
};
int lowerCheckCommand(const LowerCheckRequest& request, std::ostream& out, std::ostream& err);

}  // namespace dynrep::replay::lowering
