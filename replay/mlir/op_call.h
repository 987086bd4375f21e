// What an operator lowering sees: the node's arguments resolved in schema order (defaults
// filled from the stored schema), its output types from the IR, and the emitter. Lowerings
// live in ops/*.cc, one family per file, each adding itself to the table (ops/ops.h).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dynrep/replay/query/graph_ir.h"
#include "emitter.h"

namespace dynrep::replay::lowering {

struct OpCall {
  Emitter& e;
  const Node& node;
  std::string target;              // aten::addmm.default
  std::vector<std::string> names;  // schema argument names
  std::vector<std::string> types;  // schema argument types: Tensor, int[2], Scalar, ...
  std::vector<Value> args;
  std::vector<TensorType> outs;  // the IR's type of each output (tensors)

  size_t index(const std::string& name) const;  // schema position, or throws Unsupported
  const Value& arg(size_t i) const;
  const Value& arg(const std::string& name) const { return arg(index(name)); }
  const Value& tensor(size_t i) const;  // throws Unsupported unless a tensor
  bool none(size_t i) const { return i >= args.size() || args[i].isNone(); }
  int64_t integer(size_t i) const;  // a constant int (a symbolic one throws)
  double real(size_t i) const;      // a constant number
  bool flag(size_t i) const;
  std::vector<int64_t> ints(size_t i) const;  // int[] (a single int repeated as int[N] says)
  const TensorType& out(size_t i = 0) const;
  // A normalized dimension index for a tensor of `rank`.
  static int64_t dim(int64_t d, size_t rank);
};

using LowerFn = std::function<Value(OpCall&)>;
using OpTable = std::map<std::string, LowerFn>;

}  // namespace dynrep::replay::lowering
