// What a stored graph is fed and compared with: a compile's first-call samples by pass, where
// each placeholder's value comes from (its IR `feed`) and which stored value each result should
// equal. Both graph runners read it, libtorch's (replay/run) and MLIR's (replay/mlir), each
// turning the stored entries into its own tensors.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "dynrep/replay/query/graph_ir.h"
#include "dynrep/replay/query/job.h"

namespace dynrep::replay {

// Where one placeholder's value comes from, its IR feed (graph_ir.h) resolved against the samples.
struct FedValue {
  enum class Kind {
    Stored,         // `entry`: a sample input or a gradient the job stored
    ForwardOutput,  // output `index` of the compile's forward graph (a value saved for the backward)
    Zeros,          // a gradient that never flowed: zeros shaped as forward output `index`
    Missing,        // nothing stored feeds it: `missing` says what
  };
  Kind kind = Kind::Stored;
  const SampleValue* entry = nullptr;
  size_t index = 0;
  std::string missing;
};

class CompileSamples {
 public:
  explicit CompileSamples(const Compile& compile);

  // The sample event of a pass ("forward", "backward"), or null.
  const Sample* pass(const std::string& name) const;

  // Where each placeholder of `ir`, in order, gets its value (Missing names what was not stored).
  std::vector<FedValue> feeds(const Graph& ir) const;

  // (output position, the stored entry it should equal) for each result a sample holds.
  std::vector<std::pair<int, const SampleValue*>> expected(const Graph& ir) const;

 private:
  std::string compileId_;
  std::map<std::string, Sample> samples_;  // by pass
};

// Whether a placeholder of `ir` has `symbol` in its shape or value (as a whole identifier).
bool inputsMention(const Graph& ir, const std::string& symbol);

}  // namespace dynrep::replay
