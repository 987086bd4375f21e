// One stored graph prepared to run: each node's operator looked up once in the dispatcher, its
// constant arguments converted once; run() then makes one boxed call per node.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <nlohmann/json.hpp>

#include "arguments.h"
#include "dynrep/replay/run/runner.h"

namespace dynrep::replay::run {

class GraphProgram {
 public:
  // Resolves every operator; a node that cannot run here is reported as the failure.
  GraphProgram(const nlohmann::json& ir, std::map<std::string, at::Tensor> constants);
  GraphProgram(const GraphProgram&) = delete;  // steps point into ir_
  GraphProgram& operator=(const GraphProgram&) = delete;

  const std::optional<NodeFailure>& failure() const { return failure_; }
  const std::vector<std::string>& inputNames() const { return inputs_; }
  size_t nodeCount() const { return steps_.size(); }

  // The graph's outputs, or nullopt with `failure` set to the node that threw.
  std::optional<std::vector<c10::IValue>> run(const std::vector<c10::IValue>& inputs, NodeFailure* failure) const;

  NodeFailure describe(const nlohmann::json& node, const std::string& message) const;

 private:
  struct Step {
    const nlohmann::json* node;
    std::string name;
    std::string target;
    std::optional<c10::OperatorHandle> op;  // set for aten-style operators
    std::vector<std::optional<c10::IValue>> constants;  // per schema argument, when it has no refs
  };
  c10::IValue callPython(const Step& step, const Env& env) const;

  nlohmann::json ir_;
  std::map<std::string, at::Tensor> constants_;
  std::vector<std::string> inputs_;
  std::vector<Step> steps_;
  const nlohmann::json* output_ = nullptr;
  std::optional<NodeFailure> failure_;
};

}  // namespace dynrep::replay::run
