// Element types and tensor types of the lowering, spelled as MLIR spells them. A dimension is
// static (its size) or dynamic (`?`, with the symbolic expression PyTorch printed for it).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dynrep::replay::lowering {

// C64 and C128 are complex<f32> and complex<f64>: interleaved real and imaginary parts, as
// PyTorch stores them.
enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool, C64, C128 };

std::optional<DType> parseDType(const std::string& torchName);  // "float32" -> F32
const char* dtypeName(DType t);                                 // F32 -> "float32"
const char* elementType(DType t);                               // F32 -> "f32", Bool -> "i1", U8 -> "i8"
const char* torchElementType(DType t);  // the torch dialect's: I64 -> "si64", U8 -> "ui8", F32 -> "f32"
int scalarTypeCode(DType t);            // c10::ScalarType's number, as torch-mlir passes dtypes: F32 -> 6
bool isFloat(DType t);                  // real floating point only
bool isComplex(DType t);
// A complex dtype's parts (C64 -> F32); any other dtype is its own.
DType componentType(DType t);
// The complex dtype whose parts are t, or wider (F64 -> C128, F32 and narrower -> C64).
DType complexOf(DType t);
bool isUnsigned(DType t);  // uint8 and bool: zero-extended
int bitWidth(DType t);
size_t byteSize(DType t);  // storage bytes per element (bool: 1, complex64: 8)
// Where float16/bfloat16 arithmetic happens: in float32, as PyTorch's CPU kernels do.
DType computeType(DType t);
// PyTorch's promotion of two tensor dtypes (complex beats float beats integer, wider beats
// narrower; complex64 with float64 is complex128).
DType promote(DType a, DType b);

struct Dim {
  int64_t size = -1;  // >= 0: static
  std::string expr;   // dynamic: the symbolic size, "s0", "2*s0"
  bool isStatic() const { return size >= 0; }
};

struct TensorType {
  DType dtype = DType::F32;
  std::vector<Dim> dims;
  size_t rank() const { return dims.size(); }
  std::string str() const;        // tensor<?x4xf32>
  std::string shapeText() const;  // ?x4 (empty for rank 0)
  TensorType withDtype(DType t) const;
};

// Same dims, a dynamic one by its expression: tensor<?x?xf32> of [s0, s1] is not [s0*s1//2, 2].
bool sameShape(const TensorType& a, const TensorType& b);

}  // namespace dynrep::replay::lowering
