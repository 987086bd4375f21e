// replay-mlir: the MLIR lowering's command line. replay-inspect hands `mlir` and `lower-check`
// to it (it links MLIR, which replay-inspect does not). Exit 0 ok, 1 something did not lower
// or match, 2 bad usage or an unusable store.
#include <unistd.h>

#include <climits>
#include <iostream>
#include <string>

#include <CLI/CLI.hpp>

#include "dynrep/replay/mlir/commands.h"

namespace {

std::string besideSelf(const std::string& name) {
  std::string self(PATH_MAX, '\0');
  ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  std::string dir = n > 0 ? self.substr(0, self.rfind('/', static_cast<size_t>(n))) : ".";
  std::string path = dir + "/" + name;
  return ::access(path.c_str(), X_OK) == 0 ? path : "";
}

int run(int argc, char** argv) {
  CLI::App app{"Re-lower a dynamo-replay store's graphs to MLIR", "replay-inspect"};
  app.require_subcommand(1);
  dynrep::replay::lowering::MlirRequest m;
  dynrep::replay::lowering::LowerCheckRequest c;
  auto* mlir = app.add_subcommand("mlir", "one compile's graph as MLIR: torch dialect, linalg-on-tensors (verified) or LLVM");
  mlir->add_option("STORE", m.store, "store file")->required();
  mlir->add_option("COMPILE_ID", m.compile, "compile id as ls prints it, e.g. 0/1")->required();
  mlir->add_option("--graph", m.graph, "forward, backward or inference")->check(CLI::IsMember({"forward", "backward", "inference"}));
  mlir->add_option("--dialect", m.dialect, "torch, linalg or llvm")->check(CLI::IsMember({"torch", "linalg", "llvm"}));
  mlir->add_option("--library", m.library, "custom-op library: func.func definitions named after operators");
  mlir->add_option("-o,--output", m.output, "write the module here instead of stdout");
  auto* check = app.add_subcommand("lower-check", "every graph lowered, verified, run by MLIR's JIT and compared; exit 1 when any fails");
  check->add_option("STORE", c.store, "store file")->required();
  check->add_option("--library", c.library, "custom-op library");
  check->add_option("--sizes", c.sizes, "run at these sizes on random inputs, against replay-run: s0=7,s1=3");
  check->add_option("--seed", c.seed, "seed of the random inputs");
  check->add_flag("--json", c.json, "machine-readable output");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (mlir->parsed()) return dynrep::replay::lowering::mlirCommand(m, std::cout, std::cerr);
  c.runner = besideSelf("replay-run");
  return dynrep::replay::lowering::lowerCheckCommand(c, std::cout, std::cerr);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "replay-inspect: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "replay-inspect: unknown error\n";
  }
  return 1;
}
