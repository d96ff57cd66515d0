// CudaBackend batch normalisation over [rows][channels * spatial]: cuDNN for the training
// forward, the inference forward and the training backward (per-activation mode when spatial is
// 1, the fully connected case; spatial mode otherwise, each channel's tensor
// [rows][C][spatial][1]); an own kernel for the backward of the inference forward, which cuDNN
// lacks.
//
// cuDNN's conventions are the Backend's (kernel_params.h): running = (1 - factor) * running +
// factor * batch with factor = momentum, the running variance from the UNBIASED batch variance,
// the saved statistics the batch mean and 1 / sqrt(var + eps), parameter gradients written
// with alpha and beta 0 (overwritten, scaled by alpha). One difference: with a single value per
// channel (rows * spatial == 1, e.g. a last batch of one example) the CPU updates the running
// variance with the biased variance 0 where cuDNN would divide by n - 1 = 0; that case runs
// own kernels, one thread per channel (math/batch_norm_math.h, the CPU's own formulas).
//
// The Backend allows y to alias x and dx to alias dy; cuDNN does not promise in-place
// operation, so aliased calls go through a scratch buffer and a copy.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_reduce.cuh"
#include "backend/cuda/cudnn_support.h"
#include "backend/cuda/device_guard.h"
#include "backend/math/batch_norm_math.h"
#include "core/error.h"

namespace nn {
namespace {

struct BnCall {
  cudnnBatchNormMode_t mode;
  cuda::TensorDesc x, param;
  explicit BnCall(const BatchNormParams& p) {
    NN_CHECK(uint64_t(p.rows) * p.channels * p.spatial <= uint64_t(INT32_MAX),
             "batch norm: batch too large for one cuDNN tensor");
    mode = p.spatial == 1 ? CUDNN_BATCHNORM_PER_ACTIVATION : CUDNN_BATCHNORM_SPATIAL;
    x.set({int(p.rows), int(p.channels), int(p.spatial), 1});
    param.set({1, int(p.channels), 1, 1});
  }
};

// One block per channel: sums of dy and dy * x_hat over its values (in double, a fixed tree),
// dx = gain * dy, then the parameter gradients (math/batch_norm_math.h).
__global__ void bn_backward_inference_kernel(BatchNormParams p, const float* x, const float* dy,
                                             const float* scale, const float* running_mean,
                                             const float* running_var, float alpha, float* dx,
                                             float* dscale, float* dbias) {
  __shared__ double shared[32];
  const uint32_t c = blockIdx.x;
  const math::BnChannel ch =
      math::bn_inference_channel(scale[c], running_mean[c], running_var[c], p.epsilon);
  const uint64_t per_channel = uint64_t(p.rows) * p.spatial;
  const uint64_t stride = uint64_t(p.channels) * p.spatial;
  double s0 = 0.0, s1 = 0.0;
  for (uint64_t k = threadIdx.x; k < per_channel; k += blockDim.x) {
    const uint64_t at = (k / p.spatial) * stride + uint64_t(c) * p.spatial + k % p.spatial;
    const float g = dy[at];
    s0 += g;
    s1 += math::bn_dy_xhat(x[at], g, ch.mean, ch.inv_std);
    dx[at] = math::bn_inference_dx(ch.gain, g);  // dy[at] read first: dx may alias dy
  }
  s0 = cuda::block_sum(s0, shared);
  s1 = cuda::block_sum(s1, shared);
  if (threadIdx.x == 0) {
    dscale[c] = math::bn_param_grad(alpha, s1);
    dbias[c] = math::bn_param_grad(alpha, s0);
  }
}

// rows * spatial == 1: channel c's single value is x[c].
__global__ void bn_single_forward_kernel(BatchNormParams p, const float* x, float* y,
                                         const float* scale, const float* bias, float* running_mean,
                                         float* running_var, float* save_mean,
                                         float* save_inv_std) {
  for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < p.channels;
       c += gridDim.x * blockDim.x) {
    const math::BnSingle r = math::bn_single_forward(x[c], scale[c], bias[c], running_mean[c],
                                                     running_var[c], p.epsilon, p.momentum);
    y[c] = r.y;  // x[c] read first: y may alias x
    save_mean[c] = r.save_mean;
    save_inv_std[c] = r.save_inv_std;
    running_mean[c] = r.running_mean;
    running_var[c] = r.running_var;
  }
}

__global__ void bn_single_backward_kernel(BatchNormParams p, const float* x, const float* dy,
                                          const float* scale, const float* save_mean,
                                          const float* save_inv_std, float alpha, float* dx,
                                          float* dscale, float* dbias) {
  for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < p.channels;
       c += gridDim.x * blockDim.x) {
    const math::BnSingleGrad r =
        math::bn_single_backward(x[c], dy[c], scale[c], save_mean[c], save_inv_std[c], alpha);
    dx[c] = r.dx;  // dy[c] read first: dx may alias dy
    dscale[c] = r.dscale;
    dbias[c] = r.dbias;
  }
}

}  // namespace

