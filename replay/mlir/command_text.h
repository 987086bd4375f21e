// What the mlir and lower-check commands both print: the nodes not lowered, and short numbers.
// Private to replay/mlir.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "dynrep/replay/mlir/lower.h"

namespace dynrep::replay::lowering {

// "  not lowered: NODE = OP: MESSAGE", then "    at LINE  [SCOPE]" where the user line is known.
inline std::vector<std::string> issueLines(const std::vector<NodeIssue>& issues) {
  std::vector<std::string> lines;
  for (const NodeIssue& i : issues) {
    lines.push_back("  not lowered: " + i.node + " = " + i.op + ": " + i.message);
    if (!i.line.empty()) lines.push_back("    at " + i.line + (i.scope.empty() ? "" : "  [" + i.scope + "]"));
  }
  return lines;
}

// A difference to two significant digits ("%.2g").
inline std::string shortNumber(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

}  // namespace dynrep::replay::lowering
