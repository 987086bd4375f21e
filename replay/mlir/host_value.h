// Values that cross into and out of the JIT: contiguous tensors (raw little-endian bytes, as
// the store keeps them) and scalars. Also how two of them compare.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "types.h"

namespace dynrep::replay::lowering {

struct HostValue {
  enum class Kind { None, Tensor, Int, Float, Bool };
  Kind kind = Kind::None;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // Tensor: numel * byteSize(dtype) bytes, row-major
  int64_t integer = 0;
  double real = 0;

  size_t numel() const;
  double element(size_t i) const;  // as double (float16/bfloat16 widened); complex: its real part
  // The real numbers the tensor holds: one per element, two for a complex one (real, imaginary).
  size_t parts() const { return isComplex(dtype) ? 2 * numel() : numel(); }
  double part(size_t i) const;
  static HostValue tensor(DType dtype, std::vector<int64_t> shape);  // zero-filled
  std::string describe() const;                                      // float32[2, 8]
};

// Float tensors match when |a - b| <= atol + rtol * |b| everywhere (nan matches nan). In
// float16/bfloat16 a value is only known to its last bit, and a one-bit difference in a
// rounded intermediate (PyTorch's kernels and the lowering accumulate in different orders)
// moves every value computed from it by about that bit of *its* scale, so there rtol is at least
// the dtype's (1e-3 float16, 1.6e-2 bfloat16, as torch.testing.assert_close takes them) and atol
// at least rtol times the tensor's largest magnitude. Complex tensors compare their real and
// imaginary parts each so. Integers, bools and scalars must be equal.
struct Comparison {
  std::string status;  // "bitwise", "close", "differs", "shape differs", "dtype differs"
  double maxAbsDiff = 0;
  bool ok() const { return status == "bitwise" || status == "close"; }
};
Comparison compare(const HostValue& got, const HostValue& want, double rtol, double atol);

}  // namespace dynrep::replay::lowering