void CudaBackend::batch_norm_forward_training(const BatchNormParams& p, const float* x, float* y,
                                              const float* scale, const float* bias,
                                              float* running_mean, float* running_var,
                                              float* save_mean, float* save_inv_std) {
  const cuda::DeviceGuard guard(device_);
  if (p.rows == 0 || p.channels == 0 || p.spatial == 0) return;
  if (uint64_t(p.rows) * p.spatial == 1) {
    bn_single_forward_kernel<<<grid_for(p.channels), kThreads, 0, stream_>>>(
        p, x, y, scale, bias, running_mean, running_var, save_mean, save_inv_std);
    NN_CUDA_LAUNCHED("bn_single_forward_kernel");
    return;
  }
  cuda::Cudnn& dnn = cudnn();
  const BnCall call(p);
  const size_t n = size_t(p.rows) * p.channels * p.spatial;
  float* out = y == x ? static_cast<float*>(scratch(kSlotA, n * sizeof(float))) : y;
  const float one = 1.0f, zero = 0.0f;
  NN_CUDNN_CALL(dnn.api().cudnnBatchNormalizationForwardTraining(
      dnn.handle(), call.mode, &one, &zero, call.x.get(), x, call.x.get(), out, call.param.get(),
      scale, bias, double(p.momentum), running_mean, running_var, double(p.epsilon), save_mean,
      save_inv_std));
  if (out != y) copy(y, out, n * sizeof(float));
}

void CudaBackend::batch_norm_forward_inference(const BatchNormParams& p, const float* x, float* y,
                                               const float* scale, const float* bias,
                                               const float* running_mean,
                                               const float* running_var) {
  const cuda::DeviceGuard guard(device_);
  if (p.rows == 0 || p.channels == 0 || p.spatial == 0) return;
  cuda::Cudnn& dnn = cudnn();
  const BnCall call(p);
  const size_t n = size_t(p.rows) * p.channels * p.spatial;
  float* out = y == x ? static_cast<float*>(scratch(kSlotA, n * sizeof(float))) : y;
  const float one = 1.0f, zero = 0.0f;
  NN_CUDNN_CALL(dnn.api().cudnnBatchNormalizationForwardInference(
      dnn.handle(), call.mode, &one, &zero, call.x.get(), x, call.x.get(), out, call.param.get(),
      scale, bias, running_mean, running_var, double(p.epsilon)));
  if (out != y) copy(y, out, n * sizeof(float));
}

void CudaBackend::batch_norm_backward(const BatchNormParams& p, const float* x, const float* dy,
                                      const float* scale, const float* save_mean,
                                      const float* save_inv_std, float alpha, float* dx,
                                      float* dscale, float* dbias) {
  const cuda::DeviceGuard guard(device_);
  if (p.channels == 0) return;
  if (p.rows == 0 || p.spatial == 0) {
    fill(dscale, p.channels, 0.0f);
    fill(dbias, p.channels, 0.0f);
    return;
  }
  if (uint64_t(p.rows) * p.spatial == 1) {
    bn_single_backward_kernel<<<grid_for(p.channels), kThreads, 0, stream_>>>(
        p, x, dy, scale, save_mean, save_inv_std, alpha, dx, dscale, dbias);
    NN_CUDA_LAUNCHED("bn_single_backward_kernel");
    return;
  }
  cuda::Cudnn& dnn = cudnn();
  const BnCall call(p);
  const size_t n = size_t(p.rows) * p.channels * p.spatial;
  float* out = dx == dy ? static_cast<float*>(scratch(kSlotA, n * sizeof(float))) : dx;
  const float one = 1.0f, zero = 0.0f;
  NN_CUDNN_CALL(dnn.api().cudnnBatchNormalizationBackward(
      dnn.handle(), call.mode, &one, &zero, &alpha, &zero, call.x.get(), x, call.x.get(), dy,
      call.x.get(), out, call.param.get(), scale, dscale, dbias, double(p.epsilon), save_mean,
      save_inv_std));
  if (out != dx) copy(dx, out, n * sizeof(float));
}

void CudaBackend::batch_norm_backward_inference(const BatchNormParams& p, const float* x,
                                                const float* dy, const float* scale,
                                                const float* running_mean, const float* running_var,
                                                float alpha, float* dx, float* dscale,
                                                float* dbias) {
  const cuda::DeviceGuard guard(device_);
  if (p.channels == 0) return;
  bn_backward_inference_kernel<<<p.channels, kThreads, 0, stream_>>>(
      p, x, dy, scale, running_mean, running_var, alpha, dx, dscale, dbias);
  NN_CUDA_LAUNCHED("bn_backward_inference_kernel");
}

}  // namespace nn
