// CudaBackend variational layer kernels (the CPU backend's cpu/variational.cpp, with the
// per-element arithmetic of backend/math/variational_math.h, so both draw the same noise):
//   variational_forward        one thread per unit of the output: the sample, or the mean;
//   variational_backward       one thread per unit: the gradients of its mean and log-variance;
//   variational_kl_accumulate  one block per row: the row's KL sum in double (a fixed tree,
//                              cuda_reduce.cuh), then the rows summed by sum_doubles' fixed order
//                              into the caller's sum.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_reduce.cuh"
#include "backend/cuda/device_guard.h"
#include "backend/math/variational_math.h"

namespace nn {
namespace {

__global__ void variational_forward_kernel(const float* q, size_t total, uint32_t n, bool sample,
                                           uint64_t seed, uint64_t stream, float* a) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t r = i / n, j = i % n;
    const float mean = q[r * 2 * n + j];
    a[i] = sample ? math::variational_sample(mean, q[r * 2 * n + n + j],
                                             math::gaussian_at(seed, stream, i))
                  : mean;
  }
}

__global__ void variational_backward_kernel(const float* q, const float* da, size_t total,
                                            uint32_t n, bool sample, float beta, uint64_t seed,
                                            uint64_t stream, float* dq) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t r = i / n, j = i % n;
    const size_t m = r * 2 * n + j;
    const float noise = sample ? math::gaussian_at(seed, stream, i) : 0.0f;
    math::variational_gradient(q[m], q[m + n], da[i], noise, sample, beta, dq[m], dq[m + n]);
  }
}

__global__ void variational_kl_rows_kernel(const float* q, uint32_t n, double* value) {
  __shared__ double shared[32];
  const float* mean = q + size_t(blockIdx.x) * 2 * n;
  double s = 0.0;
  for (uint32_t j = threadIdx.x; j < n; j += blockDim.x)
    s += math::variational_kl(mean[j], mean[n + j]);
  s = cuda::block_sum(s, shared);
  if (threadIdx.x == 0) value[blockIdx.x] = s;
}

}  // namespace

void CudaBackend::variational_forward(const float* q, uint32_t rows, uint32_t n, bool sample,
                                      uint64_t seed, uint64_t stream, float* a) {
  const cuda::DeviceGuard guard(device_);
  const size_t total = size_t(rows) * n;
  if (total == 0) return;
  variational_forward_kernel<<<grid_for(total), kThreads, 0, stream_>>>(q, total, n, sample, seed,
                                                                        stream, a);
  NN_CUDA_LAUNCHED("variational_forward_kernel");
}

void CudaBackend::variational_backward(const float* q, const float* da, uint32_t rows, uint32_t n,
                                       bool sample, float beta, uint64_t seed, uint64_t stream,
                                       float* dq) {
  const cuda::DeviceGuard guard(device_);
  const size_t total = size_t(rows) * n;
  if (total == 0) return;
  variational_backward_kernel<<<grid_for(total), kThreads, 0, stream_>>>(q, da, total, n, sample,
                                                                         beta, seed, stream, dq);
  NN_CUDA_LAUNCHED("variational_backward_kernel");
}

void CudaBackend::variational_kl_accumulate(const float* q, uint32_t rows, uint32_t n, float beta,
                                            double* sum) {
  const cuda::DeviceGuard guard(device_);
  if (rows == 0 || n == 0) return;
  auto* value = static_cast<double*>(scratch(kSlotTemp, size_t(rows) * sizeof(double)));
  variational_kl_rows_kernel<<<rows, kThreads, 0, stream_>>>(q, n, value);
  NN_CUDA_LAUNCHED("variational_kl_rows_kernel");
  add_sum_doubles(value, rows, double(beta), sum);
}

}  // namespace nn
