// CudaBackend activations: elementwise forward (math::activate_unit) and backward
// (math::fprime_of), SoftMax forward/backward one block per row, MaxOut forward/backward.
// The per-element formulas are backend/math/'s, which the CPU backend's loops call too
// (cpu/activation.cpp documents the definitions).
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_reduce.cuh"
#include "backend/cuda/device_guard.h"
#include "backend/math/elementwise_math.h"
#include "backend/math/fused_loss_math.h"
#include "backend/math/loss_row_math.h"
#include "core/error.h"

namespace nn {
namespace {

// Element i of rows x cols values whose rows are `stride` apart (padded rows: the columns past
// cols are skipped); the plain index where the rows are contiguous.
__device__ __forceinline__ size_t strided_index(size_t i, uint32_t cols, uint32_t stride) {
  return stride == cols ? i : (i / cols) * stride + i % cols;
}

__global__ void activate_kernel(Activation kind, math::ActConsts c, float* x, size_t n,
                                uint32_t cols, uint32_t stride) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t at = strided_index(i, cols, stride);
    x[at] = math::activate_unit(kind, x[at], c);
  }
}

__global__ void backward_kernel(math::DerivKind d, math::DerivConsts k, const float* a,
                                float* delta, size_t n, uint32_t cols, uint32_t stride) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t at = strided_index(i, cols, stride);
    delta[at] *= math::fprime_of(d, a[at], k);
  }
}

// One block per row: subtract the row maximum, exponentiate, normalise (sum in double).
__global__ void softmax_kernel(float* x, uint32_t cols, uint32_t stride) {
  __shared__ float fshared[32];
  __shared__ double dshared[32];
  float* row = x + size_t(blockIdx.x) * stride;
  float m = -INFINITY;
  for (uint32_t c = threadIdx.x; c < cols; c += blockDim.x) m = row[c] > m ? row[c] : m;
  m = cuda::block_max(m, fshared);
  double sum = 0.0;
  for (uint32_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float e = math::softmax_exp(row[c], m);
    row[c] = e;
    sum += e;
  }
  sum = cuda::block_sum(sum, dshared);
  const float inv = math::softmax_inverse(sum);
  for (uint32_t c = threadIdx.x; c < cols; c += blockDim.x)
    row[c] = math::softmax_scale(row[c], inv);
}

// delta_z = a * (delta_a - sum(delta_a * a)), one block per row.
__global__ void softmax_backward_kernel(const float* a, float* delta, uint32_t cols,
                                        uint32_t stride) {
  __shared__ double shared[32];
  const float* ar = a + size_t(blockIdx.x) * stride;
  float* dr = delta + size_t(blockIdx.x) * stride;
  double dot = 0.0;
  for (uint32_t c = threadIdx.x; c < cols; c += blockDim.x) dot += double(dr[c]) * ar[c];
  const float d = static_cast<float>(cuda::block_sum(dot, shared));
  for (uint32_t c = threadIdx.x; c < cols; c += blockDim.x)
    dr[c] = math::softmax_jacobian(ar[c], dr[c], d);
}

// One thread per output (g, s): the first largest piece wins; a NaN piece wins and stays.
__global__ void maxout_forward_kernel(const float* z, size_t groups, uint32_t k, uint32_t inner,
                                      float* a, uint32_t* arg) {
  const size_t total = groups * inner;
  for (size_t o = blockIdx.x * size_t(blockDim.x) + threadIdx.x; o < total;
       o += size_t(gridDim.x) * blockDim.x) {
    const size_t g = o / inner, s = o % inner;
    const float* zg = z + g * k * inner + s;
    float best = zg[0];
    uint32_t which = 0;
    for (uint32_t i = 1; i < k; ++i) {
      if (best != best) break;  // a NaN winner stays (math::maxout_takes)
      const float v = zg[size_t(i) * inner];
      if (math::maxout_takes(best, v)) {
        best = v;
        which = i;
      }
    }
    a[o] = best;
    arg[o] = which;
  }
}

// One thread per piece (g, i, s): da routed to the winning piece, 0 elsewhere.
__global__ void maxout_backward_kernel(const float* da, const uint32_t* arg, size_t groups,
                                       uint32_t k, uint32_t inner, float* dz) {
  const size_t total = groups * k * inner;
  for (size_t q = blockIdx.x * size_t(blockDim.x) + threadIdx.x; q < total;
       q += size_t(gridDim.x) * blockDim.x) {
    const size_t s = q % inner, gi = q / inner, i = gi % k, g = gi / k;
    const size_t o = g * inner + s;
    dz[q] = arg[o] == i ? da[o] : 0.0f;
  }
}

}  // namespace

void CudaBackend::activate(const ActivationParams& p, float* x, uint32_t rows, uint32_t cols) {
  const cuda::DeviceGuard guard(device_);
  const size_t n = size_t(rows) * cols;
  if (n == 0 || p.kind == Activation::Linear) return;
  if (p.kind == Activation::MaxOut)
    throw InternalError("activate(): MaxOut changes the width; use maxout_forward");
  const uint32_t stride = p.row_stride ? p.row_stride : cols;
  NN_CHECK(stride >= cols, "activate: row_stride below the columns");
  if (p.kind == Activation::SoftMax) {
    softmax_kernel<<<rows, kThreads, 0, stream_>>>(x, cols, stride);
    NN_CUDA_LAUNCHED("softmax_kernel");
    return;
  }
  activate_kernel<<<grid_for(n), kThreads, 0, stream_>>>(p.kind, math::act_consts(p), x, n, cols,
                                                         stride);
  NN_CUDA_LAUNCHED("activate_kernel");
}

void CudaBackend::activation_backward(const ActivationParams& p, const float* a, float* delta,
                                      uint32_t rows, uint32_t cols) {
  const cuda::DeviceGuard guard(device_);
  const size_t n = size_t(rows) * cols;
  const math::DerivKind d = math::deriv_kind(p.kind);
  if (n == 0 || d == math::DerivKind::One) return;
  const uint32_t stride = p.row_stride ? p.row_stride : cols;
  NN_CHECK(stride >= cols, "activation_backward: row_stride below the columns");
  if (d == math::DerivKind::SoftMax) {
    softmax_backward_kernel<<<rows, kThreads, 0, stream_>>>(a, delta, cols, stride);
    NN_CUDA_LAUNCHED("softmax_backward_kernel");
    return;
  }
  backward_kernel<<<grid_for(n), kThreads, 0, stream_>>>(d, math::deriv_consts(p), a, delta, n,
                                                         cols, stride);
  NN_CUDA_LAUNCHED("activation backward_kernel");
}

void CudaBackend::maxout_forward(const float* z, size_t groups, uint32_t k, uint32_t inner,
                                 float* a, uint32_t* arg) {
  const cuda::DeviceGuard guard(device_);
  const size_t total = groups * inner;
  if (total == 0 || k == 0) return;
  maxout_forward_kernel<<<grid_for(total), kThreads, 0, stream_>>>(z, groups, k, inner, a, arg);
  NN_CUDA_LAUNCHED("maxout_forward_kernel");
}

void CudaBackend::maxout_backward(const float* da, const uint32_t* arg, size_t groups, uint32_t k,
                                  uint32_t inner, float* dz) {
  const cuda::DeviceGuard guard(device_);
  const size_t total = groups * k * inner;
  if (total == 0) return;
  maxout_backward_kernel<<<grid_for(total), kThreads, 0, stream_>>>(da, arg, groups, k, inner, dz);
  NN_CUDA_LAUNCHED("maxout_backward_kernel");
}

}  // namespace nn
