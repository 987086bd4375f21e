// Symbol values from --sizes, and sizes evaluated over them (the parser is size_expr.cc).
#include "dynrep/replay/query/sizes.h"

#include "dynrep/replay/query/size_expr.h"

namespace dynrep::replay {

Result<int64_t> evaluate(const std::string& expression, const Symbols& symbols) {
  Result<SizeExpr> tree = parseSizeExpr(expression);
  if (!tree.isOk()) return tree.status();
  Result<int64_t> value = evaluate(*tree, symbols);
  if (!value.isOk())
    return Status::invalidArgument("size expression '" + expression + "': " + value.status().message());
  return value;
}

Result<Symbols> parseSizes(const std::string& text) {
  Symbols out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      return Status::invalidArgument("--sizes entry '" + item + "' is not SYMBOL=N");
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
