// diff's graph comparison: per graph (Dynamo's, AOTAutograd's) in two compiles, the operators
// that run a different number of times, the inputs and outputs whose shapes moved, and the
// module scopes that run in one graph only; read from the graph IR (docs/capture-schema.md).
#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "diff/compare.h"
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
std::string valueText(const json& v) {
  if (!v.is_object()) return dumpJson(v);
  if (v.contains("dtype")) {
    std::string dims;
    for (const json& d : arrayField(v, "shape")) dims += (dims.empty() ? "" : ", ") + (d.is_string() ? d.get<std::string>() : dumpJson(d));
    return fmt::format("{}[{}]{}", field(v, "dtype", "?"), dims, field<bool>(v, "requires_grad", false) ? " requires_grad" : "");
  }
  if (v.contains("sym")) return fmt::format("sym {} ({})", field(v, "sym", "?"), field(v, "type", "?"));
  if (v.contains("value")) return dumpJson(v["value"]);
  if (v.contains("unsupported")) return "<" + field(v, "unsupported", "?") + ">";
  return dumpJson(v);
}

std::string firstOutput(const json& node) {
  json outs = arrayField(node, "outputs");
  return outs.empty() ? "(no value recorded)" : valueText(outs[0]);
}

// A placeholder's key: the Dynamo source it reads, or the parameter or buffer it is.
std::pair<std::string, std::string> inputOf(const json& node) {
  const json input = node.value("input", json());
  std::string role = field(input, "role", "");
  if (role == "symbol") return {field(input, "source", field(input, "symbol", "?")), "symbol " + field(input, "symbol", "?")};
  std::string value = firstOutput(node);
  if (role == "parameter" || role == "buffer") return {role + " " + field(input, "name", "?"), value};
  if (role == "user_input" && !field(input, "source", "").empty()) return {field(input, "source", ""), value};
  return {field(node, "name", "?"), value};
}

void flattenRefs(const json& arg, const std::map<std::string, const json*>& byName, std::vector<std::string>* out) {
  if (arg.is_array()) {
    for (const json& a : arg) flattenRefs(a, byName, out);
  } else if (arg.is_object() && arg.contains("tuple")) {
    flattenRefs(arg["tuple"], byName, out);
  } else if (arg.is_object() && arg.contains("ref")) {
    auto node = byName.find(field(arg, "ref", ""));
    out->push_back(node == byName.end() ? "(unknown node)" : firstOutput(*node->second));
  } else {
    out->push_back(dumpJson(arg));
  }
}

std::optional<GraphFacts> graphFacts(const std::string& text) {
  json ir = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!ir.is_object()) return std::nullopt;
  GraphFacts g;
  json nodes = arrayField(ir, "nodes");
  g.nodes = nodes.size();
  std::map<std::string, const json*> byName;
  for (const json& n : nodes) byName[field(n, "name", "")] = &n;
  for (const json& n : nodes) {
    std::string op = field(n, "op", ""), target = field(n, "target", "?");
    if (op == "call_function") g.operators[target]++;
    if (op == "call_method") g.operators["method " + target]++;
    if (op == "call_module") g.operators["module " + target]++;
    if (op == "placeholder") g.inputs.insert(inputOf(n));
    if (op == "output") {
      json args = arrayField(n, "args");
      if (!args.empty()) flattenRefs(args[0], byName, &g.outputs);
    }
    for (const json& s : arrayField(n, "scope")) {
      std::string cls = field(s, "class", "?");
      g.scopes.insert(fmt::format("{} ({})", field(s, "path", "?"), cls.substr(cls.rfind('.') + 1)));
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
    std::optional<GraphFacts> fa = graphFacts(ja.text(ia->second)), fb = graphFacts(jb.text(ib->second));
    if (!fa || !fb) continue;
    if (GraphDiff d = compareFacts(name, *fa, *fb); !d.empty()) out.push_back(d);
  }
  return out;
}

}  // namespace dynrep::replay
