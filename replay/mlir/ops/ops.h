// The built-in operator lowerings, one family per file; each file adds its own to the table,
// most as a table of rows (OpRow).
#pragma once

#include "../op_call.h"

namespace dynrep::replay::lowering {

void addElementwiseOps(OpTable& table);    // ops/elementwise.cc: arithmetic, math, comparisons, casts
void addCreationOps(OpTable& table);       // ops/creation.cc: full, ones, arange, scalar_tensor, ...
void addShapeOps(OpTable& table);          // ops/shape.cc: views, permutes, slices, cat, expand
void addLinearOps(OpTable& table);         // ops/linear.cc: mm, addmm, bmm, baddbmm
void addConvolutionOps(OpTable& table);    // ops/convolution.cc: convolution, pooling and their backward
void addReductionOps(OpTable& table);      // ops/reduction.cc: sum, mean, amax, var, softmax
void addNormalizationOps(OpTable& table);  // ops/normalization.cc: layer norm, batch norm
void addIndexingOps(OpTable& table);       // ops/indexing.cc: embedding, gather, index, scatter
void addDataDependentOps(OpTable& table);  // ops/data_dependent.cc: nonzero, masked_select (sizes counted at run time)
void addLossOps(OpTable& table);           // ops/losses.cc: nll_loss and its backward
void addAttentionOps(OpTable& table);      // ops/attention.cc: scaled dot-product attention
void addDistanceOps(OpTable& table);       // ops/distance.cc: cdist, pdist
void addGridSampleOps(OpTable& table);     // ops/grid_sample.cc: grid_sampler_2d (bilinear, nearest)
void addRoutingOps(OpTable& table);        // ops/routing.cc: histc, grouped products (mixture of experts)
void addQuantizeOps(OpTable& table);       // ops/quantize.cc: fake quantization (QAT)
void addStridedOps(OpTable& table);        // ops/strided.cc: as_strided, sym_stride (memory positions)
void addComplexOps(OpTable& table);        // ops/complex.cc: parts, abs and conj of complex tensors
void addFftOps(OpTable& table);            // ops/fft.cc: _fft_r2c, _fft_c2c, _fft_c2r as direct DFTs

// Whether the built-in lowering of `target` is written for complex tensors too (ops/complex.cc).
bool loweredForComplex(const std::string& target);

const OpTable& builtinOps();

// One row of a family's table: an aten overload and its lowering.
struct OpRow {
  const char* name;  // aten::slice.Tensor
  Value (*lower)(OpCall& c);
};

// Adds every row to `table`.
template <size_t N>
void addRows(OpTable& table, const OpRow (&rows)[N]) {
  for (const OpRow& row : rows) table[row.name] = row.lower;
}

}  // namespace dynrep::replay::lowering
