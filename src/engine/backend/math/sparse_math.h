// Per-entry arithmetic of the sparse-input kernels (a CSR batch times a weight matrix, plain or
// transposed, and their weight gradients): the factor each stored entry contributes. The one
// source for both backends: the CPU loops (cpu/sparse.cpp, cpu/sparse_transposed.cpp) and the
// CUDA kernels (cuda/sparse.cu, cuda/sparse_transposed.cu) call these, and both loss kernels take
// sparse target values and example weights through entry_value / example_weight; the backend
// tests check both backends against dense products of their own. __host__ __device__ under nvcc.
#pragma once

#include <cstdint>

#include "backend/math/fast_math.h"

namespace nn::math {

// Entry e's value (1 for Boolean batches, value == nullptr) and row r's example weight (1 when
// the batch has none).
NN_FORCE_INLINE float entry_value(const float* value, uint64_t e) {
  return value ? value[e] : 1.0f;
}
NN_FORCE_INLINE float example_weight(const float* row_weight, uint64_t r) {
  return row_weight ? row_weight[r] : 1.0f;
}

// Forward: entry e of a row with example weight wr adds v_e * w_r times a weight.
NN_FORCE_INLINE float sparse_input_scale(const float* value, uint64_t e, float wr) {
  return entry_value(value, e) * wr;
}

// Weight gradient W[in][out]: entry e adds alpha * v_e * w_r times the row's delta.
NN_FORCE_INLINE float sparse_gradient_scale(float alpha, const float* value, uint64_t e, float wr) {
  return alpha * entry_value(value, e) * wr;
}

// Weight gradient of a transposed W[out][in]: output unit o of row r scales the row's entries by
// alpha * w_r * delta[r][o] (then by each entry's value).
NN_FORCE_INLINE float sparse_transposed_gradient_scale(float alpha, float wr, float delta) {
  return alpha * wr * delta;
}

}  // namespace nn::math
