// One stored graph prepared to run: each node's operator looked up once in the dispatcher and
// each argument resolved once (a constant, or the slot of a node's value); run() then makes one
// boxed call per node and drops each value after its last use, as PyTorch's generated code does.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>

#include "arguments.h"
#include "dynrep/replay/query/graph_ir.h"
#include "dynrep/replay/run/runner.h"

namespace dynrep::replay::run {

class GraphProgram {
 public:
  // Prepares every node; the first that cannot run here is reported by failure().
  GraphProgram(const Graph& ir, const std::map<std::string, at::Tensor>& constants);
  GraphProgram(const GraphProgram&) = delete;  // steps point into its graph
  GraphProgram& operator=(const GraphProgram&) = delete;

  const std::optional<NodeFailure>& failure() const { return failure_; }
  size_t nodeCount() const { return steps_.size(); }

  // The graph's outputs, or nullopt with `failure` set to the node that threw. `random`, when
  // given, gets what each node that draws random numbers produced (random_ops.h), in order.
  std::optional<std::vector<c10::IValue>> run(const std::vector<c10::IValue>& inputs, NodeFailure* failure,
                                              std::vector<std::pair<std::string, c10::IValue>>* random = nullptr) const;

 private:
  enum class StepKind { Operator, Primitive, Python };
  struct Step {
    const Node* node;  // into ir_, for failure reports
    StepKind kind = StepKind::Operator;
    std::string target;
    std::optional<c10::OperatorHandle> op;
    c10::IValue (*primitive)(const std::vector<c10::IValue>&) = nullptr;
    std::vector<Resolved> args;  // per schema argument (operators) or as written (Python calls)
    int slot = -1;               // where its value goes
    std::vector<int> release;    // values last used here
  };
  bool prepare(const Node& node, Slots* slots);
  void prepareOperator(const Node& node, Step* step, const Slots& slots);
  bool preparePrimitive(const Node& node, Step* step, const Slots& slots);
  c10::IValue callPython(const Step& step, const std::vector<c10::IValue>& values) const;
  void planReleases();
  NodeFailure describe(const Node& node, const std::string& message) const;

  Graph ir_;
  int slotCount_ = 0;
  std::vector<int> inputSlots_;
  std::vector<std::pair<int, c10::IValue>> constantSlots_;  // get_attr nodes
  std::vector<Step> steps_;
  std::vector<Resolved> outputs_;
  std::optional<NodeFailure> failure_;
};

}  // namespace dynrep::replay::run
