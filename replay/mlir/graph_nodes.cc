// A graph IR node's location, not-lowered report and function name, shared by both lowerings.
#include "graph_nodes.h"

#include "emitter.h"

namespace dynrep::replay::lowering {

using nlohmann::json;

namespace {

// The innermost module the node runs in: "blocks.0.fc1 (torch.nn.modules.linear.Linear)", or "".
std::string scope(const json& node) {
  if (!node.contains("scope") || !node["scope"].is_array() || node["scope"].empty()) return "";
  const json& inner = node["scope"].back();
  return inner.value("path", "") + " (" + inner.value("class", "") + ")";
}

}  // namespace

std::string nodeLocation(const json& node) {
  std::string name = mlirString(node.value("name", ""));
  std::vector<std::string> parts;
  if (node.contains("location")) {
    const json& l = node["location"];
    parts.push_back(mlirString(l.value("file", "?")) + ":" + std::to_string(l.value("line", 0)) + ":0");
  }
  if (std::string s = scope(node); !s.empty()) parts.push_back(mlirString(s));
  if (parts.empty()) return "loc(" + name + ")";
  return "loc(fused<" + name + ">[" + join(parts) + "])";
}

NodeIssue nodeIssue(const json& ir, const json& node, const std::string& message) {
  NodeIssue i;
  i.node = node.value("name", "");
  i.op = node.value("target", node.value("op", ""));
  const json& schemas = ir.value("schemas", json::object());
  if (schemas.contains(i.op)) i.schema = schemas[i.op].value("text", "");
  if (node.contains("location")) {
    const json& l = node["location"];
    i.line = l.value("file", "") + ":" + std::to_string(l.value("line", 0)) + "  " + l.value("code", "");
  }
  i.scope = scope(node);
  i.message = message;
  return i;
}

std::string functionName(const std::string& event) {
  if (event.rfind("aot_", 0) != 0 || event.size() < 10) return "graph";
  return event.substr(4, event.rfind("_graph") - 4);
}

std::string moduleOpening(const LoweredGraph& g, const LowerOptions& options, const std::string& signature,
                          const std::string& resultTypes) {
  std::string compile = options.compileId.empty() ? "" : ", dynrep.compile = " + mlirString(options.compileId);
  return "module attributes {dynrep.graph = " + mlirString(g.event) + compile + "} {\n" +
         "  func.func @" + g.function + "(" + signature + ") -> (" + resultTypes + ") {\n";
}

}  // namespace dynrep::replay::lowering
