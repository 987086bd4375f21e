// Which graph nodes draw from PyTorch's random generator (dropout in training, bernoulli, rand*,
// normal, rrelu's noise...). The MLIR lowering cannot reproduce PyTorch's generator, so it takes
// such a node's outputs as extra inputs of the lowered function; replay-run hands over the
// values its run drew (tensor_file.h), and the rest of the graph is then checked exactly.
#pragma once

#include <string>

#include "dynrep/replay/query/graph_ir.h"

namespace dynrep::replay {

inline bool drawsRandom(const Node& node) {
  if (!node.is(Node::Op::CallFunction)) return false;
  std::string name = node.target.substr(0, node.target.find('.'));
  if (name == "aten::native_dropout") {  // p = 0, or eval: draws nothing
    const std::vector<Argument>& args = node.args;
    bool drops = args.size() > 1 && args[1].isNumber() && args[1].number() != 0;
    bool train = args.size() < 3 || args[2].kind != Argument::Kind::Bool || args[2].boolean;
    return drops && train;
  }
  for (const char* op : {"aten::bernoulli",
                         "aten::rand",
                         "aten::rand_like",
                         "aten::randn",
                         "aten::randn_like",
                         "aten::randint",
                         "aten::randint_like",
                         "aten::randperm",
                         "aten::normal",
                         "aten::normal_functional",
                         "aten::uniform",
                         "aten::exponential",
                         "aten::geometric",
                         "aten::log_normal",
                         "aten::cauchy",
                         "aten::multinomial",
                         "aten::rrelu_with_noise",
                         "aten::rrelu_with_noise_functional",
                         "aten::_fused_dropout",
                         "aten::poisson",
                         "aten::_standard_gamma",
                         "aten::binomial",
                         "aten::_sample_dirichlet",
                         "prims::inductor_random",
                         "prims::inductor_randint",
                         "prims::inductor_seeds",
                         "prims::inductor_lookup_seed"})
    if (name == op) return true;
  return false;
}

}  // namespace dynrep::replay
