// diff's graph comparison: per graph (Dynamo's, AOTAutograd's) in two compiles, the operators
// that run a different number of times, the inputs and outputs whose shapes moved, and the
// module scopes that run in one graph only; read from the graph IR (docs/capture-schema.md).
#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "diff/model.h"
#include "dynrep/replay/query/graph_ir.h"
#include "dynrep/replay/query/json_fields.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

struct GraphFacts {
  size_t nodes = 0;
  std::map<std::string, int> operators;
  std::map<std::string, std::string> inputs;  // key (source, parameter name) -> value text
  std::vector<std::string> outputs;
  std::set<std::string> scopes;
};

// "float32[8, s77]", "float32[8] requires_grad", "sym s0 (int)", "2.0".
std::string valueText(const ValueMeta& v) {
  switch (v.kind) {
    case ValueMeta::Kind::Tensor: {
      std::string dims;
      for (const Dimension& d : v.tensor.shape) dims += (dims.empty() ? "" : ", ") + d.str();
      return fmt::format("{}[{}]{}", v.tensor.dtype, dims, v.tensor.requiresGrad ? " requires_grad" : "");
    }
    case ValueMeta::Kind::Symbolic: return fmt::format("sym {} ({})", v.sym, v.symType.empty() ? "?" : v.symType);
    case ValueMeta::Kind::Plain: return v.value.spelling();
    case ValueMeta::Kind::Unsupported: return "<" + (v.text.empty() ? std::string("?") : v.text) + ">";
    case ValueMeta::Kind::Unparsed: return dumpJson({{"unparsed", v.text}});
  }
  return "?";
}

std::string firstOutput(const Node& node) {
  return node.outputs.empty() ? "(no value recorded)" : valueText(node.outputs[0]);
}

// A placeholder's key: the Dynamo source it reads, or the parameter or buffer it is.
std::pair<std::string, std::string> inputOf(const Node& node) {
  auto known = [](const std::string& s) { return s.empty() ? std::string("?") : s; };
  std::string role = node.input ? node.input->role : "";
  if (role == "symbol") {
    const InputRole& in = *node.input;
    return {in.source.empty() ? known(in.symbol) : in.source, "symbol " + known(in.symbol)};
  }
  std::string value = firstOutput(node);
  if (role == "parameter" || role == "buffer") return {role + " " + known(node.input->name), value};
  if (role == "user_input" && !node.input->source.empty()) return {node.input->source, value};
  return {node.name, value};
}

void flattenRefs(const Argument& arg, const Graph& ir, std::vector<std::string>* out) {
  if (arg.isSequence()) {
    for (const Argument& a : arg.items) flattenRefs(a, ir, out);
  } else if (arg.kind == Argument::Kind::Ref) {
    const Node* node = ir.find(arg.text);
    out->push_back(node ? firstOutput(*node) : "(unknown node)");
  } else {
    out->push_back(arg.spelling());
  }
}

std::optional<GraphFacts> graphFacts(const std::string& text) {
  Result<Graph> ir = parseGraph(text);
  if (!ir.isOk()) return std::nullopt;
  GraphFacts g;
  g.nodes = ir->nodes.size();
  for (const Node& n : ir->nodes) {
    if (n.is(Node::Op::CallFunction)) g.operators[n.target]++;
    if (n.is(Node::Op::CallMethod)) g.operators["method " + n.target]++;
    if (n.is(Node::Op::CallModule)) g.operators["module " + n.target]++;
    if (n.is(Node::Op::Placeholder)) g.inputs.insert(inputOf(n));
    if (n.is(Node::Op::Output) && !n.args.empty()) flattenRefs(n.args[0], *ir, &g.outputs);
    for (const ScopeEntry& s : n.scope) {
      std::string cls = s.className.empty() ? "?" : s.className;
      g.scopes.insert(fmt::format("{} ({})", s.path.empty() ? "?" : s.path, cls.substr(cls.rfind('.') + 1)));
    }
  }
  return g;
}

GraphDiff compareFacts(const std::string& name, const GraphFacts& a, const GraphFacts& b) {
  GraphDiff d;
  d.graph = name;
  if (a.nodes != b.nodes) d.nodes = {"nodes", std::to_string(a.nodes), std::to_string(b.nodes)};
  std::map<std::string, std::pair<int, int>> ops;
  for (const auto& [t, n] : a.operators) ops[t].first = n;
  for (const auto& [t, n] : b.operators) ops[t].second = n;
  for (const auto& [t, n] : ops)
    if (n.first != n.second) d.operators.push_back({t, std::to_string(n.first), std::to_string(n.second)});
  for (const auto& [key, va] : a.inputs) {
    auto vb = b.inputs.find(key);
    if (vb == b.inputs.end() || vb->second != va) d.inputs.push_back({key, va, vb == b.inputs.end() ? "" : vb->second});
  }
  for (const auto& [key, vb] : b.inputs)
    if (!a.inputs.count(key)) d.inputs.push_back({key, "", vb});
  for (size_t i = 0; i < std::max(a.outputs.size(), b.outputs.size()); ++i) {
    std::string va = i < a.outputs.size() ? a.outputs[i] : "", vb = i < b.outputs.size() ? b.outputs[i] : "";
    if (va != vb) d.outputs.push_back({fmt::format("output {}", i), va, vb});
  }
  for (const std::string& s : a.scopes)
    if (!b.scopes.count(s)) d.scopes.push_back({s, "present", ""});
  for (const std::string& s : b.scopes)
    if (!a.scopes.count(s)) d.scopes.push_back({s, "", "present"});
  return d;
}

std::set<std::string> graphNames(const Compile& c) {
  std::set<std::string> names;
  for (const auto& [name, key] : c.graphs) names.insert(name);
  for (const auto& [name, key] : c.graphIrs) names.insert(name);
  return names;
}

}  // namespace

std::vector<GraphDiff> compareGraphs(const Job& ja, const Compile& a, const Job& jb, const Compile& b) {
  std::vector<GraphDiff> out;
  std::set<std::string> na = graphNames(a), nb = graphNames(b), all = na;
  all.insert(nb.begin(), nb.end());
  for (const std::string& name : all) {
    if (!na.count(name) || !nb.count(name)) {
      GraphDiff d;
      d.graph = name;
      d.onlyIn = na.count(name) ? "a" : "b";
      out.push_back(d);
      continue;
    }
    auto ia = a.graphIrs.find(name), ib = b.graphIrs.find(name);
    if (ia == a.graphIrs.end() || ib == b.graphIrs.end()) continue;  // text only: nothing to compare by
    Result<std::string> ta = ja.text(ia->second), tb = jb.text(ib->second);
    if (!ta.isOk() || !tb.isOk()) continue;  // an unreadable IR: nothing to compare by
    std::optional<GraphFacts> fa = graphFacts(*ta), fb = graphFacts(*tb);
    if (!fa || !fb) continue;
    if (GraphDiff d = compareFacts(name, *fa, *fb); !d.empty()) out.push_back(d);
  }
  return out;
}

}  // namespace dynrep::replay
