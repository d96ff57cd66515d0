// The element arithmetic of sampled output training's column kernels (Backend::gather_columns,
// scatter_columns, scale_columns), shared by the CPU backend and the CUDA kernels so that host
// tests cover both: element e of a compact [rows][count] matrix is row e / count, compact column
// e % count, and sits at column index[e % count] of the full [rows][cols] matrix.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/math/fast_math.h"

namespace nn::math {

// Offset in the full matrix of element e of the compact one.
NN_FORCE_INLINE size_t sampled_full_offset(size_t e, uint32_t count, uint32_t cols,
                                           const uint32_t* index) {
  const size_t r = e / count, k = e % count;
  return r * cols + index[k];
}

// Element e of the compact matrix after scale_columns: x * w[column].
NN_FORCE_INLINE float sampled_scaled(float x, size_t e, uint32_t count, const float* w) {
  return x * w[e % count];
}

}  // namespace nn::math
