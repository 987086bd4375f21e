// The guard-text table of docs/why.md ("Recompile causes"): which kind of failed guard a
// recompile cause is, from PyTorch's guard text, and how the per-function summary says it.
// The texts the rows key on are PyTorch 2.13's: csrc/dynamo/guards.cpp's TensorCheck ("tensor 'x'
// size mismatch at index 0. expected 8, actual 16", "dtype mismatch", "requires_grad mismatch",
// "rank mismatch", "stride mismatch"), the 0/1 note of _dynamo/guards.py ("... due to 0/1
// specialization in the framework ..."), the CONSTANT_MATCH / EQUALS_MATCH guards
// ("L['scale'] == 0.5"), ID_MATCH ("___check_obj_id") and TYPE_MATCH ("___check_type_id").
#include <regex>

#include <fmt/format.h>

#include "render.h"
#include "why/patterns.h"
#include "why/python_lines.h"
#include "why/torch_text.h"

namespace dynrep::replay {

namespace {

using pyline::has;

bool floatLiteral(const std::string& v) {
  static const std::regex kFloat(R"(-?(\d+\.\d*|\.\d+|\d+(\.\d*)?e[-+]?\d+|inf|nan))");
  return std::regex_match(v, kFloat);
}
bool intLiteral(const std::string& v) {
  static const std::regex kInt(R"(-?\d+)");
  return std::regex_match(v, kInt);
}

std::string values(const RecompileCause& c) {
  if (c.expected.empty() && c.seen.empty()) return "";
  if (c.seen.empty()) return fmt::format(" (was {})", c.expected);
  return fmt::format(" ({}, then {})", c.expected.empty() ? "?" : c.expected, c.seen);
}

// A cause class whose detail is its description with the values the guard names.
CauseClass described(const char* cause, const std::string& subject, const std::string& description,
                     const std::string& values = "") {
  return {cause, subject, description, description + values};
}

// One failed guard as the rows see it.
struct Guard {
  const RecompileCause& c;
  std::string text;     // the text the rows match: PyTorch's reason, else the guard itself
  std::string subject;  // its source as the user names it: x.size(0)
  bool wentDynamic;     // the new compile made the subject a symbol
};

// A dynamic size's own guard, "2 <= x.size()[0]" (or "x.size()[0] >= 2"), names its source.
const std::regex& atLeastTwo() {
  static const std::regex kAtLeastTwo(R"(^2 <= (.+?)\s*$|^(.+?) >= 2\s*$)");
  return kAtLeastTwo;
}

CauseClass describeSize01(const char* cause, const Guard& g) {
  std::string subject = g.subject;
  std::smatch m;
  if (subject.empty() && std::regex_search(g.c.guard, m, atLeastTwo()))
    subject = prettySource(m[1].matched ? m[1].str() : m[2].str());
  std::string seen = g.c.seen.empty() ? "0 or 1" : g.c.seen;
  return {cause, subject, fmt::format("{} == {} outside the dynamic range", subject, seen),
          fmt::format("{} == {} outside the dynamic range (sizes 0 and 1 are specialized)", subject, seen)};
}

CauseClass describeRequiresGrad(const char* cause, const Guard& g) {
  std::string t = prettyTensor(g.c.source);
  RecompileCause named = g.c;  // the guard says requires_grad=0; say False
  for (std::string* v : {&named.expected, &named.seen}) *v = *v == "0" ? "False" : *v == "1" ? "True" : *v;
  return described(cause, t, t + ".requires_grad changed", values(named));
}

bool constant(const Guard& g) { return !g.c.source.empty() && !g.c.expected.empty(); }

struct GuardTextRow {
  const char* cause;
  const char* texts[2];           // any of these in the guard's text; nullptr: unused
  bool (*matches)(const Guard&);  // or this holds; nullptr: unused
  CauseClass (*describe)(const char* cause, const Guard&);
};

// One row per cause, first match wins: the order is the table's.
const GuardTextRow kGuardTexts[] = {
    {"size_0_1",
     {"0/1 specialization"},
     [](const Guard& g) { return std::regex_search(g.c.guard, atLeastTwo()); },
     describeSize01},
    {"size_changed",
     {"size mismatch at index"},
     nullptr,
     [](const char* cause, const Guard& g) {
       return described(cause, g.subject, g.subject + (g.wentDynamic ? " went dynamic" : " changed"), values(g.c));
     }},
    {"dtype_change",
     {"dtype mismatch"},
     nullptr,
     [](const char* cause, const Guard& g) {
       std::string t = prettyTensor(g.c.source);
       return described(cause, t, t + "'s dtype changed", values(g.c));
     }},
    {"requires_grad_change", {"requires_grad mismatch"}, nullptr, describeRequiresGrad},
    {"rank_change",
     {"rank mismatch"},
     nullptr,
     [](const char* cause, const Guard& g) {
       std::string t = prettyTensor(g.c.source);
       return described(cause, t, t + "'s number of dimensions changed", values(g.c));
     }},
    {"stride_change",
     {"stride mismatch"},
     nullptr,
     [](const char* cause, const Guard& g) {
       return described(cause, g.subject, g.subject + " changed", values(g.c));
     }},
    {"object_changed",
     {"___check_obj_id", "ID_MATCH"},
     nullptr,
     [](const char* cause, const Guard& g) { return described(cause, g.subject, "another object in " + g.subject); }},
    {"type_changed",
     {"___check_type_id", "TYPE_MATCH"},
     nullptr,
     [](const char* cause, const Guard& g) { return described(cause, g.subject, g.subject + "'s type changed"); }},
    {"float_constant",
     {},
     [](const Guard& g) { return constant(g) && floatLiteral(g.c.expected); },
     [](const char* cause, const Guard& g) {
       return described(cause, g.subject, g.subject + " changed, a float constant", values(g.c));
     }},
    {"length_changed",
     {},
     [](const Guard& g) { return constant(g) && intLiteral(g.c.expected) && g.subject.rfind("len(", 0) == 0; },
     [](const char* cause, const Guard& g) {
       return described(cause, g.subject, g.subject + " changed", values(g.c));
     }},
    {"int_constant",
     {},
     [](const Guard& g) { return constant(g) && intLiteral(g.c.expected); },
     [](const char* cause, const Guard& g) {
       return described(cause, g.subject, g.subject + " changed, an int constant", values(g.c));
     }},
    {"constant_changed",
     {},
     constant,
     [](const char* cause, const Guard& g) {
       return described(cause, g.subject, g.subject + " changed, a constant", values(g.c));
     }},
    {"other",
     {},
     [](const Guard&) { return true; },
     [](const char* cause, const Guard& g) {
       std::string guard = g.c.guard.empty() ? g.text : g.c.guard;
       return described(cause, guard, "guard " + guard + " failed");
     }},
};

// Capture compared the graph's inputs with the call's: the source says what differs, in the
// words of the TensorCheck text the rows match.
std::string comparedText(const RecompileCause& c) {
  static const std::regex kWhat(R"(\.(size\(\)\[\d+\]|dtype|dim\(\)|requires_grad)$)");
  std::smatch m;
  std::string what = std::regex_search(c.source, m, kWhat) ? m[1].str() : "";
  if (what.rfind("size", 0) == 0) return "size mismatch at index";
  if (what == "dtype") return "dtype mismatch";
  if (what == "dim()") return "rank mismatch";
  if (what == "requires_grad") return "requires_grad mismatch";
  return "";
}

}  // namespace

CauseClass classifyCause(const RecompileCause& cause, bool wentDynamic) {
  RecompileCause c = cause;  // bounded for std::regex, as in adviseProblem
  for (std::string* s : {&c.guard, &c.text, &c.source, &c.expected}) *s = s->substr(0, 4096);
  Guard g{c, c.text.empty() ? c.guard : c.text, prettySource(c.source), wentDynamic};
  if (c.from == "compared")
    if (std::string text = comparedText(c); !text.empty()) g.text = text;
  for (const GuardTextRow& row : kGuardTexts) {
    bool hit = row.matches && row.matches(g);
    for (const char* t : row.texts) hit = hit || (t && has(g.text, t));
    if (hit) return row.describe(row.cause, g);
  }
  return described("other", g.subject, "guard failed");  // unreachable: the last row matches every guard
}

std::string prettyTensor(const std::string& source) {
  std::string s = prettySource(source);
  static const std::regex kAttr(R"(^(.*)\.(size|stride|dtype|rank|requires_grad|dim)(\(\d*\))?$)");
  std::smatch m;
  return std::regex_match(s, m, kAttr) ? m[1].str() : s;
}

std::string tensorSource(const std::string& source) {
  static const std::regex kAttr(R"(^(.*?)(\.(size|stride)\(\)\[\d+\]|\.dtype|\.dim\(\)|\.requires_grad)$)");
  std::smatch m;
  return std::regex_match(source, m, kAttr) ? m[1].str() : source;
}

}  // namespace dynrep::replay
