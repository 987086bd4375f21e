// replay-inspect mlir and replay-mlir lower-ir: which graph, the check before a module is
// written, and the module in the dialect asked for.
#include "dynrep/replay/mlir/commands.h"

#include <fstream>
#include <iterator>
#include <optional>

#include <nlohmann/json.hpp>

#include "command_text.h"
#include "dynrep/replay/mlir/check.h"
#include "engine.h"
#include "iree.h"

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
                                              Report* report, const std::string& runtime = "jit") {
  if (r.allowDifferent) return "// dynrep: not checked against the job's outputs (--allow-different)\n";
  CheckOptions options;
  options.library = lowering.library;
  options.store = r.store;
  options.runner = r.runner;
  if (runtime == "iree") options.runtime = runtime, options.iree = r.iree;
  GraphCheck g = checkLowered(job, compile, chosen.lowered.event, chosen, options);
  *verified = g.stage != CheckStage::Lowered && g.stage != CheckStage::NotVerified &&
              g.stage != CheckStage::NotLowered && g.stage != CheckStage::UnsupportedValue;
  std::string against = g.reference.empty() ? "the job's stored outputs" : g.reference;
  std::string through = runtime == "iree" ? " through IREE" : "";
  if (g.matched()) return "// dynrep: lower-check ran this module" + through + " and it matched " + against + "\n";
  if (g.stage != CheckStage::Differs)
    return "// dynrep: not checked: " + (g.error.isOk() ? stageName(g.stage) : g.error.message()) + "\n";
  std::string why =
      "replay-inspect mlir: not written: lower-check ran this module and it computes a different number than " +
      against + ":";
  for (const OutputMatch& o : g.outputs)
    if (o.status == "differs" || o.status == "shape differs" || o.status == "dtype differs")
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

// The graph `r` names, lowered to `dialect`, with what the check needs: the options (symbol
// ranges, the library, which `library` holds) and the compile.
struct Lowered {
  const Compile* compile = nullptr;
  LowerOptions options;
  std::unique_ptr<Library> library;
  ChosenGraph chosen;
};

Result<Lowered> lowerRequested(const Job& job, const MlirRequest& r, Dialect dialect) {
  Lowered out;
  out.compile = job.find(r.compile);
  if (!out.compile) return Status::notFound("no compile " + r.compile + " in " + r.store);
  out.options.dialect = dialect;
  Result<SymbolRanges> ranges = symbolRanges(job, *out.compile);
  if (!ranges.isOk()) return ranges.status();
  out.options.ranges = std::move(*ranges);
  out.options.compileId = out.compile->id.str();
  try {  // loadLibrary throws on a library MLIR does not parse
    if (!r.library.empty())
      out.library = std::make_unique<Library>(loadLibrary(r.library)), out.options.library = out.library.get();
  } catch (const std::exception& e) {
    return Status::invalidArgument(e.what());
  }
  Result<std::pair<std::string, Graph>> stored = graphIr(job, *out.compile, r.graph);
  if (!stored.isOk()) return stored.status();
  Result<ChosenGraph> chosen = lowerStoredGraph(job, *out.compile, stored->first, out.options);
  if (!chosen.isOk()) return chosen.status();
  out.chosen = std::move(*chosen);
  return out;
}

// What a program calling the compiled module needs to know: each input in order, the stored
// value or size symbol it is, and each output.
std::string manifest(const MlirRequest& r, const Lowered& l, const std::string& verdict,
                     const std::vector<std::string>& flags) {
  using nlohmann::json;
  const LoweredGraph& g = l.chosen.lowered;
  std::string checked = verdict.substr(0, verdict.find('\n'));
  if (checked.rfind("// dynrep: ", 0) == 0) checked = checked.substr(11);
  json doc = {{"format", "dynrep-iree-manifest 1"},
              {"store", r.store},
              {"compile", l.compile->id.str()},
              {"graph", g.event},
              {"function", g.function},
              {"opset", l.chosen.opset},
              {"checked", checked},
              {"iree", {{"compile_flags", flags}, {"device", "local-task"}}},
              {"inputs", json::array()},
              {"outputs", json::array()},
              {"symbols", json::object()}};
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Port& port = g.inputs[i];
    json in = {{"position", i}, {"name", port.name}, {"type", port.type}};
    if (!port.random.empty()) {
      in["kind"] = "random";
      in["drawn_by"] = port.random;
      in["output"] = port.randomOutput;
    } else if (port.meta.kind == ValueMeta::Kind::Symbolic) {
      in["kind"] = "size";
      in["symbol"] = port.meta.sym;
    } else if (port.meta.isTensor()) {
      in["kind"] = "tensor";
      in["dtype"] = port.meta.tensor.dtype;
      json shape = json::array();
      for (const Dimension& d : port.meta.tensor.shape)
        d.isStatic() ? shape.push_back(d.size) : shape.push_back(d.expr);
      in["shape"] = shape;
    } else {
      in["kind"] = "scalar";
    }
    const Node* node = l.chosen.ir.find(port.name);
    if (node && node->input) {
      in["role"] = node->input->role;
      if (!node->input->name.empty()) in["qualified_name"] = node->input->name;
      if (!node->input->source.empty()) in["source"] = node->input->source;
    }
    if (node && node->feed) {  // which stored value it is: the call's input, a gradient, a saved value
      const Feed& f = *node->feed;
      in["fed_by"] = f.kind == Feed::Kind::SampleInput ? "input " + std::to_string(f.index) + " of the compiled call"
                     : f.kind == Feed::Kind::Tangent   ? "gradient of forward output " + std::to_string(f.index)
                                                       : "output " + std::to_string(f.index) + " of the forward graph";
    }
    doc["inputs"].push_back(in);
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const Port& port = g.outputs[i];
    if (port.result < 0) continue;  // a None output is not a result of the function
    doc["outputs"].push_back({{"position", i}, {"result", port.result}, {"type", port.type}});
  }
  for (const auto& [symbol, range] : l.options.ranges) doc["symbols"][symbol] = {range.first, range.second};
  return doc.dump(2) + "\n";
}

}  // namespace

