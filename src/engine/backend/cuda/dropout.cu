// CudaBackend dropout and denoising masks: element i uses the same counter-based uniform
// (core/random.h) and formula (math::dropout_unit) as the CPU backend, so masks and scaled values
// match the CPU's bit for bit.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_guard.h"
#include "backend/math/elementwise_math.h"

namespace nn {
namespace {

__global__ void dropout_kernel(float* x, size_t n, float p, float keep, uint64_t seed,
                               uint64_t stream) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    x[i] = math::dropout_unit(x[i], i, p, keep, seed, stream);
}

void apply(CudaBackend& b, float* x, size_t n, float p, uint64_t seed, uint64_t stream) {
  if (!(p > 0.0f) || n == 0) return;  // nothing dropped, kept values scaled by 1
  dropout_kernel<<<grid_for(n), kThreads, 0, b.stream()>>>(x, n, p, 1.0f - p, seed, stream);
  NN_CUDA_LAUNCHED("dropout_kernel");
}

}  // namespace

void CudaBackend::dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream) {
  const cuda::DeviceGuard guard(device_);
  apply(*this, x, n, p, seed, stream);
}

void CudaBackend::dropout_backward(float* delta, size_t n, float p, uint64_t seed,
                                   uint64_t stream) {
  const cuda::DeviceGuard guard(device_);
  apply(*this, delta, n, p, seed, stream);
}

}  // namespace nn
