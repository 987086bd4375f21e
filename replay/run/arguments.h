// Graph IR arguments -> libtorch IValues, resolved once when a graph is prepared: each becomes
// a constant, a node's slot, or a list built from such parts at call time. The IR's argument says
// what a value is; the operator's schema says which list or optional type the kernel expects.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "dynrep/replay/query/graph_ir.h"
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>

namespace dynrep::replay::run {

using Slots = std::unordered_map<std::string, int>;  // node name -> index of its value

c10::ScalarType scalarType(const std::string& name);  // "float32" -> Float; throws on others

class Resolved {
 public:
  // The argument's value, given every node's value so far.
  c10::IValue operator()(const std::vector<c10::IValue>& values) const;
  // The slots it reads (to free a value after its last use).
  void collectSlots(std::vector<int>* out) const;

 private:
  friend Resolved resolve(const Argument&, const c10::TypePtr&, const Slots&);
  friend Resolved constantValue(c10::IValue value);
  enum class Kind { Constant, Slot, List } kind_ = Kind::Constant;
  c10::IValue constant_;
  int slot_ = -1;
  bool wrapNumber_ = false;  // a slot where the schema wants a Tensor: a symbolic number there is wrapped
  std::vector<Resolved> items_;
  c10::TypePtr listType_;
};

Resolved constantValue(c10::IValue value);  // a schema default, say

// Throws std::runtime_error naming what cannot be converted, or a node used before it is computed.
Resolved resolve(const Argument& arg, const c10::TypePtr& type, const Slots& slots);

}  // namespace dynrep::replay::run
