// MLIR itself: parse and verify a module, run the lowering pipeline to the LLVM dialect, JIT
// it with the ExecutionEngine and call a function on host buffers. The only code that
// includes MLIR's headers (engine.cc); the rest of the library writes and reads text.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dynrep/replay/mlir/lower.h"
#include "host_value.h"

namespace dynrep::replay::lowering {

// The pass pipeline from linalg-on-tensors to the LLVM dialect, as mlir-opt-19 takes it.
const char* llvmPipeline();

// A module MLIR has parsed and verified, in its own context: parsed once, then printed as
// LLVM dialect or handed to the JIT.
class Module {
 public:
  // Throws std::runtime_error with MLIR's diagnostics, each at its location, when the text does
  // not parse or verify.
  static std::unique_ptr<Module> parse(const std::string& text);
  ~Module();
  // Lowers the module in place to the LLVM dialect (llvmPipeline) and prints it.
  std::string toLLVM();

 private:
  friend class Jit;
  struct Impl;
  explicit Module(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A custom-op library file: its func.func definitions and their signatures; throws
// std::runtime_error naming the file and MLIR's diagnostics.
Library loadLibrary(const std::string& path);

class Jit {
 public:
  // Lowers and compiles; throws std::runtime_error with diagnostics.
  static std::unique_ptr<Jit> compile(std::unique_ptr<Module> module);
  ~Jit();
  // Calls `function` with inputs in signature order (tensors contiguous); returns its results
  // in order, with the function's result types (a tensor<...>, i64, f64, i1 each).
  std::vector<HostValue> call(const std::string& function, const std::vector<HostValue>& inputs,
                              const std::vector<std::string>& resultTypes) const;

 private:
  struct Impl;
  explicit Jit(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dynrep::replay::lowering
