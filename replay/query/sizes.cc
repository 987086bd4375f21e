// Symbol values from --sizes, and sizes evaluated over them (the parser is size_expr.cc).
#include "dynrep/replay/query/sizes.h"

#include <stdexcept>

#include "dynrep/replay/query/size_expr.h"

namespace dynrep::replay {

Result<int64_t> evaluate(const std::string& expression, const Symbols& symbols) {
  SizeExpr tree;
  try {
    tree = parseSizeExpr(expression);
  } catch (const std::runtime_error& e) {
    return Status::invalidArgument(e.what());
  }
  try {
    return evaluate(tree, symbols);
  } catch (const std::runtime_error& e) {
    return Status::invalidArgument("size expression '" + expression + "': " + e.what());
  }
}

Result<Symbols> parseSizes(const std::string& text) {
  Symbols out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return Status::invalidArgument("--sizes entry '" + item + "' is not SYMBOL=N");
    try {
      out[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
    } catch (const std::exception&) {
      return Status::invalidArgument("--sizes entry '" + item + "': not an integer");
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace dynrep::replay
