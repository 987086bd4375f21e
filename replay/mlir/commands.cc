// replay-inspect mlir and lower-check: options, which graphs, the text and JSON reports.
#include "dynrep/replay/mlir/commands.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <stdexcept>

#include "dynrep/replay/mlir/check.h"
#include "dynrep/replay/query/sizes.h"
#include "engine.h"

namespace dynrep::replay::lowering {

namespace {

using nlohmann::json;

// The store and its job, or a message naming what is wrong with it.
std::optional<OpenedJob> open(const std::string& path, std::ostream& err) {
  Result<OpenedJob> opened = openJob(path);
  if (!opened.isOk()) {
    err << "replay-inspect: " << opened.status().toString() << "\n";
    return std::nullopt;
  }
  return std::move(*opened);
}

void printIssues(const std::vector<NodeIssue>& issues, std::ostream& err) {
  for (const NodeIssue& i : issues) {
    err << "  not lowered: " << i.node << " = " << i.op << ": " << i.message << "\n";
    if (!i.line.empty()) err << "    at " << i.line << (i.scope.empty() ? "" : "  [" + i.scope + "]") << "\n";
  }
}

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

int emit(const LoweredGraph& lowered, const LowerOptions& options, const MlirRequest& r, bool verified,
         std::ostream& out, std::ostream& err);

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2g", v);
  return buf;
}

// Before a module is written, lower-check's verdict on the very module (lowered once), as a
// comment the module starts with; empty (and why on `err`) when it computes a different number
// than the job did: a module that is known wrong is not written unless the user asks for it
// (--allow-different). `verified`: the check parsed and verified the module.
std::string checkBeforeWriting(const Job& job, const Compile& compile, const ChosenGraph& chosen,
                               const LowerOptions& lowering, const MlirRequest& r, bool* verified, std::ostream& err) {
  if (r.allowDifferent) return "// dynrep: not checked against the job's outputs (--allow-different)\n";
  CheckOptions options;
  options.library = lowering.library;
  options.store = r.store;
  options.runner = r.runner;
  GraphCheck g = checkLowered(job, compile, chosen.lowered.event, chosen, options);
  *verified =
      g.stage != "lowered" && g.stage != "not verified" && g.stage != "not lowered" && g.stage != "unsupported value";
  std::string against = g.reference.empty() ? "the job's stored outputs" : g.reference;
  if (g.matched()) return "// dynrep: lower-check ran this module and it matched " + against + "\n";
  if (g.stage != "differs") return "// dynrep: not checked: " + (g.error.empty() ? g.stage : g.error) + "\n";
  err << "replay-inspect mlir: not written: lower-check ran this module and it computes a different number than "
      << against << ":";
  for (const OutputMatch& o : g.outputs)
    if (o.status == "differs" || o.status == "shape differs")
      err << " output " << o.position << " " << o.status << " (max |diff| " << number(o.maxAbsDiff) << ")";
  err << ". This is a bug in the lowering; --allow-different writes the module anyway\n";
  return "";
}

}  // namespace

int mlirCommand(const MlirRequest& r, std::ostream& out, std::ostream& err) {
  auto opened = open(r.store, err);
  if (!opened) return 2;
  const Compile* compile = opened->job.find(r.compile);
  if (!compile) {
    err << "replay-inspect mlir: no compile " << r.compile << " in " << r.store << "\n";
    return 2;
  }
  std::optional<Library> library;
  LowerOptions options;
  options.dialect = r.dialect == "torch" ? Dialect::Torch : r.dialect == "llvm" ? Dialect::LLVM : Dialect::Linalg;
  options.ranges = symbolRanges(opened->job, *compile);
  options.compileId = compile->id.str();
  ChosenGraph chosen;
  try {
    if (!r.library.empty()) library = loadLibrary(r.library), options.library = &*library;
    Result<std::pair<std::string, Graph>> stored = graphIr(opened->job, *compile, r.graph);
    if (!stored.isOk()) throw std::invalid_argument(stored.status().message());
    Result<ChosenGraph> lowered = lowerStoredGraph(opened->job, *compile, stored->first, options);
    if (!lowered.isOk()) throw std::invalid_argument(lowered.status().message());
    if (lowered->opset != "aten") err << lowered->lowered.event << ": " << lowered->reason << "\n";
    chosen = std::move(*lowered);
  } catch (const std::exception& e) {
    err << "replay-inspect mlir: " << e.what() << "\n";
    return 2;
  }
  bool verified = false;
  if (options.dialect != Dialect::Torch && chosen.lowered.complete()) {
    std::string verdict = checkBeforeWriting(opened->job, *compile, chosen, options, r, &verified, err);
    if (verdict.empty()) return 1;
    chosen.lowered.text = verdict + chosen.lowered.text;
  }
  return emit(chosen.lowered, options, r, verified, out, err);
}

