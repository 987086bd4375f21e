// replay-inspect: reads a store without the model and without PyTorch. A thin shell over
// dynrep::replay's inspect calls: exit 0 ok, 1 a problem found in the data, 2 bad usage.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "dynrep/replay/inspect/inspect.h"
#include "tool_main.h"

namespace {

using dynrep::tools::besideSelf;
using dynrep::tools::isExecutable;

// Prints a command's Report (stdout: the report; stderr: its notes) or why the command could not
// run, and chooses the exit code: 0, 1 a problem found in the data, `failed` when it did not run.
int printed(const dynrep::Result<dynrep::replay::Report>& result, const dynrep::replay::InspectOptions& o,
            int failed = 1) {
  using Level = dynrep::replay::ReportNote::Level;
  auto label = [&](Level level) {
    const char* text = level == Level::Error ? "error" : level == Level::Warning ? "warning" : "note";
    const char* ansi = level == Level::Error ? "31" : "33";
    return o.color ? std::string("\033[") + ansi + "m" + text + "\033[0m" : std::string(text);
  };
  if (!result.isOk()) {
    std::cerr << label(Level::Error) << ": " << result.status().message() << "\n";
    return failed;
  }
  std::cout << result->output << std::flush;
  for (const dynrep::replay::ReportNote& note : result->notes)
    std::cerr << label(note.level) << ": " << note.text << "\n";
  return result->problemFound ? 1 : 0;
}

// `replay-inspect run ...` is replay-run's: the runner links libtorch, which replay-inspect
// never does. It is looked for beside this executable, where the package installs both.
int handOverToRunner(char** argv) {
  std::string runner = besideSelf("replay-run");
  if (isExecutable(runner)) {
    argv[1] = const_cast<char*>("replay-run");
    ::execv(runner.c_str(), argv + 1);
  }
  std::cerr << "replay-inspect run: needs replay-run, the libtorch graph runner, which is not at " << runner
            << ". It is built with the Python package where torch is installed: pip install torch==2.13.0, "
               "then rebuild dynamo-replay (make test or pip install -e .).\n";
  return 2;
}

// `mlir` and `lower-check` are replay-mlir's, which links MLIR 19; same arrangement.
int handOverToLowering(char** argv) {
  std::string tool = besideSelf("replay-mlir");
  if (isExecutable(tool)) {
    argv[0] = const_cast<char*>("replay-mlir");
    ::execv(tool.c_str(), argv);
  }
  std::cerr << "replay-inspect " << argv[1] << ": needs replay-mlir, the MLIR lowering, which is not at " << tool
            << ". It is built where MLIR 19 is installed: apt-get install libmlir-19-dev mlir-19-tools llvm-19-dev, "
               "then rebuild dynamo-replay (make test or pip install -e .).\n";
  return 2;
}

int run(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "run") return handOverToRunner(argv);
  if (argc > 1 && (std::string(argv[1]) == "mlir" || std::string(argv[1]) == "lower-check"))
    return handOverToLowering(argv);
  CLI::App app{"Inspect a dynamo-replay store offline", "replay-inspect"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "replay-inspect " DYNREP_VERSION);
  bool json = false;
  std::string color = "auto";
  app.add_option("--color", color, "colour in text output")->check(CLI::IsMember({"auto", "always", "never"}));
  std::string path, compileId;
  bool blobs = false, records = false;
  dynrep::replay::ShowSections sections;

