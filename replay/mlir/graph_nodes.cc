// A graph IR node's location, not-lowered report and function name, shared by both lowerings.
#include "graph_nodes.h"

#include "emitter.h"

namespace dynrep::replay::lowering {

namespace {

// The innermost module the node runs in: "blocks.0.fc1 (torch.nn.modules.linear.Linear)", or "".
std::string scope(const Node& node) {
  if (node.scope.empty()) return "";
  return node.scope.back().path + " (" + node.scope.back().className + ")";
}

}  // namespace

std::string nodeLocation(const Node& node) {
  std::string name = mlirString(node.name);
  std::vector<std::string> parts;
  if (node.location) {
    const SourceLocation& l = *node.location;
    parts.push_back(mlirString(l.file.empty() ? "?" : l.file) + ":" + std::to_string(l.line) + ":0");
  }
  if (std::string s = scope(node); !s.empty()) parts.push_back(mlirString(s));
  if (parts.empty()) return "loc(" + name + ")";
  return "loc(fused<" + name + ">[" + join(parts) + "])";
}

NodeIssue nodeIssue(const Graph& ir, const Node& node, const std::string& message) {
  NodeIssue i;
  i.node = node.name;
  i.op = node.what();
  if (auto s = ir.schemas.find(i.op); s != ir.schemas.end()) i.schema = s->second.text;
  if (node.location) {
    const SourceLocation& l = *node.location;
    i.line = l.file + ":" + std::to_string(l.line) + "  " + l.code;
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
  return "module attributes {dynrep.graph = " + mlirString(g.event) + compile + "} {\n" + "  func.func @" + g.function +
         "(" + signature + ") -> (" + resultTypes + ") {\n";
}

}  // namespace dynrep::replay::lowering
