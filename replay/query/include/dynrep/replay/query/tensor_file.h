// A graph's inputs and outputs as one file, how replay-run hands them to another tool (--dump-raw)
// without either linking the other: a first line "dynrep-tensors 1", a JSON line
// {"inputs": [...], "outputs": [...], "random": [{"node", "values": [...]}]} (tensors
// {"dtype", "shape", "offset", "bytes"}, scalars
// {"int"}, {"float"}, {"bool"}, None {}), then the tensors' raw little-endian bytes.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dynrep/store/status.h"

namespace dynrep::replay {

struct RawValue {
  std::string kind;   // tensor, int, float, bool, none
  std::string dtype;  // float32, as PyTorch names it
  std::vector<int64_t> shape;
  std::string bytes;  // contiguous, row-major
  int64_t integer = 0;
  double real = 0;
};

struct TensorFile {
  std::vector<RawValue> inputs, outputs;
  // What each node that draws random numbers (random_ops.h) produced, in graph order.
  std::vector<std::pair<std::string, std::vector<RawValue>>> random;
};

// The status names the path and what is wrong (IOError: cannot write or read; Corruption: not a
// tensor file, or one shorter than its header says).
Status writeTensorFile(const std::string& path, const TensorFile& file);
Result<TensorFile> readTensorFile(const std::string& path);

}  // namespace dynrep::replay
