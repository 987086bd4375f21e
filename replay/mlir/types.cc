// Element and tensor types spelled as MLIR spells them, static and symbolic dimensions.
#include "types.h"

namespace dynrep::replay::lowering {

namespace {

struct DTypeInfo {
  DType type;
  const char* torch;
  const char* mlir;
  const char* torchMlir;  // the torch dialect's element type (signedness spelled)
  int bits;
  int scalarType;  // c10::ScalarType
};

constexpr DTypeInfo kDTypes[] = {
    {DType::F64, "float64", "f64", "f64", 64, 7},
    {DType::F32, "float32", "f32", "f32", 32, 6},
    {DType::F16, "float16", "f16", "f16", 16, 5},
    {DType::BF16, "bfloat16", "bf16", "bf16", 16, 15},
    {DType::I64, "int64", "i64", "si64", 64, 4},
    {DType::I32, "int32", "i32", "si32", 32, 3},
    {DType::I16, "int16", "i16", "si16", 16, 2},
    {DType::I8, "int8", "i8", "si8", 8, 1},
    {DType::U8, "uint8", "i8", "ui8", 8, 0},
    {DType::Bool, "bool", "i1", "i1", 1, 11},
    {DType::C64, "complex64", "complex<f32>", "complex<f32>", 64, 9},
    {DType::C128, "complex128", "complex<f64>", "complex<f64>", 128, 10},
};

const DTypeInfo& info(DType t) {
  for (const DTypeInfo& i : kDTypes)
    if (i.type == t) return i;
  return kDTypes[1];
}

// Promotion rank: a later category or a wider type wins.
int rank(DType t) {
  switch (t) {
    case DType::Bool: return 0;
    case DType::U8: return 1;
    case DType::I8: return 2;
    case DType::I16: return 3;
    case DType::I32: return 4;
    case DType::I64: return 5;
    case DType::F16: return 6;
    case DType::BF16: return 7;
    case DType::F32: return 8;
    case DType::F64: return 9;
    case DType::C64: return 10;
    case DType::C128: return 11;
  }
  return 8;
}

}  // namespace

std::optional<DType> parseDType(const std::string& torchName) {
  std::string name = torchName.rfind("torch.", 0) == 0 ? torchName.substr(6) : torchName;
  for (const DTypeInfo& i : kDTypes)
    if (name == i.torch) return i.type;
  if (name == "float") return DType::F32;
  if (name == "double") return DType::F64;
  if (name == "half") return DType::F16;
  if (name == "long") return DType::I64;
  if (name == "cfloat") return DType::C64;
  if (name == "cdouble") return DType::C128;
  if (name == "int") return DType::I32;
  return std::nullopt;
}

const char* dtypeName(DType t) { return info(t).torch; }
const char* elementType(DType t) { return info(t).mlir; }
const char* torchElementType(DType t) { return info(t).torchMlir; }
int scalarTypeCode(DType t) { return info(t).scalarType; }
bool isFloat(DType t) { return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16; }
bool isComplex(DType t) { return t == DType::C64 || t == DType::C128; }
DType componentType(DType t) { return t == DType::C64 ? DType::F32 : t == DType::C128 ? DType::F64 : t; }
DType complexOf(DType t) { return t == DType::F64 || t == DType::C128 ? DType::C128 : DType::C64; }
bool isUnsigned(DType t) { return t == DType::U8 || t == DType::Bool; }
int bitWidth(DType t) { return info(t).bits; }
size_t byteSize(DType t) { return t == DType::Bool ? 1 : static_cast<size_t>(info(t).bits / 8); }
DType computeType(DType t) { return t == DType::F16 || t == DType::BF16 ? DType::F32 : t; }

DType promote(DType a, DType b) {
  if (isComplex(a) || isComplex(b)) return complexOf(promote(componentType(a), componentType(b)));
  if ((a == DType::F16 && b == DType::BF16) || (a == DType::BF16 && b == DType::F16)) return DType::F32;
  if ((a == DType::U8 && b == DType::I8) || (a == DType::I8 && b == DType::U8)) return DType::I16;
  return rank(a) >= rank(b) ? a : b;
}

std::string TensorType::shapeText() const {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i)
    out += (i ? "x" : "") + (dims[i].isStatic() ? std::to_string(dims[i].size) : "?");
  return out;
}

std::string TensorType::str() const {
  std::string shape = shapeText();
  return "tensor<" + shape + (shape.empty() ? "" : "x") + elementType(dtype) + ">";
}

TensorType TensorType::withDtype(DType t) const {
  TensorType out = *this;
  out.dtype = t;
  return out;
}

bool sameShape(const TensorType& a, const TensorType& b) {
  if (a.rank() != b.rank()) return false;
  for (size_t d = 0; d < a.rank(); ++d) {
    const Dim &x = a.dims[d], &y = b.dims[d];
    if (x.isStatic() != y.isStatic() || (x.isStatic() ? x.size != y.size : x.expr != y.expr)) return false;
  }
  return true;
}

}  // namespace dynrep::replay::lowering