int lowerIrCommand(const MlirRequest& r, std::ostream& out, std::ostream& err) {
  std::ifstream file(r.store);
  if (!file.is_open()) {
    err << "replay-mlir lower-ir: " << r.store << " is not a readable graph IR (JSON)\n";
    return 2;
  }
  Result<Graph> ir = parseGraph(std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()));
  if (!ir.isOk()) {
    err << "replay-mlir lower-ir: " << r.store << ": " << ir.status().message() << "\n";
    return 2;
  }
  std::optional<Library> library;
  LowerOptions options;
  options.dialect = r.dialect == "torch" ? Dialect::Torch : r.dialect == "llvm" ? Dialect::LLVM : Dialect::Linalg;
  LoweredGraph lowered;
  try {
    if (!r.library.empty()) library = loadLibrary(r.library), options.library = &*library;
    Result<LoweredGraph> result = lowerGraph(*ir, options);
    if (!result.isOk()) throw std::invalid_argument(result.status().message());
    lowered = std::move(*result);
  } catch (const std::exception& e) {
    err << "replay-mlir lower-ir: " << e.what() << "\n";
    return 2;
  }
  return emit(lowered, options, r, /*verified=*/false, out, err);
}

namespace {

// The module of a lowered graph verified (linalg, llvm; not again where the check did) and
// written; issues reported.
int emit(const LoweredGraph& lowered, const LowerOptions& options, const MlirRequest& r, bool verified,
         std::ostream& out, std::ostream& err) {
  std::string text = lowered.text;
  int status = 0;
  if (!lowered.complete()) {
    err << lowered.event << ": " << lowered.issues.size() << " of " << lowered.nodes
        << " nodes not lowered (stood in for by calls to external functions)\n";
    printIssues(lowered.issues, err);
    status = 1;
  }
  if (options.dialect == Dialect::LLVM || (options.dialect == Dialect::Linalg && !verified)) {
    try {
      std::unique_ptr<Module> module = Module::parse(text);
      if (options.dialect == Dialect::LLVM) {
        if (!lowered.complete()) {
          err << "replay-inspect mlir: --dialect llvm needs every node lowered\n";
          return 1;
        }
        text = module->toLLVM();
      }
    } catch (const std::exception& e) {  // MLIR's diagnostics: the module is still written
      err << e.what() << (std::string(e.what()).back() == '\n' ? "" : "\n");
      if (options.dialect == Dialect::LLVM) return 1;
      status = 1;
    }
  }
  if (r.output.empty()) {
    out << text;
  } else {
    std::ofstream file(r.output);
    file << text;
    if (!file) {
      err << "replay-inspect mlir: cannot write " << r.output << "\n";
      return 2;
    }
  }
  return status;
}

}  // namespace

