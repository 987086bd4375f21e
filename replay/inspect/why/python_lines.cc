// Reading one line of the user's Python (python_lines.h), and userNameFor: what the user's code
// calls a symbol, from the line that made it.
#include "why/python_lines.h"

#include <algorithm>
#include <regex>
#include <utility>
#include <vector>

#include "why/patterns.h"

namespace dynrep::replay {

namespace pyline {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string conditionOf(const std::string& code) {
  static const std::regex kStatement(R"(^\s*(?:if|elif|while)\s+(.+?)\s*:\s*(?:#.*)?$)");
  static const std::regex kAssert(R"(^\s*assert\s+(.+?)\s*(?:,.*)?$)");
  static const std::regex kTernary(R"(\sif\s+(.+?)\s+else\s)");
  std::smatch m;
  if (std::regex_match(code, m, kStatement) || std::regex_match(code, m, kAssert) ||
      std::regex_search(code, m, kTernary))
    return trim(m[1]);
  return "";
}

bool isBranch(const std::string& code) {
  static const std::regex kBranch(R"((^\s*(if|elif|while)\s)|(\sif\s.+\selse\s))");
  return std::regex_search(code, kBranch);
}

std::string negate(const std::string& cond) {
  if (cond.rfind("not ", 0) == 0) return trim(cond.substr(4));
  static const std::vector<std::pair<std::string, std::string>> kFlip = {
      {" == ", " != "}, {" != ", " == "}, {" <= ", " > "}, {" >= ", " < "}, {" < ", " >= "}, {" > ", " <= "}};
  for (const auto& [op, flipped] : kFlip) {
    size_t at = cond.find(op);
    if (at == std::string::npos) continue;
    bool lone = std::none_of(kFlip.begin(), kFlip.end(), [&](const auto& other) {
      return cond.find(other.first, at + op.size()) != std::string::npos ||
             cond.substr(0, at).find(other.first) != std::string::npos;
    });
    if (lone && !has(cond, " and ") && !has(cond, " or "))
      return cond.substr(0, at) + flipped + cond.substr(at + op.size());
  }
  return "not (" + cond + ")";
}

bool scalarOp(const std::string& op) {
  static const std::regex kScalarOp(R"(\b(item|_local_scalar_dense|tolist)\b)");
  return std::regex_search(op, kScalarOp);
}

bool loopStatement(const std::string& code) {
  static const std::regex kLoop(R"(^\s*(for|while)\s)");
  return std::regex_search(code, kLoop);
}

}  // namespace pyline

std::string userNameFor(const std::string& op, const std::string& originCode) {
  static const std::regex kAssignment(R"(^\s*([A-Za-z_]\w*)\s*=[^=])");
  std::smatch m;
  std::string code = originCode.substr(0, 1024);
  if (!std::regex_search(code, m, kAssignment)) return "";
  std::string name = m[1];
  if (pyline::scalarOp(op)) return op.find("tolist") != std::string::npos ? name + "[0]" : name;
  // `n = torch.nonzero(x).size(0)`: the name holds the count itself, not a tensor of it.
  static const std::regex kCount(R"((\.size\(0\)|\.shape\[0\]|\.numel\(\))\s*(#.*)?$)");
  if (std::regex_search(code, kCount)) return name;
  return name + ".shape[0]";
}

}  // namespace dynrep::replay