  auto* info = app.add_subcommand("info", "header, versions, state, record and blob counts, compression ratio");
  auto* ls = app.add_subcommand("ls", "frames and compiles of a captured job (--records, --blobs: the raw store)");
  auto* verify = app.add_subcommand("verify", "check every checksum and blob hash; exit 1 when any fails");
  auto* show = app.add_subcommand("show", "one compile in detail: reason, guards, code, graphs, symbolic shapes");
  auto* why = app.add_subcommand(
      "why",
      "why compiles failed, broke their graphs, compiled again or failed at run time, and the fix (docs/why.md)");
  auto* diff =
      app.add_subcommand("diff", "two compiles or two stores of one job: guards, graphs, settings, environment; "
                                 "exit 0 same, 1 different, 2 trouble");
  // Listed for --help only: main() hands `run` to replay-run before parsing.
  app.add_subcommand("run", "run a stored aten graph through libtorch and check its outputs (replay-run --help)")
      ->allow_extras();
  app.add_subcommand("mlir",
                     "a stored graph as MLIR (torch dialect, linalg or LLVM) or compiled by IREE (replay-inspect mlir "
                     "--help)")
      ->allow_extras();
  app.add_subcommand("lower-check",
                     "lower, verify, run and compare every graph through MLIR's JIT or IREE (lower-check --help)")
      ->allow_extras();
  for (auto* sub : {info, ls, verify, show}) {
    sub->add_option("STORE", path, "store file")->required();
    sub->add_flag("--json", json, "machine-readable output");
    sub->add_option("--color", color, "colour in text output")->check(CLI::IsMember({"auto", "always", "never"}));
  }
  ls->add_flag("--blobs", blobs, "list blobs");
  ls->add_flag("--records", records, "list typed records");
  ls->get_option("--blobs")->excludes("--records");
  show->add_option("COMPILE_ID", compileId, "compile id as ls prints it, e.g. 0/1")->required();
  std::vector<std::string> diffOperands;
  diff->add_option("OPERANDS", diffOperands,
                   "STORE A_ID B_ID, STORE B_ID (against the compile it replaced), or A_STORE B_STORE")
      ->required()
      ->expected(2, 3);
  diff->add_option("--compile", compileId, "between two stores: only the compile with this id");
  diff->add_flag("--json", json, "machine-readable output");
  diff->add_option("--color", color, "colour in text output")->check(CLI::IsMember({"auto", "always", "never"}));
  std::string whySymbol;
  why->add_option("STORE", path, "store file")->required();
  why->add_option("COMPILE_ID", compileId, "only this compile, e.g. 0/1");
  why->add_option("--symbol", whySymbol, "only this symbol's provenance, e.g. u0");
  why->add_flag("--json", json, "machine-readable output");
  why->add_option("--color", color, "colour in text output")->check(CLI::IsMember({"auto", "always", "never"}));
  show->add_flag("--guards", sections.guards, "the guard tree");
  show->add_flag("--code", sections.code, "original and transformed bytecode");
  show->add_flag("--graph", sections.graph, "Dynamo, AOT and Inductor graphs");
  show->add_flag("--shapes", sections.shapes, "symbols, guards on them and specializations, with user lines");
  // Exports and the report (docs/exports.md).
  std::string traceDir, perfettoFile, reportFile;
  dynrep::replay::TorchTraceOptions traceOptions;
  auto* exportTo =
      app.add_subcommand("export", "the job for other tools: a TORCH_TRACE log for tlparse (--torch-trace DIR), "
                                   "a Perfetto timeline (--perfetto OUT.json)");
  auto* report = app.add_subcommand("report", "one self-contained HTML page: timeline, why, guards, graphs, symbols");
  for (auto* sub : {exportTo, report}) {
    sub->add_option("STORE", path, "store file")->required();
    sub->add_flag("--json", json, "machine-readable summary");
  }
  auto* traceOption = exportTo->add_option("--torch-trace", traceDir, "directory for the structured trace log");
  auto* perfettoOption = exportTo->add_option("--perfetto", perfettoFile, "Chrome trace-event JSON file ('-': stdout)");
  exportTo->add_flag("--pytorch-only", traceOptions.pytorchOnly,
                     "leave capture's own dynamo_replay.* events out of the log");
  exportTo->callback([&] {
    if (!traceOption->count() && !perfettoOption->count()) throw CLI::RequiredError("--torch-trace or --perfetto");
  });
  report->add_option("-o,--output", reportFile, "the HTML file to write")->required();

  if (int code; !dynrep::tools::parse(app, argc, argv, &code)) return code;
  dynrep::replay::InspectOptions options;
  options.json = json;
  options.color = color == "always" || (color == "auto" && ::isatty(STDOUT_FILENO));
  using dynrep::replay::LsWhat;
  // The reports read every field defensively; this is the last resort, so that a store no
  // report foresaw gets a message naming it and exit 1, never std::terminate.
  try {
    if (info->parsed()) return printed(dynrep::replay::inspectInfo(path, options), options);
    if (ls->parsed())
      return printed(dynrep::replay::inspectLs(path,
                                               blobs     ? LsWhat::Blobs
                                               : records ? LsWhat::Records
                                                         : LsWhat::Default,
                                               options),
                     options);
    if (show->parsed()) return printed(dynrep::replay::inspectShow(path, compileId, sections, options), options);
    if (why->parsed()) return printed(dynrep::replay::inspectWhy(path, compileId, whySymbol, options), options);
    if (report->parsed()) return printed(dynrep::replay::inspectReport(path, reportFile, options), options);
    if (exportTo->parsed()) {
      int code = 0;
      if (!traceDir.empty())
        code =
            std::max(code, printed(dynrep::replay::exportTorchTrace(path, traceDir, traceOptions, options), options));
      if (!perfettoFile.empty())
        code = std::max(code, printed(dynrep::replay::exportPerfetto(path, perfettoFile, options), options));
      return code;
    }
    if (diff->parsed()) {
      path = diffOperands.front();  // for the last-resort message below
      return printed(dynrep::replay::inspectDiff(diffOperands, compileId, options), options, /*failed=*/2);
    }
    return printed(dynrep::replay::inspectVerify(path, options), options);
  } catch (const std::exception& e) {
    std::cerr << "replay-inspect: " << path << ": cannot report on this store: " << e.what() << "\n";
    return diff->parsed() ? 2 : 1;  // diff's 1 means "they differ"
  }
}

}  // namespace

int main(int argc, char** argv) {
  return dynrep::tools::guardedMain("replay-inspect", [&] { return run(argc, argv); });
}
