// IREE, a deployment compiler built on MLIR, as a second way to run a lowered module:
// iree-compile makes the linalg module a .vmfb for this host's CPU, iree-run-module calls it and
// iree-benchmark-module times it. The tools come from PyPI (iree-base-compiler and
// iree-base-runtime) and run as child processes: nothing here links IREE, and a build or a
// machine without it lacks only these commands.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dynrep/replay/mlir/iree_tools.h"
#include "host_value.h"
#include "process.h"

namespace dynrep::replay::lowering {

// iree-compile's flags: the local CPU device, code for this host's CPU, data tiling (matrix
// products in the CPU's tiled layout: ViT's inference 3.8x faster than without), and float64
// kept as it is (IREE demotes it to float32 unless told not to, which would change the numbers).
std::vector<std::string> ireeCompileFlags();

class IreeModule {
 public:
  // Compiles a linalg module's text; throws std::runtime_error with IREE's diagnostics.
  static std::unique_ptr<IreeModule> compile(const IreeTools& tools, const std::string& text);
  IreeModule(const IreeModule&) = delete;
  IreeModule& operator=(const IreeModule&) = delete;
  // The compiled module (.vmfb), as iree-compile wrote it.
  std::string vmfb() const { return readFile(vmfb_); }
  // The flags iree-compile was given: ireeCompileFlags(), without data tiling where IREE could
  // not tile the graph, with system linking where a float64 math function needed libm (IREE's
  // embedded linker has none).
  const std::vector<std::string>& flags() const { return flags_; }
  // Calls `function` on IREE's CPU runtime with inputs in signature order; returns its results
  // with the function's result types (tensor<...>, i64, f64, i1). Throws naming what failed.
  std::vector<HostValue> call(const std::string& function, const std::vector<HostValue>& inputs,
                              const std::vector<std::string>& resultTypes) const;
  // The median wall time of one call, as iree-benchmark-module measures it (the module loaded
  // once, inputs already on the device). Throws naming what failed.
  double secondsPerCall(const std::string& function, const std::vector<HostValue>& inputs) const;

 private:
  explicit IreeModule(IreeTools tools) : tools_(std::move(tools)) {}
  // --input flags for `inputs`, tensors written as raw files in the module's folder.
  std::vector<std::string> inputFlags(const std::vector<HostValue>& inputs) const;
  std::vector<std::string> runArgs(const std::string& tool, const std::string& function,
                                   const std::vector<HostValue>& inputs) const;

  IreeTools tools_;
  TempDir folder_;
  std::string vmfb_;
  std::vector<std::string> flags_;
};

}  // namespace dynrep::replay::lowering
