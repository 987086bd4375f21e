// The why-answer (model.cc) as text, the answer first: the per-function summaries, then each
// compile's headline, its user line, the fix and the facts. command.cc prints the JSON as it is.
#include "why/output.h"

#include <sstream>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "dynrep/replay/inspect/inspect.h"
#include "dynrep/replay/query/json_fields.h"
#include "provenance.h"
#include "render.h"

namespace dynrep::replay {

namespace {

using nlohmann::json;

std::string frameText(const json& f) {
  if (!f.is_object()) return "(line not recorded)";
  std::string at = fmt::format("{}:{}", baseName(field(f, "file", "?")), field<int>(f, "line", 0));
  std::string code = field(f, "code", "");
  return code.empty() ? at : at + ": " + code;
}

void printAdvice(const json& advice, const std::string& indent, const InspectOptions& o, std::ostream& out) {
  if (advice.empty()) return;
  fmt::print(out, "{}{}\n", indent, paint(o, "1", advice.size() > 1 ? "fix, most likely first:" : "fix:"));
  int n = 0;
  for (const json& a : advice) {
    fmt::print(out, "{}  {}. {}: {}\n", indent, ++n, paint(o, "32", field(a, "kind", "?")), field(a, "edit", ""));
    fmt::print(out, "{}     why: {}\n", indent, field(a, "why", ""));
  }
}

// Where capture read a symbol's value (dynamo_replay.symbol_values "from").
std::string valueSource(const std::string& from) {
  if (from == "failure") return "read where the compiled code failed";
  if (from == "outputs") return "read from the graph's outputs on its first call";
  if (from == "partial_graph") return "the graph traced up to the failure, run on the call's inputs";
  return from.empty() ? "recorded" : from;
}

void printSymbol(const json& s, const std::string& indent, std::ostream& out) {
  std::string name = field(s, "symbol", "?");
  std::string user = field(s, "user_name", "");
  fmt::print(out, "{}{}{}  {}, final range {}{}\n", indent, name, user.empty() ? "" : " (" + user + ")",
             field<bool>(s, "unbacked", false) ? "unbacked" : "backed",
             arrayField(s, "range").size() == 2 ? rangeText(s) : "not recorded",
             field(s, "replaced_by", "").empty() ? "" : ", replaced by " + field(s, "replaced_by", ""));
  const json origin = s.value("origin", json());
  if (origin.is_object()) {
    std::string op = field(origin, "op", "");
    std::string node = field(origin, "node", "");
    std::string source = field(origin, "source", "");
    std::string made = op.empty() ? (source.empty() ? "made" : "reads " + source) : "made by " + op;
    if (!node.empty()) made += " (node " + node + ")";
    if (!field(origin, "phase", "").empty()) made += " during " + field(origin, "phase", "");
    fmt::print(out, "{}    {} at {}\n", indent, made, frameText(origin.value("user_frame", json())));
  } else {
    fmt::print(out, "{}    origin not recorded (a store from before capture recorded symbol origins)\n", indent);
  }
  const json value = s.value("value_on_run", json());
  if (value.is_object())
    fmt::print(out, "{}    on this run {} was {} ({})\n", indent, name, dumpJson(value.value("value", json())),
               valueSource(field(value, "from", "")));
  for (const json& g : arrayField(s, "guards"))
    fmt::print(out, "{}    {:<16} {}  at {}\n", indent, field(g, "kind", "guard"), field(g, "python", ""),
               frameText(g.value("user_frame", json())));
}

void printProblem(const json& p, const InspectOptions& o, std::ostream& out) {
  fmt::print(out, "  {}\n", frameText(p.value("user_frame", json())));
  printAdvice(arrayField(p, "advice"), "  ", o, out);
  if (arrayField(p, "advice").empty()) {
    fmt::print(out, "  no pattern of docs/why.md matches{}\n",
               arrayField(p, "pytorch_hints").empty() ? "" : "; PyTorch's hints:");
    for (const json& h : arrayField(p, "pytorch_hints"))
      fmt::print(out, "    {}\n", h.is_string() ? h.get<std::string>() : "");
  }
  if (!arrayField(p, "symbols").empty()) fmt::print(out, "  {}\n", paint(o, "1", "symbols:"));
  for (const json& s : arrayField(p, "symbols")) printSymbol(s, "    ", out);
  std::string chain;
  for (const json& t : arrayField(p, "chain"))
    chain += (chain.empty() ? "" : " <- ") + (t.is_string() ? t.get<std::string>() : "?");
  std::string message = field(p, "message", "");
  if (!message.empty()) fmt::print(out, "  PyTorch: {}{}\n", chain.empty() ? "" : chain + ": ", message);
}

// "(expected 8, saw 16)", or as much of it as was recorded.
std::string valuesText(const json& r) {
  std::string expected = field(r, "expected", ""), seen = field(r, "seen", "");
  if (expected == field(r, "guard", "")) expected.clear();  // capture keeps the guard itself when it has no value
  if (expected.empty() && seen.empty()) return "";
  if (seen.empty()) return " (expected " + expected + ")";
  return expected.empty() ? " (saw " + seen + ")" : fmt::format(" (expected {}, saw {})", expected, seen);
}

void printRecompile(const json& r, const InspectOptions& o, std::ostream& out) {
  if (!field(r, "guard", "").empty())
    fmt::print(out, "  failed guard of {}: {}{}\n", field(r, "entry", "?"), field(r, "guard", ""), valuesText(r));
  printAdvice(arrayField(r, "advice"), "  ", o, out);
  const json causes = arrayField(r, "causes");
  if (causes.size() < 2) return;
  fmt::print(out, "  every cache entry's failed guard, newest first:\n");
  for (const json& c : causes)
    fmt::print(out, "    {}{}: {}\n", field(c, "entry", "?"), field<bool>(c, "primary", false) ? " *" : "",
               field(c, "detail", ""));
}

void printText(const json& answer, const InspectOptions& o, std::ostream& out) {
  const json functions = arrayField(answer, "functions");
  for (const json& f : functions) {
    fmt::print(out, "{}:{}: {}\n", baseName(field(f, "file", "?")), field<int>(f, "line", 0),
               paint(o, "1", field(f, "summary", "")));
    for (const json& c : arrayField(f, "causes")) {
      const json a = c.value("advice", json());
      if (a.is_object()) fmt::print(out, "  {}: {}\n", paint(o, "32", field(a, "kind", "?")), field(a, "edit", ""));
    }
  }
  const json compiles = arrayField(answer, "compiles");
  if (compiles.empty() && functions.empty()) {
    fmt::print(out, "nothing to explain: no compile failed, broke its graph or compiled again\n");
    return;
  }
  bool first = functions.empty();
  for (const json& c : compiles) {
    fmt::print(out, "{}{} {}\n", first ? "" : "\n", paint(o, "1", field(c, "compile_id", "?")),
               paint(o, "1", field(c, "headline", "")));
    first = false;
    const json problems = arrayField(c, "problems");
    for (size_t i = 0; i < problems.size(); ++i) {
      if (i > 0) fmt::print(out, "  {}\n", paint(o, "1", field(problems[i], "headline", "")));
      printProblem(problems[i], o, out);
    }
    if (c.contains("recompile")) {
      if (!problems.empty()) fmt::print(out, "  compiled again: {}\n", field(c["recompile"], "detail", ""));
      printRecompile(c["recompile"], o, out);
    }
    bool listed = false;  // --symbol: a problem's symbols already show it
    for (const json& p : problems) listed = listed || !arrayField(p, "symbols").empty();
    if (c.contains("symbols") && !listed) {
      fmt::print(out, "  {}\n", paint(o, "1", "symbol:"));
      for (const json& s : arrayField(c, "symbols")) printSymbol(s, "    ", out);
    }
  }
}

}  // namespace

void writeWhyText(const nlohmann::json& answer, const InspectOptions& o, std::ostream& out) {
  printText(answer, o, out);
}

std::string whyText(const nlohmann::json& answer) {
  std::ostringstream out;
  InspectOptions plain;
  plain.color = false;
  printText(answer, plain, out);
  return out.str();
}

}  // namespace dynrep::replay
