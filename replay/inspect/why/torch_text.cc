// Parsers of PyTorch 2.13's texts for the why-answer. Each keys on wording PyTorch writes, named
// beside it; a text of another shape gives empty fields, never an exception.
#include "why/torch_text.h"

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "dynrep/replay/query/size_expr.h"

namespace dynrep::replay {

namespace {

// A store's text split into lines, each cut to kLineLimit: std::regex recurses per character,
// so no pattern here ever sees a whole payload or an unbounded line.
constexpr size_t kLineLimit = 4096;

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line.substr(0, kLineLimit));
  return out;
}

// The first of `all` where `pattern` matches, with its match; false when none does. `m` refers
// into `all`.
bool searchLines(const std::vector<std::string>& all, const std::regex& pattern, std::smatch* m) {
  for (const std::string& line : all)
    if (std::regex_search(line, *m, pattern)) return true;
  return false;
}

// A line number from a store's text: 0 when it is no number an int holds.
int lineNumber(const std::string& digits) {
  if (digits.empty() || digits.size() > 9) return 0;
  return std::stoi(digits);
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

bool startsWith(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// The value after "label" on the first line that has it, trimmed.
std::string after(const std::string& text, const std::string& label) {
  size_t at = text.find(label);
  if (at == std::string::npos) return "";
  size_t from = at + label.size();
  return trim(text.substr(from, text.find('\n', from) - from));
}

}  // namespace

UserFrame lastFileFrame(const std::string& text) {
  // Python's traceback lines: '  File "/tmp/job.py", line 6, in f' then the code, indented.
  static const std::regex kFile(R"re(^\s*File "([^"]+)", line (\d+), in (\S+))re");
  UserFrame frame;
  std::vector<std::string> all = lines(text);
  for (size_t i = 0; i < all.size(); ++i) {
    std::smatch m;
    if (!std::regex_search(all[i], m, kFile)) continue;
    frame = {m[1], lineNumber(m[2]), m[3], ""};
    if (i + 1 < all.size() && !std::regex_search(all[i + 1], kFile)) frame.code = trim(all[i + 1]);
  }
  return frame;
}

GraphBreakText parseGraphBreak(const std::string& text) {
  GraphBreakText g;
  // "Graph Break Reason: <type>", or "Graph Break Reason: Encountered graph break when
  // attempting to trace ...:" with the type on the next line that has text (symbolic_convert.py);
  // a fullgraph failure's status is "Unsupported: <type>".
  std::vector<std::string> all = lines(text);
  for (size_t i = 0; i < all.size(); ++i) {
    std::string reason = after(all[i], "Graph Break Reason:");
    if (reason.empty() && i == 0 && startsWith(all[i], "Unsupported: ")) reason = trim(all[i].substr(13));
    if (reason.empty()) continue;
    // "... when attempting to trace CALL: ...:", "... that we cannot resume from. ... encountered:"
    if (startsWith(reason, "Encountered graph break")) {
      reason.clear();
      for (size_t j = i + 1; j < all.size() && reason.empty(); ++j) reason = trim(all[j]);
    }
    g.gbType = reason;
    break;
  }
  // PyTorch's message comes again at the end of the traceback that follows; read it once.
  std::string message = text.substr(0, text.find("\nTraceback (most recent call last)"));
  g.explanation = after(message, "Explanation:");
  g.context = after(message, "Developer debug context:");
  for (const std::string& line : lines(message)) {
    std::string t = trim(line);
    if (startsWith(t, "Hint: ") && std::find(g.hints.begin(), g.hints.end(), t.substr(6)) == g.hints.end())
      g.hints.push_back(t.substr(6));
  }
  static const std::regex kGbId(R"(/gb/gb(\d+)\.html)");
  if (std::smatch m; searchLines(all, kGbId, &m)) g.gbId = "GB" + m[1].str();
  // The user line: the innermost frame of "User code traceback:" (the frames before are the
  // job's outer calls), else the header "Graph break in user code at FILE:LINE".
  size_t traceback = text.find("User code traceback:");
  if (traceback != std::string::npos) {
    size_t end = text.find("\nTraceback (most recent call last)", traceback);
    g.frame = lastFileFrame(text.substr(traceback, end == std::string::npos ? std::string::npos : end - traceback));
  }
  static const std::regex kHeader(R"(Graph break in user code at (.+):(\d+))");
  if (std::smatch m; g.frame.file.empty() && searchLines(all, kHeader, &m)) g.frame = {m[1], lineNumber(m[2]), "", ""};
  // Data-dependent branching on a tensor names its line in the explanation:
  // '# File "/tmp/job.py", line 4, in tbr, code: if x.sum() > 0:'.
  static const std::regex kCodeComment(R"re(# File "([^"]+)", line (\d+), in (\S+), code: (.*))re");
  if (std::smatch m; g.frame.file.empty() && searchLines(all, kCodeComment, &m))
    g.frame = {m[1], lineNumber(m[2]), m[3], trim(m[4])};
  return g;
}

std::optional<DataDependentText> parseDataDependent(const std::string& text) {
  // "Could not guard on data-dependent expression Eq(u0, 0) (unhinted: ...)" or
  // "Could not extract specialized integer from data-dependent expression u0 (unhinted: ...)".
  static const std::regex kExpr(
      R"(Could not (guard on|extract specialized integer from) data-dependent expression (.+?) \(unhinted:)");
  std::vector<std::string> all = lines(text);
  std::smatch m;
  if (!searchLines(all, kExpr, &m)) return std::nullopt;
  DataDependentText d;
  d.expr = m[2];
  d.integer = m[1] == "extract specialized integer from";
  // "Caused by: if n.numel() == 0:  # mp/why/nz.py:6 in f (_dynamo/variables/tensor.py:2606 in evaluate_expr)":
  // the user's code, its shortened file, and in brackets where in PyTorch the guard was asked.
  std::string causedBy = after(text, "Caused by:").substr(0, kLineLimit);
  static const std::regex kSite(R"(\(([^()]+:\d+ in \S+)\)\s*$)");
  if (std::smatch s; std::regex_search(causedBy, s, kSite)) d.torchSite = s[1];
  size_t stack = text.find("User Stack (most recent call last):");
  if (stack != std::string::npos) d.frame = lastFileFrame(text.substr(stack));
  static const std::regex kCausedLine(R"(^(.*?)\s+# (\S+):(\d+) in (\S+))");
  if (std::smatch s; d.frame.file.empty() && std::regex_search(causedBy, s, kCausedLine))
    d.frame = {s[2], lineNumber(s[3]), s[4], trim(s[1])};
  return d;
}

std::vector<RecompileCause> parseReasons(const std::string& reasonText) {
  std::vector<RecompileCause> causes;
  static const std::regex kEntry(R"(^(\d+/\d+): (.*)$)");
  for (const std::string& line : lines(reasonText)) {
    std::smatch m;
    if (!std::regex_match(line, m, kEntry)) continue;  // "User stack trace:" and its frames
    RecompileCause c;
    c.entry = m[1];
    c.text = m[2];
    // A guard's own text is the part before "  # user code"; the tensor checks of
    // csrc/dynamo/guards.cpp have no such comment.
    std::string guard = trim(c.text.substr(0, c.text.find(" #")));
    c.guard = guard;
    static const std::regex kTensor(
        R"(^tensor '(.+?)' (size|stride) mismatch at index (\d+)\. expected (\S+), actual (\S+))");
    static const std::regex kTensorProp(R"(^tensor '(.+?)' (dtype|rank) mismatch\. expected (\S+), actual (\S+))");
    static const std::regex kGrad(R"(^tensor '(.+?)' requires_grad mismatch\. expected requires_grad=(\d))");
    static const std::regex kEquals(R"(^(.+?) == (.+)$)");
    if (std::regex_search(guard, m, kTensor)) {
      c.source = m[1].str() + "." + m[2].str() + "()[" + m[3].str() + "]";
      c.expected = m[4];
      c.seen = m[5];
    } else if (std::regex_search(guard, m, kTensorProp)) {
      c.source = m[1].str() + "." + m[2].str();
      c.expected = m[3];
      c.seen = m[4];
    } else if (std::regex_search(guard, m, kGrad)) {
      c.source = m[1].str() + ".requires_grad";
      c.expected = m[2] == "1" ? "True" : "False";
      c.seen = m[2] == "1" ? "False" : "True";
    } else if (std::regex_match(guard, m, kEquals)) {
      c.source = trim(m[1]);
      c.expected = trim(m[2]);
    }
    causes.push_back(std::move(c));
  }
  return causes;
}

std::vector<std::string> symbolsIn(const std::string& expr) {
  // ShapeEnv's symbol prefixes (torch/utils/_sympy/symbol.py): s, u, zf, zuf.
  static const std::regex kSymbol(R"(\b(?:s|u|zf|zuf)\d+\b)");
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), kSymbol); it != std::sregex_iterator(); ++it) {
    if (seen.insert(it->str()).second) out.push_back(it->str());
  }
  return out;
}

std::string prettySource(const std::string& source) {
  static const std::regex kGlobalOrLocal(R"(\b[LG]\['([^']+)'\])");
  static const std::regex kSizeIndex(R"(\.(size|stride)\(\)\[(\d+)\])");
  return std::regex_replace(std::regex_replace(source, kGlobalOrLocal, "$1"), kSizeIndex, ".$1($2)");
}

std::string pythonExpr(const std::string& sympyExpr) {
  using K = SizeExpr::Kind;
  Result<SizeExpr> parsed = parseSizeExpr(sympyExpr);
  if (!parsed.isOk()) return sympyExpr;  // `(s1 > 2) & (s0 < 3)`, a float: shown as PyTorch wrote it
  const SizeExpr& tree = *parsed;
  auto spell = [](const SizeExpr& n, const std::vector<std::string>& a) -> std::string {
    // An operand in brackets where it binds looser than n, or as loose on the right of a
    // left-associative operator, the left of `**`, either side of a comparison (no chains).
    auto operand = [&](size_t i) {
      int mine = bindingPower(n.kind), theirs = bindingPower(n.args[i].kind);
      bool tie = mine == bindingPower(K::Eq) || (n.kind == K::Pow ? i == 0 : i > 0);
      return theirs < mine || (tie && theirs == mine) ? "(" + a[i] + ")" : a[i];
    };
    auto infix = [&](const char* op) { return operand(0) + op + operand(1); };
    auto call = [&](const std::string& fn) {
      std::string out = fn + "(";
      for (size_t i = 0; i < a.size(); ++i) out += (i ? ", " : "") + a[i];
      return out + ")";
    };
    switch (n.kind) {
      case K::Integer: return std::to_string(n.value);
      case K::Symbol: return n.name;
      case K::Add: return infix(" + ");
      case K::Sub: return infix(" - ");
      case K::Mul: return infix("*");
      case K::Neg: return "-" + operand(0);
      case K::FloorDiv:  // bracketed whole, as sympy prints it: `((u0 + 1)//2)`
        return "(" + infix("//") + ")";
      case K::Mod: return "(" + infix(" % ") + ")";
      case K::Pow: return infix("**");
      case K::CeilDiv: return "math.ceil(" + a[0] + " / " + a[1] + ")";
      case K::TruncDiv: return "int(" + a[0] + " / " + a[1] + ")";
      case K::Max: return call("max");
      case K::Min: return call("min");
      case K::Eq: return infix(" == ");
      case K::Ne: return infix(" != ");
      case K::Lt: return infix(" < ");
      case K::Le: return infix(" <= ");
      case K::Gt: return infix(" > ");
      case K::Ge: return infix(" >= ");
      case K::Where: return "(" + a[1] + " if " + a[0] + " else " + a[2] + ")";
    }
    return call("?");
  };
  std::string s = spellSize(tree, spell);
  // The outermost brackets say nothing.
  bool bracketed = tree.kind == K::FloorDiv || tree.kind == K::Mod || tree.kind == K::Where;
  return bracketed ? s.substr(1, s.size() - 2) : s;
}

std::string renameSymbols(const std::string& expr, const std::vector<std::pair<std::string, std::string>>& names) {
  std::string s = expr;
  for (const auto& [symbol, name] : names) {
    if (name.empty()) continue;
    s = std::regex_replace(s, std::regex("\\b" + symbol + "\\b"), name);
  }
  return s;
}

}  // namespace dynrep::replay
