// The scalar arithmetic of elementwise lowerings: each builds, with `s`, the MLIR ops that
// compute one element as PyTorch's CPU kernels do, in the compute type `t` (ops/elementwise.cc
// gives it; float32 for float16 and bfloat16). Operands and results are SSA names.
#pragma once

#include <string>

#include "../emitter.h"

namespace dynrep::replay::lowering {

// a <pred> b: `floatPred` (oeq, olt) on floats, else `intPred` (eq, slt; unsigned on bool and uint8).
std::string compareOf(Scalars& s, const char* floatPred, const char* intPred, const std::string& a,
                      const std::string& b, DType t);
// +, -, * as PyTorch's: logical or and and on bool, complex ops on complex values.
std::string add(Scalars& s, const std::string& a, const std::string& b, DType t);
std::string sub(Scalars& s, const std::string& a, const std::string& b, DType t);
std::string mul(Scalars& s, const std::string& a, const std::string& b, DType t);
// a / b with rounding `mode` ("", "floor", "trunc"); `storage` is the result's dtype.
std::string divide(Scalars& s, const std::string& a, const std::string& b, DType t, DType storage,
                   const std::string& mode);
std::string fmod(Scalars& s, const std::string& a, const std::string& b, DType t);       // C's: the dividend's sign
std::string remainder(Scalars& s, const std::string& a, const std::string& b, DType t);  // Python's: the divisor's
std::string integerPow(Scalars& s, const std::string& x, const std::string& n, DType t);
std::string expm1(Scalars& s, const std::string& x, DType t);
std::string log1p(Scalars& s, const std::string& x, DType t);
std::string gelu(Scalars& s, const std::string& x, DType t, bool tanh);
std::string geluGrad(Scalars& s, const std::string& g, const std::string& x, DType t, bool tanh);
std::string sigmoid(Scalars& s, const std::string& x, DType t);
// a << b (left) or a >> b as PyTorch's CPU kernels shift.
std::string shift(Scalars& s, const std::string& a, const std::string& b, DType t, bool left);
// max and min, NaN kept.
std::string maxOf(Scalars& s, const std::string& a, const std::string& b, DType t);
std::string minOf(Scalars& s, const std::string& a, const std::string& b, DType t);

}  // namespace dynrep::replay::lowering
