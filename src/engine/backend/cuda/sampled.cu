// CudaBackend kernels of sampled output training (scale by column or by row, gather and scatter
// of rows): one thread per element of the compact matrix (grid-stride), the arithmetic of
// backend/math/sampled_math.h, as the CPU backend runs it; and a tiled transpose.
#include <algorithm>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_guard.h"
#include "backend/math/sampled_math.h"

namespace nn {
namespace {

__global__ void scale_columns_kernel(float* x, size_t n, uint32_t cols, const float* w) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < n;
       e += size_t(gridDim.x) * blockDim.x)
    x[e] = math::sampled_scaled(x[e], e, cols, w);
}

__global__ void scale_rows_kernel(float* x, size_t n, uint32_t cols, const float* w) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < n;
       e += size_t(gridDim.x) * blockDim.x)
    x[e] = math::sampled_row_scaled(x[e], e, cols, w);
}

__global__ void gather_rows_kernel(const float* src, size_t n, uint32_t width,
                                   const uint32_t* index, float* dst) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < n;
       e += size_t(gridDim.x) * blockDim.x)
    dst[e] = src[math::sampled_row_offset(e, width, index)];
}

__global__ void scatter_rows_kernel(const float* src, size_t n, uint32_t width,
                                    const uint32_t* index, float* dst) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < n;
       e += size_t(gridDim.x) * blockDim.x)
    dst[math::sampled_row_offset(e, width, index)] = src[e];
}

// One 32 x 32 tile per block of 32 x 8 threads, through shared memory so that both the reads
// and the writes are coalesced (the extra column keeps the tile's columns in different banks).
constexpr uint32_t kTile = 32, kTileRows = 8;

__global__ void transpose_kernel(const float* src, uint32_t rows, uint32_t cols, float* dst) {
  __shared__ float tile[kTile][kTile + 1];
  const size_t c0 = size_t(blockIdx.x) * kTile;
  // Grid y is limited to 65,535 blocks: the row tiles are strided over it.
  for (size_t r0 = size_t(blockIdx.y) * kTile; r0 < rows; r0 += size_t(gridDim.y) * kTile) {
    for (uint32_t i = threadIdx.y; i < kTile; i += kTileRows) {
      const size_t r = r0 + i, c = c0 + threadIdx.x;
      if (r < rows && c < cols) tile[i][threadIdx.x] = src[r * cols + c];
    }
    __syncthreads();
    for (uint32_t i = threadIdx.y; i < kTile; i += kTileRows) {
      const size_t c = c0 + i, r = r0 + threadIdx.x;
      if (r < rows && c < cols) dst[c * rows + r] = tile[threadIdx.x][i];
    }
    __syncthreads();  // the tile is refilled by the next row band
  }
}

}  // namespace

void CudaBackend::scale_columns(float* x, uint32_t rows, uint32_t cols, const float* w) {
  const cuda::DeviceGuard guard(device_);
  const size_t n = size_t(rows) * cols;
  if (n == 0) return;
  scale_columns_kernel<<<grid_for(n), kThreads, 0, stream_>>>(x, n, cols, w);
  NN_CUDA_LAUNCHED("scale_columns_kernel");
}

void CudaBackend::scale_rows(float* x, uint32_t rows, uint32_t cols, const float* w) {
  const cuda::DeviceGuard guard(device_);
  const size_t n = size_t(rows) * cols;
  if (n == 0) return;
  scale_rows_kernel<<<grid_for(n), kThreads, 0, stream_>>>(x, n, cols, w);
  NN_CUDA_LAUNCHED("scale_rows_kernel");
}

void CudaBackend::gather_rows(const float* src, uint32_t width, const uint32_t* index,
                              uint32_t count, float* dst) {
  const cuda::DeviceGuard guard(device_);
  const size_t n = size_t(width) * count;
  if (n == 0) return;
  gather_rows_kernel<<<grid_for(n), kThreads, 0, stream_>>>(src, n, width, index, dst);
  NN_CUDA_LAUNCHED("gather_rows_kernel");
}

void CudaBackend::scatter_rows(const float* src, uint32_t width, const uint32_t* index,
                               uint32_t count, float* dst) {
  const cuda::DeviceGuard guard(device_);
  const size_t n = size_t(width) * count;
  if (n == 0) return;
  scatter_rows_kernel<<<grid_for(n), kThreads, 0, stream_>>>(src, n, width, index, dst);
  NN_CUDA_LAUNCHED("scatter_rows_kernel");
}

void CudaBackend::transpose(const float* src, uint32_t rows, uint32_t cols, float* dst) {
  const cuda::DeviceGuard guard(device_);
  if (rows == 0 || cols == 0) return;
  const dim3 grid((cols + kTile - 1) / kTile,
                  std::min<uint32_t>((rows + kTile - 1) / kTile, 65535));
  transpose_kernel<<<grid, dim3(kTile, kTileRows), 0, stream_>>>(src, rows, cols, dst);
  NN_CUDA_LAUNCHED("transpose_kernel");
}

}  // namespace nn
