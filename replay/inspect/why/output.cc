// The why-answer (model.h) as text, the answer first: the per-function summaries, then each
// compile's headline, its user line, the fix and the facts. output_json.cc writes its JSON.
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

std::string frameText(const UserFrame& f) {
  if (f.file.empty()) return "(line not recorded)";
  std::string at = fmt::format("{}:{}", baseName(f.file), f.line);
  return f.code.empty() ? at : at + ": " + f.code;
}

void printAdvice(const std::vector<Advice>& advice, const std::string& indent, const InspectOptions& o,
                 std::ostream& out) {
  if (advice.empty()) return;
  fmt::print(out, "{}{}\n", indent, paint(o, "1", advice.size() > 1 ? "fix, most likely first:" : "fix:"));
  int n = 0;
  for (const Advice& a : advice) {
    fmt::print(out, "{}  {}. {}: {}\n", indent, ++n, paint(o, "32", adviceKindId(a.kind)), a.edit);
    fmt::print(out, "{}     why: {}\n", indent, a.why);
  }
}

// Where capture read a symbol's value (dynamo_replay.symbol_values "from").
std::string valueSource(const std::string& from) {
  if (from == "failure") return "read where the compiled code failed";
  if (from == "outputs") return "read from the graph's outputs on its first call";
  if (from == "partial_graph") return "the graph traced up to the failure, run on the call's inputs";
  return from.empty() ? "recorded" : from;
}

// "made by aten.nonzero.default (node nonzero) during dynamo": what made a symbol.
std::string madeText(const SymbolOrigin& o) {
  std::string made = o.op.empty() ? (o.source.empty() ? "made" : "reads " + o.source) : "made by " + o.op;
  if (!o.node.empty()) made += " (node " + o.node + ")";
  if (!o.phase.empty()) made += " during " + o.phase;
  return made;
}

void printSymbol(const SymbolAnswer& s, const std::string& indent, std::ostream& out) {
  std::string range =
      s.range ? "[" + numberText(s.range->first) + ", " + numberText(s.range->second) + "]" : "not recorded";
  fmt::print(out, "{}{}{}  {}, final range {}{}\n", indent, s.symbol, s.userName.empty() ? "" : " (" + s.userName + ")",
             s.unbacked ? "unbacked" : "backed", range, s.replacedBy.empty() ? "" : ", replaced by " + s.replacedBy);
  if (s.origin)
    fmt::print(out, "{}    {} at {}\n", indent, madeText(*s.origin), frameText(s.origin->userFrame));
  else
    fmt::print(out, "{}    origin not recorded (a store from before capture recorded symbol origins)\n", indent);
  if (s.valueOnRun)
    fmt::print(out, "{}    on this run {} was {} ({})\n", indent, s.symbol,
               dumpJson(recordedValue(s.valueOnRun->value)), valueSource(s.valueOnRun->from));
  for (const SymbolGuard& g : s.guards)
    fmt::print(out, "{}    {:<16} {}  at {}\n", indent, g.guard.kind, g.python, frameText(g.guard.userFrame));
}

void printProblem(const ProblemAnswer& p, const InspectOptions& o, std::ostream& out) {
  fmt::print(out, "  {}\n", frameText(p.userFrame));
  printAdvice(p.advice, "  ", o, out);
  if (p.advice.empty()) {
    fmt::print(out, "  no pattern of docs/why.md matches{}\n", p.pytorchHints.empty() ? "" : "; PyTorch's hints:");
    for (const std::string& h : p.pytorchHints) fmt::print(out, "    {}\n", h);
  }
  if (!p.symbols.empty()) fmt::print(out, "  {}\n", paint(o, "1", "symbols:"));
  for (const SymbolAnswer& s : p.symbols) printSymbol(s, "    ", out);
  std::string chain;
  for (const std::string& t : p.chain) chain += (chain.empty() ? "" : " <- ") + t;
  if (!p.message.empty()) fmt::print(out, "  PyTorch: {}{}\n", chain.empty() ? "" : chain + ": ", p.message);
}

// "(expected 8, saw 16)", or as much of it as was recorded.
std::string valuesText(const RecompileCause& r) {
  std::string expected = r.expected == r.guard ? "" : r.expected;  // capture keeps the guard when it has no value
  if (expected.empty() && r.seen.empty()) return "";
  if (r.seen.empty()) return " (expected " + expected + ")";
  return expected.empty() ? " (saw " + r.seen + ")" : fmt::format(" (expected {}, saw {})", expected, r.seen);
}

void printRecompile(const RecompileAnswer& r, const InspectOptions& o, std::ostream& out) {
  if (!r.main.guard.empty())
    fmt::print(out, "  failed guard of {}: {}{}\n", r.main.entry, r.main.guard, valuesText(r.main));
  printAdvice(r.advice ? std::vector<Advice>{*r.advice} : std::vector<Advice>{}, "  ", o, out);
  if (r.causes.size() < 2) return;
  fmt::print(out, "  every cache entry's failed guard, newest first:\n");
  for (const CauseAnswer& c : r.causes)
    fmt::print(out, "    {}{}: {}\n", c.cause.entry, c.primary ? " *" : "", c.cls.detail);
}

void printCompile(const CompileAnswer& c, bool first, const InspectOptions& o, std::ostream& out) {
  fmt::print(out, "{}{} {}\n", first ? "" : "\n", paint(o, "1", c.compileId), paint(o, "1", c.headline));
  for (size_t i = 0; i < c.problems.size(); ++i) {
    if (i > 0) fmt::print(out, "  {}\n", paint(o, "1", c.problems[i].headline));
    printProblem(c.problems[i], o, out);
  }
  if (c.recompile) {
    if (!c.problems.empty()) fmt::print(out, "  compiled again: {}\n", c.recompile->cls.detail);
    printRecompile(*c.recompile, o, out);
  }
  bool listed = false;  // --symbol: a problem's symbols already show it
  for (const ProblemAnswer& p : c.problems) listed = listed || !p.symbols.empty();
  if (c.symbol && !listed) {
    fmt::print(out, "  {}\n", paint(o, "1", "symbol:"));
    printSymbol(*c.symbol, "    ", out);
  }
}

void printText(const WhyAnswer& answer, const InspectOptions& o, std::ostream& out) {
  for (const FunctionSummary& f : answer.functions) {
    fmt::print(out, "{}:{}: {}\n", baseName(f.file), f.line, paint(o, "1", f.summary));
    for (const CauseSummary& c : f.causes)
      if (c.advice) fmt::print(out, "  {}: {}\n", paint(o, "32", adviceKindId(c.advice->kind)), c.advice->edit);
  }
  if (answer.compiles.empty() && answer.functions.empty()) {
    fmt::print(out, "nothing to explain: no compile failed, broke its graph or compiled again\n");
    return;
  }
  bool first = answer.functions.empty();
  for (const CompileAnswer& c : answer.compiles) {
    printCompile(c, first, o, out);
    first = false;
  }
}

}  // namespace

void writeWhyText(const WhyAnswer& answer, const InspectOptions& o, std::ostream& out) { printText(answer, o, out); }

std::string whyText(const WhyAnswer& answer) {
  std::ostringstream out;
  InspectOptions plain;
  plain.color = false;
  printText(answer, plain, out);
  return out.str();
}

}  // namespace dynrep::replay
