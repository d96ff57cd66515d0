// CudaBackend cross-channel local response normalisation through cuDNN
// (cudnnLRNCrossChannelForward / Backward, CUDNN_LRN_CROSS_CHANNEL_DIM1). cuDNN's formula is the
// Backend's (backend/conv_params.h): alpha is divided by n, and its window [c - (n-1)/2,
// c + n/2] (cuDNN: lookBehind = floor((n-1)/2), lookAhead = n - lookBehind - 1) is the CPU's.
// A batch is viewed as [rows][channels][plane][1].
//
// The Backend's backward takes x alone; cuDNN's also wants y, so y is recomputed into scratch
// first. Accumulation is cuDNN's beta = 1 (forward with accumulate, backward always: dx +=).
//
// cuDNN limits n to [1, 16], k >= 1e-5 and beta >= 0.01, and a layer may ask for more; such
// parameters run own kernels instead (math/lrn_math.h, host-tested against the CPU backend):
// forward one thread per element; backward one kernel for every element's s^-beta and
// dy x s^(-beta-1), a second for dx from their window sums (one writer per element, no atomics).
#include <cstdint>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cudnn_support.h"
#include "backend/cuda/device_guard.h"
#include "backend/math/lrn_math.h"
#include "core/error.h"

namespace nn {
namespace {

bool cudnn_can(const LrnParams& p) {
  return p.n <= CUDNN_LRN_MAX_N && double(p.k) >= CUDNN_LRN_MIN_K &&
         double(p.beta) >= CUDNN_LRN_MIN_BETA;
}

struct LrnCall {
  cuda::LrnDesc lrn;
  cuda::TensorDesc x;
  LrnCall(const cuda::CudnnApi& api, const LrnParams& p, uint32_t rows, const char* kernel) {
    NN_CHECK(p.plane <= uint64_t(INT32_MAX) &&
                 uint64_t(rows) * p.channels * p.plane <= uint64_t(INT32_MAX),
             std::string(kernel) + ": batch too large for one cuDNN tensor");
    NN_CUDNN_CALL(api.cudnnSetLRNDescriptor(lrn.get(), p.n, p.alpha, p.beta, p.k));
    x.set({int(rows), int(p.channels), int(p.plane), 1});
  }
};

__global__ void lrn_forward_kernel(math::LrnShape s, uint64_t total, const float* x,
                                   bool accumulate, float* y) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < total;
       i += uint64_t(gridDim.x) * blockDim.x) {
    const float v = math::lrn_value(s, x[i], math::lrn_scale(s, x, i));
    y[i] = accumulate ? y[i] + v : v;
  }
}

__global__ void lrn_terms_kernel(math::LrnShape s, uint64_t total, const float* x, const float* dy,
                                 float* f, float* t) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < total;
       i += uint64_t(gridDim.x) * blockDim.x)
    math::lrn_terms(s, x[i], dy[i], math::lrn_scale(s, x, i), f[i], t[i]);
}

__global__ void lrn_dx_kernel(math::LrnShape s, uint64_t total, const float* x, const float* dy,
                              const float* f, const float* t, float* dx) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < total;
       i += uint64_t(gridDim.x) * blockDim.x)
    dx[i] = math::lrn_dx(s, x, dy, f, t, i, dx[i]);
}

}  // namespace

void CudaBackend::lrn_forward(const LrnParams& p, uint32_t rows, const float* x, bool accumulate,
                              float* y) {
  const cuda::DeviceGuard guard(device_);
  NN_CHECK(p.channels >= 1 && p.plane >= 1 && p.n >= 1, "lrn_forward");
  if (rows == 0) return;
  if (!cudnn_can(p)) {
    const uint64_t total = uint64_t(rows) * p.channels * p.plane;
    lrn_forward_kernel<<<grid_for(total), kThreads, 0, stream_>>>(math::lrn_shape_of(p), total, x,
                                                                  accumulate, y);
    NN_CUDA_LAUNCHED("lrn_forward_kernel");
    return;
  }
  cuda::Cudnn& dnn = cudnn();
  const LrnCall call(dnn.api(), p, rows, "lrn_forward");
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  NN_CUDNN_CALL(dnn.api().cudnnLRNCrossChannelForward(dnn.handle(), call.lrn.get(),
                                                      CUDNN_LRN_CROSS_CHANNEL_DIM1, &one,
                                                      call.x.get(), x, &beta, call.x.get(), y));
}

void CudaBackend::lrn_backward(const LrnParams& p, uint32_t rows, const float* x, const float* dy,
                               float* dx) {
  const cuda::DeviceGuard guard(device_);
  NN_CHECK(p.channels >= 1 && p.plane >= 1 && p.n >= 1, "lrn_backward");
  if (rows == 0) return;
  const uint64_t n = uint64_t(rows) * p.channels * p.plane;
  if (!cudnn_can(p)) {
    float* f = static_cast<float*>(scratch(kSlotA, n * sizeof(float)));
    float* t = static_cast<float*>(scratch(kSlotB, n * sizeof(float)));
    const math::LrnShape s = math::lrn_shape_of(p);
    lrn_terms_kernel<<<grid_for(n), kThreads, 0, stream_>>>(s, n, x, dy, f, t);
    NN_CUDA_LAUNCHED("lrn_terms_kernel");
    lrn_dx_kernel<<<grid_for(n), kThreads, 0, stream_>>>(s, n, x, dy, f, t, dx);
    NN_CUDA_LAUNCHED("lrn_dx_kernel");
    return;
  }
  cuda::Cudnn& dnn = cudnn();
  const LrnCall call(dnn.api(), p, rows, "lrn_backward");
  float* y = static_cast<float*>(scratch(kSlotA, n * sizeof(float)));
  const float one = 1.0f, zero = 0.0f;
  cudnnHandle_t h = dnn.handle();
  NN_CUDNN_CALL(dnn.api().cudnnLRNCrossChannelForward(h, call.lrn.get(),
                                                      CUDNN_LRN_CROSS_CHANNEL_DIM1, &one,
                                                      call.x.get(), x, &zero, call.x.get(), y));
  NN_CUDNN_CALL(dnn.api().cudnnLRNCrossChannelBackward(
      h, call.lrn.get(), CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, call.x.get(), y, call.x.get(), dy,
      call.x.get(), x, &one, call.x.get(), dx));
}

}  // namespace nn