Result<Report> mlirCommand(const Job& job, const MlirRequest& r) {
  Result<Lowered> l = lowerRequested(job, r, dialectNamed(r.dialect));
  if (!l.isOk()) return l.status();
  ChosenGraph& chosen = l->chosen;
  Report report;
  if (chosen.opset != "aten") addNote(&report, ReportNote::Level::Warning, chosen.lowered.event + ": " + chosen.reason);
  bool verified = false;
  if (l->options.dialect != Dialect::Torch && chosen.lowered.complete()) {
    std::optional<std::string> verdict =
        checkBeforeWriting(job, *l->compile, chosen, l->options, r, &verified, &report);
    if (!verdict) {
      report.problemFound = true;
      return report;
    }
    chosen.lowered.text = *verdict + chosen.lowered.text;
  }
  emit(chosen.lowered, l->options.dialect, verified, &report);
  if (report.output.empty()) report.problemFound = true;
  return report;
}

Result<IreeModuleFile> ireeCommand(const Job& job, const MlirRequest& r) {
  if (!r.iree.found()) return Status::notFound("replay-inspect mlir --target iree: " + r.iree.missing());
  Result<Lowered> l = lowerRequested(job, r, Dialect::Linalg);
  if (!l.isOk()) return l.status();
  ChosenGraph& chosen = l->chosen;
  IreeModuleFile out;
  Report& report = out.report;
  if (chosen.opset != "aten") addNote(&report, ReportNote::Level::Warning, chosen.lowered.event + ": " + chosen.reason);
  if (!chosen.lowered.complete()) {
    emit(chosen.lowered, Dialect::Linalg, false, &report);  // names the nodes not lowered
    report.output.clear();
    report.problemFound = true;
    return out;
  }
  bool verified = false;
  std::optional<std::string> verdict =
      checkBeforeWriting(job, *l->compile, chosen, l->options, r, &verified, &report, "iree");
  if (!verdict) {
    report.problemFound = true;
    return out;
  }
  std::unique_ptr<IreeModule> compiled;
  try {
    compiled = IreeModule::compile(r.iree, chosen.lowered.text);
  } catch (const std::exception& e) {
    addNote(&report, ReportNote::Level::Error, std::string("replay-inspect mlir --target iree: ") + e.what());
    report.problemFound = true;
    return out;
  }
  out.vmfb = compiled->vmfb();
  out.manifest = manifest(r, *l, *verdict, compiled->flags());
  addNote(&report, ReportNote::Level::Note, verdict->substr(0, verdict->size() - 1));
  return out;
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
