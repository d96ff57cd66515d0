// The element arithmetic of sampled output training's row and column kernels
// (Backend::gather_rows, scatter_rows, scale_columns, scale_rows), shared by the CPU backend and
// the CUDA kernels so that host tests cover both: element e of a compact [count][width] matrix is
// row e / width, column e % width, and sits in row index[e / width] of the full [*][width] matrix.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/math/fast_math.h"

namespace nn::math {

// Offset in the full [*][width] matrix of element e of the compact [count][width] matrix of
// gather_rows / scatter_rows: row index[e / width], column e % width.
NN_FORCE_INLINE size_t sampled_row_offset(size_t e, uint32_t width, const uint32_t* index) {
  return size_t(index[e / width]) * width + e % width;
}

// Element e of the compact matrix after scale_columns: x * w[column].
NN_FORCE_INLINE float sampled_scaled(float x, size_t e, uint32_t count, const float* w) {
  return x * w[e % count];
}

// Element e of a [*][width] matrix after scale_rows: x * w[row].
NN_FORCE_INLINE float sampled_row_scaled(float x, size_t e, uint32_t width, const float* w) {
  return x * w[e / width];
}

}  // namespace nn::math
