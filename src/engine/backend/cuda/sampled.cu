// CudaBackend column kernels of sampled output training (gather, scatter, scale by column): one
// thread per element of the compact matrix (grid-stride), the arithmetic of
// backend/math/sampled_math.h, as the CPU backend runs it.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_guard.h"
#include "backend/math/sampled_math.h"

namespace nn {
namespace {

__global__ void gather_columns_kernel(const float* src, size_t n, uint32_t cols,
                                      const uint32_t* index, uint32_t count, float* dst) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < n;
       e += size_t(gridDim.x) * blockDim.x)
    dst[e] = src[math::sampled_full_offset(e, count, cols, index)];
}

__global__ void scatter_columns_kernel(const float* src, size_t n, uint32_t count,
                                       const uint32_t* index, uint32_t cols, float* dst) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < n;
       e += size_t(gridDim.x) * blockDim.x)
    dst[math::sampled_full_offset(e, count, cols, index)] = src[e];
}

__global__ void scale_columns_kernel(float* x, size_t n, uint32_t cols, const float* w) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < n;
       e += size_t(gridDim.x) * blockDim.x)
    x[e] = math::sampled_scaled(x[e], e, cols, w);
}

}  // namespace

void CudaBackend::gather_columns(const float* src, uint32_t rows, uint32_t cols,
                                 const uint32_t* index, uint32_t count, float* dst) {
  const cuda::DeviceGuard guard(device_);
  const size_t n = size_t(rows) * count;
  if (n == 0) return;
  gather_columns_kernel<<<grid_for(n), kThreads, 0, stream_>>>(src, n, cols, index, count, dst);
  NN_CUDA_LAUNCHED("gather_columns_kernel");
}

void CudaBackend::scatter_columns(const float* src, uint32_t rows, uint32_t count,
                                  const uint32_t* index, uint32_t cols, float* dst) {
  const cuda::DeviceGuard guard(device_);
  const size_t n = size_t(rows) * count;
  if (n == 0) return;
  scatter_columns_kernel<<<grid_for(n), kThreads, 0, stream_>>>(src, n, count, index, cols, dst);
  NN_CUDA_LAUNCHED("scatter_columns_kernel");
}

void CudaBackend::scale_columns(float* x, uint32_t rows, uint32_t cols, const float* w) {
  const cuda::DeviceGuard guard(device_);
  const size_t n = size_t(rows) * cols;
  if (n == 0) return;
  scale_columns_kernel<<<grid_for(n), kThreads, 0, stream_>>>(x, n, cols, w);
  NN_CUDA_LAUNCHED("scale_columns_kernel");
}

}  // namespace nn
