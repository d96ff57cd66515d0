// Per-element arithmetic of the dense kernels besides the products themselves (those are BLAS's):
// C = beta * C for a gemm without terms, and the result of a column sum. __host__ __device__
// under nvcc, called by the CPU backend (cpu/dense.cpp) and the CUDA kernels (cuda/dense.cu);
// tests/unit/backend/dense_kernels_test.cpp checks both against references of its own.
#pragma once

#include "backend/math/fast_math.h"

namespace nn::math {

// One element of C = beta * C (a product with no terms, k == 0). beta == 0 writes 0 even over
// NaN or inf, as BLAS does for beta == 0 with terms (implementations differ for k == 0).
NN_FORCE_INLINE float beta_scaled(float beta, float c) {
  return beta == 0.0f ? 0.0f : beta * c;
}

// out = beta * out + alpha * sum for a column whose sum over the rows is `sum` (in double), with
// alpha * sum rounded to float first; beta == 0 overwrites out (even NaN).
NN_FORCE_INLINE float column_sum_value(float alpha, double sum, float beta, float out) {
  const float s = static_cast<float>(double(alpha) * sum);
  return beta == 0.0f ? s : beta * out + s;
}

}  // namespace nn::math