int lowerCheckCommand(const LowerCheckRequest& r, std::ostream& out, std::ostream& err) {
  auto opened = open(r.store, err);
  if (!opened) return 2;
  std::optional<Library> library;
  CheckOptions options;
  options.store = r.store;
  options.runner = r.runner;
  options.seed = r.seed;
  try {
    if (!r.library.empty()) library = loadLibrary(r.library), options.library = &*library;
    if (!r.sizes.empty()) {
      Result<Symbols> sizes = parseSizes(r.sizes);
      if (!sizes.isOk()) throw std::invalid_argument(sizes.status().message());
      options.sizes = *sizes;
    }
  } catch (const std::exception& e) {
    err << "replay-inspect lower-check: " << e.what() << "\n";
    return 2;
  }
  std::vector<GraphCheck> checks = checkStore(opened->job, options);
  std::map<std::string, std::pair<int, int>> coverage;  // op -> (nodes, not lowered)
  std::map<std::string, std::string> schemas;
  std::map<std::string, std::vector<std::string>> lines;
  int matched = 0, checked = 0;
  for (const GraphCheck& g : checks) {
    matched += g.matched();
    checked += g.stage != "static";
    for (const auto& [op, n] : g.operators) coverage[op].first += n;
    for (const NodeIssue& i : g.issues) {
      if (i.op == "placeholder" || i.op == "output") continue;  // values, not operators: in the graph's error
      coverage[i.op].second++;
      schemas[i.op] = i.schema;
      if (!i.line.empty() && lines[i.op].size() < 5) lines[i.op].push_back(i.line);
    }
  }
  if (r.json) {
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
      doc["graphs"].push_back(
          {{"compile", g.compile},
           {"graph", g.event},
           {"nodes", g.nodes},
           {"stage", g.stage},
           {"matched", g.matched()},
           {"opset", g.opset},
           {"opset_reason", g.opsetReason},
           {"reference", g.reference},
           {"error", g.error},
           {"issues", issues},
           {"outputs", outputs},
           {"seconds",
            {{"lower", g.lowerSeconds}, {"verify", g.verifySeconds}, {"jit", g.jitSeconds}, {"run", g.runSeconds}}}});
    }
    for (const auto& [op, c] : coverage)
      doc["operators"][op] = {
          {"nodes", c.first}, {"not_lowered", c.second}, {"schema", schemas[op]}, {"lines", lines[op]}};
    doc["summary"] = {{"graphs", checked}, {"matched", matched}, {"sizes", r.sizes}};
    out << doc.dump(2) << "\n";
  } else {
    for (const GraphCheck& g : checks) {
      out << g.compile << "  " << g.event << "  " << g.nodes << " nodes  " << g.stage;
      if (!g.outputs.empty()) {
        int bitwise = 0;
        double worst = 0;
        for (const OutputMatch& o : g.outputs) bitwise += o.status == "bitwise", worst = std::max(worst, o.maxAbsDiff);
        out << " (" << g.outputs.size() << " outputs: " << bitwise << " bitwise, max |diff| " << number(worst) << ")";
      }
      out << "  [lower " << seconds(g.lowerSeconds) << ", verify " << seconds(g.verifySeconds) << ", jit "
          << seconds(g.jitSeconds) << "]\n";
      if (!g.reference.empty()) out << "    compared with " << g.reference << "\n";
      if (!g.opsetReason.empty())
        out << "    " << (g.opset == "core_aten" ? "Core ATen: " : "") << g.opsetReason << "\n";
      if (!g.error.empty() && (g.issues.empty() || g.stage == "unsupported value"))
        out << "    " << g.error.substr(0, 2000) << (g.error.back() == '\n' ? "" : "\n");
      for (const OutputMatch& o : g.outputs)
        if (o.status != "bitwise" && o.status != "close")
          out << "    output " << o.position << ": " << o.status << ", max |diff| " << number(o.maxAbsDiff) << "\n";
      printIssues(g.issues, out);
    }
    int missing = 0;
    for (const auto& [op, c] : coverage) missing += c.second > 0;
    out << "\n"
        << matched << " of " << checked << " graphs matched" << (r.sizes.empty() ? "" : " at " + r.sizes)
        << "; operators: " << coverage.size() << ", " << missing << " not lowered\n";
    for (const auto& [op, c] : coverage)
      if (c.second > 0) {
        out << "  " << op << "  x" << c.second << (schemas[op].empty() ? "" : "  " + schemas[op]) << "\n";
        for (const std::string& l : lines[op]) out << "      " << l << "\n";
      }
  }
  return matched == checked ? 0 : 1;
}

}  // namespace dynrep::replay::lowering
