// Which graph nodes draw from PyTorch's random generator (dropout in training, bernoulli, rand*,
// normal, rrelu's noise...). The MLIR lowering cannot reproduce PyTorch's generator, so it takes
// such a node's outputs as extra inputs of the lowered function; replay-run hands over the
// values its run drew (tensor_file.h), and the rest of the graph is then checked exactly.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace dynrep::replay {

inline bool drawsRandom(const nlohmann::json& node) {
  if (node.value("op", "") != "call_function") return false;
  std::string target = node.value("target", "");
  std::string name = target.substr(0, target.find('.'));
  if (name == "aten::native_dropout") {  // p = 0, or eval: draws nothing
    const nlohmann::json& args = node.value("args", nlohmann::json::array());
    bool drops = args.size() > 1 && args[1].is_number() && args[1].get<double>() != 0;
    bool train = args.size() < 3 || !args[2].is_boolean() || args[2].get<bool>();
    return drops && train;
  }
  for (const char* op : {"aten::bernoulli", "aten::rand", "aten::rand_like", "aten::randn", "aten::randn_like", "aten::randint",
                         "aten::randint_like", "aten::randperm", "aten::normal", "aten::normal_functional", "aten::uniform",
                         "aten::exponential", "aten::geometric", "aten::log_normal", "aten::cauchy", "aten::multinomial",
                         "aten::rrelu_with_noise", "aten::rrelu_with_noise_functional", "aten::_fused_dropout",
                         "aten::poisson", "aten::_standard_gamma", "aten::binomial", "aten::_sample_dirichlet",
                         "prims::inductor_random", "prims::inductor_randint", "prims::inductor_seeds", "prims::inductor_lookup_seed"})
    if (name == op) return true;
  return false;
}

}  // namespace dynrep::replay
