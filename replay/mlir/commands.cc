// replay-inspect mlir and replay-mlir lower-ir: which graph, the check before a module is
// written, and the module in the dialect asked for.
#include "dynrep/replay/mlir/commands.h"

#include <fstream>
#include <iterator>
#include <optional>

#include "command_text.h"
#include "dynrep/replay/mlir/check.h"
#include "engine.h"

namespace dynrep::replay::lowering {

namespace {

Dialect dialectNamed(const std::string& name) {
  return name == "torch" ? Dialect::Torch : name == "llvm" ? Dialect::LLVM : Dialect::Linalg;
}

void addNote(Report* report, ReportNote::Level level, std::string text) {
  report->notes.push_back({level, std::move(text)});
}

// Before a module is written, lower-check's verdict on the very module (lowered once), as a
// comment the module starts with; none (and why in the report's notes) when it computes a
// different number than the job did: a module that is known wrong is not written unless the
// user asks for it (--allow-different). `verified`: the check parsed and verified the module.
std::optional<std::string> checkBeforeWriting(const Job& job, const Compile& compile, const ChosenGraph& chosen,
                                              const LowerOptions& lowering, const MlirRequest& r, bool* verified,
                                              Report* report) {
  if (r.allowDifferent) return "// dynrep: not checked against the job's outputs (--allow-different)\n";
  CheckOptions options;
  options.library = lowering.library;
  options.store = r.store;
  options.runner = r.runner;
  GraphCheck g = checkLowered(job, compile, chosen.lowered.event, chosen, options);
  *verified = g.stage != CheckStage::Lowered && g.stage != CheckStage::NotVerified &&
              g.stage != CheckStage::NotLowered && g.stage != CheckStage::UnsupportedValue;
  std::string against = g.reference.empty() ? "the job's stored outputs" : g.reference;
  if (g.matched()) return "// dynrep: lower-check ran this module and it matched " + against + "\n";
  if (g.stage != CheckStage::Differs)
    return "// dynrep: not checked: " + (g.error.isOk() ? stageName(g.stage) : g.error.message()) + "\n";
  std::string why =
      "replay-inspect mlir: not written: lower-check ran this module and it computes a different number than " +
      against + ":";
  for (const OutputMatch& o : g.outputs)
    if (o.status == "differs" || o.status == "shape differs")
      why +=
          " output " + std::to_string(o.position) + " " + o.status + " (max |diff| " + shortNumber(o.maxAbsDiff) + ")";
  addNote(report, ReportNote::Level::Error,
          why + ". This is a bug in the lowering; --allow-different writes the module anyway");
  return std::nullopt;
}

// The module of a lowered graph verified (linalg, llvm; not again where the check did) as the
// report's output; issues and MLIR's diagnostics as its notes. An LLVM module that cannot be
// made leaves the output empty.
void emit(const LoweredGraph& lowered, Dialect dialect, bool verified, Report* report) {
  std::string text = lowered.text;
  if (!lowered.complete()) {
    addNote(report, ReportNote::Level::Error,
            lowered.event + ": " + std::to_string(lowered.issues.size()) + " of " + std::to_string(lowered.nodes) +
                " nodes not lowered (stood in for by calls to external functions)");
    for (std::string& line : issueLines(lowered.issues)) addNote(report, ReportNote::Level::Error, std::move(line));
    report->problemFound = true;
  }
  if (dialect == Dialect::LLVM || (dialect == Dialect::Linalg && !verified)) {
    try {
      std::unique_ptr<Module> module = Module::parse(text);
      if (dialect == Dialect::LLVM) {
        if (!lowered.complete()) {
          addNote(report, ReportNote::Level::Error, "replay-inspect mlir: --dialect llvm needs every node lowered");
          return;
        }
        text = module->toLLVM();
      }
    } catch (const std::exception& e) {  // MLIR's diagnostics: a linalg module is still written
      std::string diagnostics = e.what();
      if (!diagnostics.empty() && diagnostics.back() == '\n') diagnostics.pop_back();
      addNote(report, ReportNote::Level::Error, diagnostics);
      report->problemFound = true;
      if (dialect == Dialect::LLVM) return;
    }
  }
  report->output = std::move(text);
}

}  // namespace

Result<Report> mlirCommand(const Job& job, const MlirRequest& r) {
  const Compile* compile = job.find(r.compile);
  if (!compile) return Status::notFound("no compile " + r.compile + " in " + r.store);
  LowerOptions options;
  options.dialect = dialectNamed(r.dialect);
  Result<SymbolRanges> ranges = symbolRanges(job, *compile);
  if (!ranges.isOk()) return ranges.status();
  options.ranges = std::move(*ranges);
  options.compileId = compile->id.str();
  std::optional<Library> library;
  try {  // loadLibrary throws on a library MLIR does not parse
    if (!r.library.empty()) library = loadLibrary(r.library), options.library = &*library;
  } catch (const std::exception& e) {
    return Status::invalidArgument(e.what());
  }
  Result<std::pair<std::string, Graph>> stored = graphIr(job, *compile, r.graph);
  if (!stored.isOk()) return stored.status();
  Result<ChosenGraph> chosen = lowerStoredGraph(job, *compile, stored->first, options);
  if (!chosen.isOk()) return chosen.status();
  Report report;
  if (chosen->opset != "aten")
    addNote(&report, ReportNote::Level::Warning, chosen->lowered.event + ": " + chosen->reason);
  bool verified = false;
  if (options.dialect != Dialect::Torch && chosen->lowered.complete()) {
    std::optional<std::string> verdict = checkBeforeWriting(job, *compile, *chosen, options, r, &verified, &report);
    if (!verdict) {
      report.problemFound = true;
      return report;
    }
    chosen->lowered.text = *verdict + chosen->lowered.text;
  }
  emit(chosen->lowered, options.dialect, verified, &report);
  if (report.output.empty()) report.problemFound = true;
  return report;
}

Result<Report> lowerIrCommand(const MlirRequest& r) {
  std::ifstream file(r.store);
  if (!file.is_open()) return Status::ioError(r.store + " is not a readable graph IR (JSON)");
  Result<Graph> ir = parseGraph(std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()));
  if (!ir.isOk()) return Status::corruption(r.store + ": " + ir.status().message());
  LowerOptions options;
  options.dialect = dialectNamed(r.dialect);
  std::optional<Library> library;
  try {  // loadLibrary throws on a library MLIR does not parse
    if (!r.library.empty()) library = loadLibrary(r.library), options.library = &*library;
  } catch (const std::exception& e) {
    return Status::invalidArgument(e.what());
  }
  Result<LoweredGraph> lowered = lowerGraph(*ir, options);
  if (!lowered.isOk()) return lowered.status();
  Report report;
  emit(*lowered, options.dialect, /*verified=*/false, &report);
  if (report.output.empty()) report.problemFound = true;
  return report;
}

}  // namespace dynrep::replay::lowering
