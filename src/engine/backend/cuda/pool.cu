// CudaBackend Max / Average pooling: own kernels, not cuDNN's, because the Backend contract
// fixes what cuDNN leaves open (backend/math/pool_math.h says what and why). Forward: one thread
// per output. Backward: one thread per input gathers the gradients routed to it in output order
// (one writer per dx element: no atomics, deterministic, the CPU's sums bit for bit).
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_guard.h"
#include "backend/math/pool_math.h"
#include "core/error.h"

namespace nn {
namespace {

__global__ void pool_forward_kernel(math::PoolShape s, uint64_t in_plane, uint64_t out_plane,
                                    uint64_t total, const float* x, bool accumulate, float* y) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < total;
       i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t plane = i / out_plane;
    const float v = math::pool_forward_at(s, x + plane * in_plane, i % out_plane);
    y[i] = accumulate ? y[i] + v : v;
  }
}

__global__ void pool_backward_kernel(math::PoolShape s, uint64_t in_plane, uint64_t out_plane,
                                     uint64_t total, const float* x, const float* dy, float* dx) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < total;
       i += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t plane = i / in_plane;
    dx[i] = math::pool_backward_at(s, x + plane * in_plane, dy + plane * out_plane, i % in_plane,
                                   dx[i]);
  }
}

}  // namespace

void CudaBackend::pool_forward(const PoolParams& p, uint32_t rows, const float* x, bool accumulate,
                               float* y) {
  const cuda::DeviceGuard guard(device_);
  check_pool_params(p, "pool_forward");
  const ConvGeometry& g = p.geometry;
  const uint64_t total = uint64_t(rows) * g.in_channels * g.out_plane();
  if (total == 0) return;
  pool_forward_kernel<<<grid_for(total), kThreads, 0, stream_>>>(
      math::pool_shape_of(p), g.in_plane(), g.out_plane(), total, x, accumulate, y);
  NN_CUDA_LAUNCHED("pool_forward_kernel");
}

void CudaBackend::pool_backward(const PoolParams& p, uint32_t rows, const float* x, const float* dy,
                                float* dx) {
  const cuda::DeviceGuard guard(device_);
  check_pool_params(p, "pool_backward");
  const ConvGeometry& g = p.geometry;
  const uint64_t total = uint64_t(rows) * g.in_channels * g.in_plane();
  if (total == 0) return;
  pool_backward_kernel<<<grid_for(total), kThreads, 0, stream_>>>(
      math::pool_shape_of(p), g.in_plane(), g.out_plane(), total, x, dy, dx);
  NN_CUDA_LAUNCHED("pool_backward_kernel");
}

}  // namespace nn
