// replay-inspect lower-check: every graph of a store checked (check.h), reported as text or JSON
// with the operators that have no lowering.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include <nlohmann/json.hpp>

#include "command_text.h"
#include "dynrep/replay/mlir/check.h"
#include "dynrep/replay/mlir/commands.h"
#include "dynrep/replay/query/sizes.h"
#include "engine.h"

namespace dynrep::replay::lowering {

namespace {

using nlohmann::json;

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

// Each operator the checks met: how many nodes call it, how many of those were not lowered, its
// schema and a few of the user lines that call it.
struct OperatorCoverage {
  int nodes = 0, notLowered = 0;
  std::string schema;
  std::vector<std::string> lines;
};

struct Tally {
  std::map<std::string, OperatorCoverage> operators;
  int matched = 0, checked = 0;
};

Tally tally(const std::vector<GraphCheck>& checks) {
  Tally t;
  for (const GraphCheck& g : checks) {
    t.matched += g.matched();
    t.checked += g.stage != CheckStage::Static;
    for (const auto& [op, n] : g.operators) t.operators[op].nodes += n;
    for (const NodeIssue& i : g.issues) {
      if (i.op == "placeholder" || i.op == "output") continue;  // values, not operators: in the graph's error
      OperatorCoverage& c = t.operators[i.op];
      c.notLowered++;
      c.schema = i.schema;
      if (!i.line.empty() && c.lines.size() < 5) c.lines.push_back(i.line);
    }
  }
  return t;
}

std::string jsonReport(const LowerCheckRequest& r, const std::vector<GraphCheck>& checks, const Tally& t) {
  json doc = {{"store", r.store}, {"graphs", json::array()}, {"operators", json::object()}};
  for (const GraphCheck& g : checks) {
    json issues = json::array();
    for (const NodeIssue& i : g.issues)
      issues.push_back({{"node", i.node},
                        {"op", i.op},
                        {"schema", i.schema},
                        {"message", i.message},
                        {"line", i.line},
                        {"scope", i.scope}});
    json outputs = json::array();
    for (const OutputMatch& o : g.outputs)
      outputs.push_back({{"position", o.position}, {"status", o.status}, {"max_abs_diff", o.maxAbsDiff}});
    doc["graphs"].push_back({{"compile", g.compile},
                             {"graph", g.event},
                             {"nodes", g.nodes},
                             {"stage", stageName(g.stage)},
                             {"matched", g.matched()},
                             {"opset", g.opset},
                             {"opset_reason", g.opsetReason},
                             {"reference", g.reference},
                             {"error", g.error.message()},
                             {"issues", issues},
                             {"outputs", outputs},
                             {"runtime", g.runtime},
                             {"seconds",
                              {{"lower", g.lowerSeconds},
                               {"verify", g.verifySeconds},
                               {"jit", g.jitSeconds},
                               {"run", g.runSeconds},
                               {"call", g.callSeconds}}}});
  }
  for (const auto& [op, c] : t.operators)
    doc["operators"][op] = {
        {"nodes", c.nodes}, {"not_lowered", c.notLowered}, {"schema", c.schema}, {"lines", c.lines}};
  doc["summary"] = {{"graphs", t.checked}, {"matched", t.matched}, {"sizes", r.sizes}, {"runtime", r.runtime}};
  return doc.dump(2) + "\n";
}

std::string textReport(const LowerCheckRequest& r, const std::vector<GraphCheck>& checks, const Tally& t) {
  std::ostringstream out;
  for (const GraphCheck& g : checks) {
    out << g.compile << "  " << g.event << "  " << g.nodes << " nodes  " << stageName(g.stage);
    if (!g.outputs.empty()) {
      int bitwise = 0;
      double worst = 0;
      for (const OutputMatch& o : g.outputs) bitwise += o.status == "bitwise", worst = std::max(worst, o.maxAbsDiff);
      out << " (" << g.outputs.size() << " outputs: " << bitwise << " bitwise, max |diff| " << shortNumber(worst)
          << ")";
    }
    out << "  [lower " << seconds(g.lowerSeconds) << ", verify " << seconds(g.verifySeconds)
        << (g.runtime == "iree" ? ", iree-compile " : ", jit ") << seconds(g.jitSeconds);
    if (g.callSeconds > 0) out << ", " << shortNumber(g.callSeconds * 1e3) << " ms a call";
    out << "]\n";
    if (!g.reference.empty()) out << "    compared with " << g.reference << "\n";
    if (!g.opsetReason.empty()) out << "    " << (g.opset == "core_aten" ? "Core ATen: " : "") << g.opsetReason << "\n";
    const std::string& error = g.error.message();
    if (!error.empty() && (g.issues.empty() || g.stage == CheckStage::UnsupportedValue))
      out << "    " << error.substr(0, 2000) << (error.back() == '\n' ? "" : "\n");
    for (const OutputMatch& o : g.outputs)
      if (o.status != "bitwise" && o.status != "close")
        out << "    output " << o.position << ": " << o.status << ", max |diff| " << shortNumber(o.maxAbsDiff) << "\n";
    for (const std::string& line : issueLines(g.issues)) out << line << "\n";
  }
  int missing = 0;
  for (const auto& [op, c] : t.operators) missing += c.notLowered > 0;
  out << "\n"
      << t.matched << " of " << t.checked << " graphs matched" << (r.sizes.empty() ? "" : " at " + r.sizes)
      << (r.runtime == "iree" ? " through IREE" : "") << "; operators: " << t.operators.size() << ", " << missing
      << " not lowered\n";
  for (const auto& [op, c] : t.operators)
    if (c.notLowered > 0) {
      out << "  " << op << "  x" << c.notLowered << (c.schema.empty() ? "" : "  " + c.schema) << "\n";
      for (const std::string& l : c.lines) out << "      " << l << "\n";
    }
  return out.str();
}

}  // namespace

Result<Report> lowerCheckCommand(const Job& job, const LowerCheckRequest& r) {
  std::optional<Library> library;
  CheckOptions options;
  options.store = r.store;
  options.runner = r.runner;
  options.seed = r.seed;
  options.runtime = r.runtime;
  options.timeCalls = r.timeCalls;
  if (r.runtime == "iree") {
    if (!r.iree.found()) return Status::notFound("lower-check --runtime iree: " + r.iree.missing());
    options.iree = r.iree;
  }
  try {  // loadLibrary throws on a library MLIR does not parse
    if (!r.library.empty()) library = loadLibrary(r.library), options.library = &*library;
  } catch (const std::exception& e) {
    return Status::invalidArgument(e.what());
  }
  if (!r.sizes.empty()) {
    Result<Symbols> sizes = parseSizes(r.sizes);
    if (!sizes.isOk()) return sizes.status();
    options.sizes = *sizes;
  }
  std::vector<GraphCheck> checks = checkStore(job, options);
  Tally t = tally(checks);
  Report report;
  report.output = r.json ? jsonReport(r, checks, t) : textReport(r, checks, t);
  report.problemFound = t.matched != t.checked;
  return report;
}

}  // namespace dynrep::replay::lowering
