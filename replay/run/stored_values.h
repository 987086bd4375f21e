// What the runner reads from one compile of a store: its graph IRs, and its samples and
// constants as tensors (raw little-endian bytes, dtype and shape from the entry).
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "dynrep/replay/query/graph_ir.h"
#include "dynrep/replay/query/graph_samples.h"
#include "dynrep/replay/query/job.h"

namespace dynrep::replay::run {

// A problem with the store's contents (a missing graph or sample): reported, nothing ran.
struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class StoredValues {
 public:
  StoredValues(const Job& job, const Compile& compile);

  std::string compileId() const { return compile_.id.str(); }
  bool has(const std::string& event) const { return compile_.graphIrs.count(event) > 0; }
  // `forward` -> the event that holds it (aot_forward_graph or aot_inference_graph), ...
  std::string event(const std::string& graph) const;
  Graph ir(const std::string& event) const;                                            // format 2 or RunError
  const Sample* sample(const std::string& pass) const { return samples_.pass(pass); }  // "forward"/"backward", or null
  const CompileSamples& samples() const { return samples_; }

  // A sample entry's tensor, laid out with `stride` where given (the IR's strides of its input).
  at::Tensor blob(const SampleValue& entry, const std::vector<Dimension>* stride = nullptr) const;
  static at::Tensor restride(const at::Tensor& t, const std::vector<Dimension>* stride);
  std::map<std::string, at::Tensor> constants(const Graph& ir) const;
  static c10::IValue valueOf(const SampleValue& entry);  // a sampled scalar
  // Each symbol's value at capture (the symbol table's hints), for a graph without samples.
  std::map<std::string, int64_t> hints() const;
  // (output position, stored value) for each output of the graph a sample holds.
  std::vector<std::pair<int, at::Tensor>> expected(const Graph& ir) const;

 private:
  const Job& job_;
  const Compile& compile_;
  CompileSamples samples_;

  at::Tensor tensor(const std::string& key, const std::string& dtype, const std::vector<Dimension>& shape,
                    const std::vector<Dimension>* stride) const;
};

}  // namespace dynrep::replay::run
