// CudaBackend norm constraints and the sparseness penalty (the CPU backend's cpu/norm.cpp, with
// the per-row/column arithmetic of backend/math/norm_math.h):
//   clip_row_norms      one block per row: squared length in double (fixed tree), then scale;
//   clip_column_norms   one thread per column: squared length over the rows in order, in double
//                       (the CPU's order), then scale;
//   sparseness_penalty  one thread per unit: the mean activation over the rows in order, the
//                       KL value (summed over units on the device in a fixed order) and the
//                       derivative added to every row's delta.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_reduce.cuh"
#include "backend/math/norm_math.h"

namespace nn {
namespace {

__global__ void clip_rows_kernel(float* x, uint32_t cols, float max_norm) {
  __shared__ double shared[32];
  float* row = x + size_t(blockIdx.x) * cols;
  double sq = 0.0;
  for (uint32_t c = threadIdx.x; c < cols; c += blockDim.x) sq += double(row[c]) * double(row[c]);
  const float s = math::clip_scale(cuda::block_sum(sq, shared), max_norm);
  if (s == 1.0f) return;  // uniform across the block
  for (uint32_t c = threadIdx.x; c < cols; c += blockDim.x) row[c] *= s;
}

__global__ void clip_columns_kernel(float* w, uint32_t rows, uint32_t cols, float max_norm) {
  for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x) {
    double sq = 0.0;
    for (uint32_t r = 0; r < rows; ++r) {
      const double v = w[size_t(r) * cols + c];
      sq += v * v;
    }
    const float s = math::clip_scale(sq, max_norm);
    if (s == 1.0f) continue;
    for (uint32_t r = 0; r < rows; ++r) w[size_t(r) * cols + c] *= s;
  }
}

__global__ void sparseness_kernel(const float* a, uint32_t rows, uint32_t cols, double p,
                                  double beta, float* delta, double* value) {
  for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x) {
    double sum = 0.0;
    for (uint32_t r = 0; r < rows; ++r) sum += a[size_t(r) * cols + c];
    const double rho = math::sparseness_rho(sum, rows);
    value[c] = math::kl_divergence(p, rho);
    if (!delta) continue;
    const float g = math::sparseness_gradient(p, beta, rho);
    for (uint32_t r = 0; r < rows; ++r) delta[size_t(r) * cols + c] += g;
  }
}

}  // namespace

void CudaBackend::clip_row_norms(float* x, uint32_t rows, uint32_t cols, float max_norm) {
  if (!(max_norm > 0.0f) || rows == 0 || cols == 0) return;
  clip_rows_kernel<<<rows, kThreads, 0, stream_>>>(x, cols, max_norm);
  NN_CUDA_LAUNCHED("clip_rows_kernel");
}

void CudaBackend::clip_column_norms(float* w, uint32_t rows, uint32_t cols, float max_norm) {
  if (!(max_norm > 0.0f) || rows == 0 || cols == 0) return;
  clip_columns_kernel<<<grid_for(cols), kThreads, 0, stream_>>>(w, rows, cols, max_norm);
  NN_CUDA_LAUNCHED("clip_columns_kernel");
}

double CudaBackend::sparseness_penalty(const float* a, uint32_t rows, uint32_t cols, float p,
                                       float beta, float* delta) {
  if (rows == 0 || cols == 0 || beta == 0.0f) return 0.0;
  auto* value = static_cast<double*>(scratch(kSlotTemp, (size_t(cols) + 1) * sizeof(double)));
  sparseness_kernel<<<grid_for(cols), kThreads, 0, stream_>>>(a, rows, cols, p, beta, delta, value);
  NN_CUDA_LAUNCHED("sparseness_kernel");
  sum_doubles(value, cols, value + cols);
  return double(rows) * double(beta) * *read_back(value + cols, 1);
}

void CudaBackend::sparseness_penalty_accumulate(const float* a, uint32_t rows, uint32_t cols,
                                                float p, float beta, float* delta, double* sum) {
  if (rows == 0 || cols == 0 || beta == 0.0f) return;
  auto* value = static_cast<double*>(scratch(kSlotTemp, size_t(cols) * sizeof(double)));
  sparseness_kernel<<<grid_for(cols), kThreads, 0, stream_>>>(a, rows, cols, p, beta, delta, value);
  NN_CUDA_LAUNCHED("sparseness_kernel");
  // The penalty is rows * beta * (sum over units), as the returning form computes it.
  add_sum_doubles(value, cols, double(rows) * double(beta), sum);
}

}  // namespace nn
