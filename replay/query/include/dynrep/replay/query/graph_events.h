// The names a user gives a stored graph (`--graph forward`) and the structured-trace events it
// may be stored as, first match wins: one table for replay-run, lower-check and `mlir`
// (python/dynamo_replay/graphs/stored.py keeps the Python side's, GRAPH_EVENTS).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace dynrep::replay {

inline const std::map<std::string, std::vector<std::string>>& graphEvents() {
  static const std::map<std::string, std::vector<std::string>> table = {
      {"forward", {"aot_forward_graph", "aot_inference_graph"}},
      {"inference", {"aot_inference_graph"}},
      {"backward", {"aot_backward_graph"}},
      {"dynamo", {"dynamo_output_graph"}},
  };
  return table;
}

// The events `graph` names: its table entry, or `graph` itself (an event name given as is).
inline std::vector<std::string> eventsNamed(const std::string& graph) {
  auto it = graphEvents().find(graph);
  return it == graphEvents().end() ? std::vector<std::string>{graph} : it->second;
}

}  // namespace dynrep::replay
