// replay-mlir: the MLIR lowering's command line. replay-inspect hands `mlir` and `lower-check`
// to it (it links MLIR, which replay-inspect does not). Exit 0 ok, 1 something did not lower
// or match, 2 bad usage or an unusable store.
#include <fstream>
#include <iostream>
#include <optional>
#include <string>

#include "dynrep/replay/mlir/commands.h"
#include "tool_main.h"

namespace {

using dynrep::Result;
using dynrep::replay::Report;

// Prints a command's Report: its notes on stderr as they are, then its output (the module, or
// lower-check's report) on stdout or into `file`. Exit 0; 1 when something did not lower, verify
// or match; 2 when the command could not run (`command` names it) or `file` cannot be written.
int printed(const Result<Report>& result, const std::string& command, const std::string& file = "") {
  if (!result.isOk()) {
    std::cerr << command << ": " << result.status().message() << "\n";
    return 2;
  }
  for (const dynrep::replay::ReportNote& note : result->notes) std::cerr << note.text << "\n";
  if (file.empty()) {
    std::cout << result->output;
  } else if (!result->output.empty()) {  // a module is never empty: empty is "nothing to write"
    std::ofstream out(file);
    out << result->output;
    if (!out) {
      std::cerr << "replay-inspect mlir: cannot write " << file << "\n";
      return 2;
    }
  }
  return result->problemFound ? 1 : 0;
}

// --target iree: the .vmfb into `file` and its manifest beside it (FILE.json). Exit as printed().
int writtenForIree(const dynrep::replay::Job& job, const dynrep::replay::lowering::MlirRequest& m,
                   const std::string& file) {
  if (file.empty()) {
    std::cerr << "replay-inspect mlir --target iree: writes a compiled module: give -o FILE.vmfb\n";
    return 2;
  }
  if (m.dialect != "linalg") {
    std::cerr << "replay-inspect mlir --target iree: IREE compiles the linalg module; drop --dialect " << m.dialect
              << "\n";
    return 2;
  }
  Result<dynrep::replay::lowering::IreeModuleFile> out = dynrep::replay::lowering::ireeCommand(job, m);
  if (!out.isOk()) return printed(out.status(), "replay-inspect mlir");
  for (const dynrep::replay::ReportNote& note : out->report.notes) std::cerr << note.text << "\n";
  if (out->vmfb.empty()) return 1;
  for (const auto& [path, bytes] : {std::pair{file, &out->vmfb}, std::pair{file + ".json", &out->manifest}}) {
    std::ofstream written(path, std::ios::binary);
    written << *bytes;
    if (!written) {
      std::cerr << "replay-inspect mlir: cannot write " << path << "\n";
      return 2;
    }
  }
  std::cerr << "wrote " << file << " (" << out->vmfb.size() << " bytes) and " << file << ".json\n";
  return out->report.problemFound ? 1 : 0;
}

// The store's job, or (exit 2) the message naming what is wrong with it.
std::optional<dynrep::replay::OpenedJob> opened(const std::string& path) {
  Result<dynrep::replay::OpenedJob> job = dynrep::replay::openJob(path);
  if (job.isOk()) return std::move(*job);
  std::cerr << "replay-inspect: " << job.status().toString() << "\n";
  return std::nullopt;
}

int run(int argc, char** argv) {
  CLI::App app{"Re-lower a dynamo-replay store's graphs to MLIR", "replay-inspect"};
  app.require_subcommand(1);
  dynrep::replay::lowering::MlirRequest m;
  dynrep::replay::lowering::LowerCheckRequest c;
  auto* mlir =
      app.add_subcommand("mlir", "one compile's graph as MLIR: torch dialect, linalg-on-tensors (verified) or LLVM");
  mlir->add_option("STORE", m.store, "store file")->required();
  mlir->add_option("COMPILE_ID", m.compile, "compile id as ls prints it, e.g. 0/1")->required();
  mlir->add_option("--graph", m.graph, "forward, backward or inference")
      ->check(CLI::IsMember({"forward", "backward", "inference"}));
  mlir->add_option("--dialect", m.dialect, "torch, linalg or llvm")->check(CLI::IsMember({"torch", "linalg", "llvm"}));
  mlir->add_option("--library", m.library, "custom-op library: func.func definitions named after operators");
  std::string moduleFile, irModuleFile;
  mlir->add_option("-o,--output", moduleFile, "write the module here instead of stdout");
  std::string target = "mlir";
  mlir->add_option("--target", target,
                   "mlir: the module as text; iree: compiled by IREE for this host's CPU into a .vmfb (-o FILE), with "
                   "FILE's inputs described in FILE.json")
      ->check(CLI::IsMember({"mlir", "iree"}));
  mlir->add_flag("--allow-different", m.allowDifferent,
                 "write the module without running it against the job's outputs (by default one that computes "
                 "a different number is not written)");
  dynrep::replay::lowering::MlirRequest ir;
  auto* lowerIr = app.add_subcommand("lower-ir", "a graph IR file (JSON, format 2) as MLIR, without a store");
  lowerIr->add_option("IR", ir.store, "graph IR file")->required();
  lowerIr->add_option("--dialect", ir.dialect, "torch, linalg or llvm")
      ->check(CLI::IsMember({"torch", "linalg", "llvm"}));
  lowerIr->add_option("--library", ir.library, "custom-op library");
  lowerIr->add_option("-o,--output", irModuleFile, "write the module here instead of stdout");
  auto* check = app.add_subcommand(
      "lower-check", "every graph lowered, verified, run by MLIR's JIT and compared; exit 1 when any fails");
  check->add_option("STORE", c.store, "store file")->required();
  check->add_option("--library", c.library, "custom-op library");
  check->add_option("--sizes", c.sizes, "run at these sizes on random inputs, against replay-run: s0=7,s1=3");
  check->add_option("--seed", c.seed, "seed of the random inputs");
  check->add_flag("--json", c.json, "machine-readable output");
  check->add_option("--runtime", c.runtime, "jit: MLIR's JIT; iree: compiled by IREE and run on its CPU runtime")
      ->check(CLI::IsMember({"jit", "iree"}));
  check->add_flag("--time", c.timeCalls, "also time one call of each graph (median)");
  if (int code; !dynrep::tools::parse(app, argc, argv, &code)) return code;
  std::string runner = dynrep::tools::besideSelf("replay-run");  // the reference for --sizes, where built
  if (dynrep::tools::isExecutable(runner)) c.runner = m.runner = runner;
  std::string self = dynrep::tools::besideSelf("");
  c.iree = m.iree = dynrep::replay::lowering::findIree({self.substr(0, self.size() - 1)});
  if (lowerIr->parsed())
    return printed(dynrep::replay::lowering::lowerIrCommand(ir), "replay-mlir lower-ir", irModuleFile);
  std::optional<dynrep::replay::OpenedJob> store = opened(mlir->parsed() ? m.store : c.store);
  if (!store) return 2;
  if (mlir->parsed() && target == "iree") return writtenForIree(store->job, m, moduleFile);
  if (mlir->parsed())
    return printed(dynrep::replay::lowering::mlirCommand(store->job, m), "replay-inspect mlir", moduleFile);
  return printed(dynrep::replay::lowering::lowerCheckCommand(store->job, c), "replay-inspect lower-check");
}

}  // namespace

int main(int argc, char** argv) {
  return dynrep::tools::guardedMain("replay-inspect", [&] { return run(argc, argv); });
}
