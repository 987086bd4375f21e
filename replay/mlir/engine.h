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

// "" when the module parses and verifies; else MLIR's diagnostics, each with its location.
std::string verify(const std::string& text);

// The module lowered to the LLVM dialect, printed; throws std::runtime_error with diagnostics.
std::string lowerToLLVM(const std::string& text);

// A custom-op library file: its func.func definitions and their signatures; throws
// std::runtime_error naming the file and MLIR's diagnostics.
Library loadLibrary(const std::string& path);

class Jit {
 public:
  // Lowers and compiles; throws std::runtime_error with diagnostics.
  static std::unique_ptr<Jit> compile(const std::string& text);
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
