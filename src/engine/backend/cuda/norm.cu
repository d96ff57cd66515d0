// CudaBackend norm constraints and the sparseness penalty (the CPU backend's cpu/norm.cpp, with
// the per-row/column arithmetic of backend/math/norm_math.h):
//   clip_row_norms      one block per row: squared length in double (fixed tree), then scale;
//   clip_column_norms   squared lengths by the column reduction of backend/math/reduce_math.h
//                       (row tiles x columns, then each column's tiles in order; the CPU's
//                       order when there is one tile), a factor per column, then one thread per
//                       element scales the clipped columns;
//   sparseness_penalty  each unit's activation sum by the same column reduction, its KL value
//                       (summed over units by sum_doubles' fixed order) and derivative, then one
//                       thread per element adds the derivative to the deltas.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_reduce.cuh"
#include "backend/cuda/device_guard.h"
#include "backend/math/norm_math.h"
#include "backend/math/reduce_math.h"

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

// Pass 2 of the column norms: each column's squared length (tiles in order), its clip factor.
__global__ void clip_factors_kernel(const double* partial, uint32_t cols, math::ColumnTiles t,
                                    float max_norm, float* factor) {
  for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x)
    factor[c] = math::clip_scale(math::column_total(partial, cols, c, t), max_norm);
}

// Every element times its column's factor (columns not clipped are left unwritten).
__global__ void scale_columns_kernel(float* w, size_t total, uint32_t cols, const float* factor) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const float s = factor[i % cols];
    if (s != 1.0f) w[i] *= s;
  }
}

// Pass 2 of the penalty: each unit's mean activation (tiles in order), its KL value and the
// derivative to add to its deltas.
__global__ void sparseness_units_kernel(const double* partial, uint32_t rows, uint32_t cols,
                                        math::ColumnTiles t, double p, double beta, double* value,
                                        float* grad) {
  for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x) {
    const double rho = math::sparseness_rho(math::column_total(partial, cols, c, t), rows);
    value[c] = math::kl_divergence(p, rho);
    grad[c] = math::sparseness_gradient(p, beta, rho);
  }
}

__global__ void add_columns_kernel(float* delta, size_t total, uint32_t cols, const float* grad) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x)
    delta[i] += grad[i % cols];
}

// The per-unit penalty values into value[0, cols) (and the derivative added to delta, if any).
void sparseness_units(CudaBackend& b, const float* a, uint32_t rows, uint32_t cols, float p,
                      float beta, float* delta, double* value) {
  const math::ColumnTiles t = math::column_tiles(rows, cols);
  const double* partial = cuda::column_partials(b, a, rows, cols, t, false, CudaBackend::kSlotA);
  auto* grad = static_cast<float*>(b.scratch(CudaBackend::kSlotB, size_t(cols) * sizeof(float)));
  sparseness_units_kernel<<<grid_for(cols), kThreads, 0, b.stream()>>>(partial, rows, cols, t, p,
                                                                       beta, value, grad);
  NN_CUDA_LAUNCHED("sparseness_units_kernel");
  if (!delta) return;
  const size_t total = size_t(rows) * cols;
  add_columns_kernel<<<grid_for(total), kThreads, 0, b.stream()>>>(delta, total, cols, grad);
  NN_CUDA_LAUNCHED("add_columns_kernel");
}

}  // namespace

void CudaBackend::clip_row_norms(float* x, uint32_t rows, uint32_t cols, float max_norm) {
  const cuda::DeviceGuard guard(device_);
  if (!(max_norm > 0.0f) || rows == 0 || cols == 0) return;
  clip_rows_kernel<<<rows, kThreads, 0, stream_>>>(x, cols, max_norm);
  NN_CUDA_LAUNCHED("clip_rows_kernel");
}

void CudaBackend::clip_column_norms(float* w, uint32_t rows, uint32_t cols, float max_norm) {
  const cuda::DeviceGuard guard(device_);
  if (!(max_norm > 0.0f) || rows == 0 || cols == 0) return;
  const math::ColumnTiles t = math::column_tiles(rows, cols);
  const double* partial = cuda::column_partials(*this, w, rows, cols, t, true, kSlotA);
  auto* factor = static_cast<float*>(scratch(kSlotB, size_t(cols) * sizeof(float)));
  clip_factors_kernel<<<grid_for(cols), kThreads, 0, stream_>>>(partial, cols, t, max_norm, factor);
  NN_CUDA_LAUNCHED("clip_factors_kernel");
  const size_t total = size_t(rows) * cols;
  scale_columns_kernel<<<grid_for(total), kThreads, 0, stream_>>>(w, total, cols, factor);
  NN_CUDA_LAUNCHED("scale_columns_kernel");
}

double CudaBackend::sparseness_penalty(const float* a, uint32_t rows, uint32_t cols, float p,
                                       float beta, float* delta) {
  const cuda::DeviceGuard guard(device_);
  if (rows == 0 || cols == 0 || beta == 0.0f) return 0.0;
  auto* value = static_cast<double*>(scratch(kSlotTemp, (size_t(cols) + 1) * sizeof(double)));
  sparseness_units(*this, a, rows, cols, p, beta, delta, value);
  sum_doubles(value, cols, value + cols);
  return double(rows) * double(beta) * *read_back(value + cols, 1);
}

void CudaBackend::sparseness_penalty_accumulate(const float* a, uint32_t rows, uint32_t cols,
                                                float p, float beta, float* delta, double* sum) {
  const cuda::DeviceGuard guard(device_);
  if (rows == 0 || cols == 0 || beta == 0.0f) return;
  auto* value = static_cast<double*>(scratch(kSlotTemp, size_t(cols) * sizeof(double)));
  sparseness_units(*this, a, rows, cols, p, beta, delta, value);
  // The penalty is rows * beta * (sum over units), as the returning form computes it.
  add_sum_doubles(value, cols, double(rows) * double(beta), sum);
}

}  // namespace nn
