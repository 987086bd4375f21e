#include "dynrep/replay/query/sizes.h"

#include <cctype>
#include <stdexcept>
#include <vector>

namespace dynrep::replay {

namespace {

// Recursive descent over + - * // % and calls of Max, Min, FloorDiv, Mod, CeilToInt-free forms:
// the subset sympy prints for sizes.
class Parser {
 public:
  Parser(const std::string& text, const Symbols& symbols) : text_(text), symbols_(symbols) {}

  int64_t parse() {
    int64_t value = sum();
    skip();
    if (pos_ != text_.size()) fail("unexpected '" + text_.substr(pos_) + "'");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw std::runtime_error("size expression '" + text_ + "': " + why);
  }
  void skip() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool eat(const std::string& token) {
    skip();
    if (text_.compare(pos_, token.size(), token) != 0) return false;
    pos_ += token.size();
    return true;
  }
  static int64_t floorDiv(int64_t a, int64_t b) {
    if (b == 0) throw std::runtime_error("division by zero in a size expression");
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
  int64_t sum() {
    int64_t value = product();
    for (;;) {
      if (eat("+")) value += product();
      else if (eat("-")) value -= product();
      else return value;
    }
  }
  int64_t product() {
    int64_t value = unary();
    for (;;) {
      if (eat("//")) value = floorDiv(value, unary());
      else if (eat("*")) value *= unary();
      else if (eat("%")) { int64_t d = unary(); value -= floorDiv(value, d) * d; }
      else return value;
    }
  }
  int64_t unary() {
    if (eat("-")) return -unary();
    return atom();
  }
  std::vector<int64_t> arguments() {
    std::vector<int64_t> values{sum()};
    while (eat(",")) values.push_back(sum());
    if (!eat(")")) fail("missing ')'");
    return values;
  }
  int64_t atom() {
    skip();
    if (eat("(")) {
      int64_t value = sum();
      if (!eat(")")) fail("missing ')'");
      return value;
    }
    size_t start = pos_;
    if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      return std::stoll(text_.substr(start, pos_ - start));
    }
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    std::string name = text_.substr(start, pos_ - start);
    if (name.empty()) fail("expected a number or a symbol");
    if (eat("(")) {
      std::vector<int64_t> a = arguments();
      if (name == "Max" && !a.empty()) { int64_t m = a[0]; for (int64_t x : a) m = std::max(m, x); return m; }
      if (name == "Min" && !a.empty()) { int64_t m = a[0]; for (int64_t x : a) m = std::min(m, x); return m; }
      if (name == "FloorDiv" && a.size() == 2) return floorDiv(a[0], a[1]);
      if ((name == "Mod" || name == "PythonMod") && a.size() == 2) return a[0] - floorDiv(a[0], a[1]) * a[1];
      fail("function " + name + " is not read here");
    }
    auto it = symbols_.find(name);
    if (it == symbols_.end()) fail("no value for symbol " + name + " (give one with --sizes " + name + "=N)");
    return it->second;
  }

  const std::string& text_;
  const Symbols& symbols_;
  size_t pos_ = 0;
};

}  // namespace

int64_t evaluate(const std::string& expression, const Symbols& symbols) {
  return Parser(expression, symbols).parse();
}

Symbols parseSizes(const std::string& text) {
  Symbols out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    std::string item = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw std::runtime_error("--sizes entry '" + item + "' is not SYMBOL=N");
    try {
      out[item.substr(0, eq)] = std::stoll(item.substr(eq + 1));
    } catch (const std::exception&) {
      throw std::runtime_error("--sizes entry '" + item + "': not an integer");
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

}  // namespace dynrep::replay
