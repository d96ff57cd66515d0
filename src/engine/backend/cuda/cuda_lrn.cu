// CudaBackend cross-channel local response normalisation through cuDNN
// (cudnnLRNCrossChannelForward / Backward, CUDNN_LRN_CROSS_CHANNEL_DIM1). cuDNN's formula is the
// Backend's (backend/conv_params.h): alpha is divided by n, and its window [c - (n-1)/2,
// c + n/2] (cuDNN: lookBehind = floor((n-1)/2), lookAhead = n - lookBehind - 1) is the CPU's.
// A batch is viewed as [rows][channels][plane][1].
//
// The Backend's backward takes x alone; cuDNN's also wants y, so y is recomputed into scratch
// first. Accumulation is cuDNN's beta = 1 (forward with accumulate, backward always: dx +=).
// cuDNN limits n to [1, 16], k >= 1e-5 and beta >= 0.01; other parameters throw BackendError.
#include <cstdint>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cudnn_support.h"
#include "core/error.h"

namespace nn {
namespace {

struct LrnCall {
  cuda::LrnDesc lrn;
  cuda::TensorDesc x;
  LrnCall(const cuda::CudnnApi& api, const LrnParams& p, uint32_t rows, const char* kernel) {
    NN_CHECK(p.channels >= 1 && p.plane >= 1 && p.n >= 1, kernel);
    if (p.n > CUDNN_LRN_MAX_N || double(p.k) < CUDNN_LRN_MIN_K ||
        double(p.beta) < CUDNN_LRN_MIN_BETA)
      throw BackendError(std::string("backend 'cuda': ") + kernel + ": cuDNN's LRN needs n <= " +
                         std::to_string(CUDNN_LRN_MAX_N) + ", k >= 1e-5 and beta >= 0.01 (got n " +
                         std::to_string(p.n) + ", k " + std::to_string(p.k) + ", beta " +
                         std::to_string(p.beta) + "); use --backend cpu");
    NN_CHECK(p.plane <= uint64_t(INT32_MAX) &&
                 uint64_t(rows) * p.channels * p.plane <= uint64_t(INT32_MAX),
             std::string(kernel) + ": batch too large for one cuDNN tensor");
    NN_CUDNN_CALL(api.cudnnSetLRNDescriptor(lrn.get(), p.n, p.alpha, p.beta, p.k));
    x.set({int(rows), int(p.channels), int(p.plane), 1});
  }
};

}  // namespace

void CudaBackend::lrn_forward(const LrnParams& p, uint32_t rows, const float* x, bool accumulate,
                              float* y) {
  if (rows == 0) return;
  cuda::Cudnn& dnn = cudnn();
  const LrnCall call(dnn.api(), p, rows, "lrn_forward");
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  NN_CUDNN_CALL(dnn.api().cudnnLRNCrossChannelForward(dnn.handle(), call.lrn.get(),
                                                      CUDNN_LRN_CROSS_CHANNEL_DIM1, &one,
                                                      call.x.get(), x, &beta, call.x.get(), y));
}

void CudaBackend::lrn_backward(const LrnParams& p, uint32_t rows, const float* x, const float* dy,
                               float* dx) {
  if (rows == 0) return;
  cuda::Cudnn& dnn = cudnn();
  const LrnCall call(dnn.api(), p, rows, "lrn_backward");
  const uint64_t n = uint64_t(rows) * p.channels * p.plane;
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
