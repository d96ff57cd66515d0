// CudaBackend elementwise kernels and reductions: fill, axpy, scale, sum of squares, sum of
// absolute values (returned, or added into a sum left on the device). Reductions run on a fixed
// grid (kReduceBlocks x kThreads, grid-stride), each thread summing in double, then fixed trees:
// the result does not depend on timing. The terms are the CPU backend's (math::square_term,
// math::abs_term).
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_reduce.cuh"
#include "backend/cuda/device_guard.h"
#include "backend/math/elementwise_math.h"

namespace nn {
namespace {

constexpr unsigned kReduceBlocks = 256;

__global__ void fill_kernel(float* x, size_t n, float value) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    x[i] = value;
}

__global__ void axpy_kernel(size_t n, float a, const float* x, float* y) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    y[i] += a * x[i];
}

__global__ void scale_kernel(float* x, size_t n, float a) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    x[i] *= a;
}

template <bool kSquares>
__global__ void partial_sums_kernel(const float* x, size_t n, double* partial) {
  __shared__ double shared[32];
  double acc = 0.0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const double v = x[i];
    acc += kSquares ? math::square_term(v) : math::abs_term(v);
  }
  acc = cuda::block_sum(acc, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// The per-block partial sums of x (kReduceBlocks doubles in scratch slot Temp, one spare after).
template <bool kSquares>
double* partial_sums(CudaBackend& b, const float* x, size_t n) {
  auto* partial =
      static_cast<double*>(b.scratch(CudaBackend::kSlotTemp, (kReduceBlocks + 1) * sizeof(double)));
  partial_sums_kernel<kSquares><<<kReduceBlocks, kThreads, 0, b.stream()>>>(x, n, partial);
  NN_CUDA_LAUNCHED("partial_sums_kernel");
  return partial;
}

template <bool kSquares>
double reduce(CudaBackend& b, const float* x, size_t n) {
  if (n == 0) return 0.0;
  double* partial = partial_sums<kSquares>(b, x, n);
  b.sum_doubles(partial, kReduceBlocks, partial + kReduceBlocks);
  return *b.read_back(partial + kReduceBlocks, 1);
}

// *sum += scale * (the same fixed-order sum), left on the device.
template <bool kSquares>
void reduce_into(CudaBackend& b, const float* x, size_t n, double scale, double* sum) {
  if (n == 0) return;
  b.add_sum_doubles(partial_sums<kSquares>(b, x, n), kReduceBlocks, scale, sum);
}

}  // namespace

void CudaBackend::fill(float* x, size_t n, float value) {
  const cuda::DeviceGuard guard(device_);
  if (n == 0) return;
  fill_kernel<<<grid_for(n), kThreads, 0, stream_>>>(x, n, value);
  NN_CUDA_LAUNCHED("fill_kernel");
}

void CudaBackend::axpy(size_t n, float a, const float* x, float* y) {
  const cuda::DeviceGuard guard(device_);
  if (n == 0) return;
  axpy_kernel<<<grid_for(n), kThreads, 0, stream_>>>(n, a, x, y);
  NN_CUDA_LAUNCHED("axpy_kernel");
}

void CudaBackend::scale(float* x, size_t n, float a) {
  const cuda::DeviceGuard guard(device_);
  if (n == 0) return;
  scale_kernel<<<grid_for(n), kThreads, 0, stream_>>>(x, n, a);
  NN_CUDA_LAUNCHED("scale_kernel");
}

double CudaBackend::sum_squares(const float* x, size_t n) {
  const cuda::DeviceGuard guard(device_);
  return reduce<true>(*this, x, n);
}

double CudaBackend::sum_abs(const float* x, size_t n) {
  const cuda::DeviceGuard guard(device_);
  return reduce<false>(*this, x, n);
}

void CudaBackend::sum_squares_accumulate(const float* x, size_t n, double scale, double* sum) {
  const cuda::DeviceGuard guard(device_);
  reduce_into<true>(*this, x, n, scale, sum);
}

void CudaBackend::sum_abs_accumulate(const float* x, size_t n, double scale, double* sum) {
  const cuda::DeviceGuard guard(device_);
  reduce_into<false>(*this, x, n, scale, sum);
}

}  // namespace nn
