// CudaBackend convolution through cuDNN (plans and algorithms in cudnn_support.h). Layout
// NCHW / NCDHW as in backend/conv_params.h; weights [out][in][kz][ky][kx] are cuDNN's NCHW
// filters, and both compute a cross-correlation.
//
// Geometry: when cuDNN's symmetric-padding output extent differs from the layer's on any axis
// (DSSTNE keeps in == out for even kernels at stride 1), the input is copied into an explicitly
// zero-padded buffer and cuDNN runs without padding; the backward data pass then adds the
// interior of the padded gradient into dx (a crop). backend/math/conv_math.h has the index
// arithmetic and host tests prove it against CpuBackend.
//
// Contract (backend.h): forward overwrites y (beta 0) or adds to it (beta 1), then adds the
// bias; backward data ADDS into dx (beta 1); backward filter overwrites dw and dbias, scaled by
// alpha (cuDNN's alpha, beta 0).
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cudnn_support.h"
#include "backend/cuda/device_guard.h"
#include "backend/math/conv_math.h"
#include "core/error.h"

namespace nn {
namespace {

// padded[i] = the input element it holds, or 0.
__global__ void pad_kernel(math::PadShape s, uint64_t total, const float* x, float* padded) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < total;
       i += uint64_t(gridDim.x) * blockDim.x) {
    const int64_t from = math::padded_source(s, i);
    padded[i] = from < 0 ? 0.0f : x[from];
  }
}

// dx[i] += the padded gradient at its position (inputs the padded buffer dropped get nothing).
__global__ void crop_add_kernel(math::PadShape s, uint64_t total, const float* padded, float* dx) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < total;
       i += uint64_t(gridDim.x) * blockDim.x) {
    const int64_t from = math::padded_target(s, i);
    if (from >= 0) dx[i] += padded[from];
  }
}

void check_geometry(const ConvGeometry& g, const char* kernel) {
  NN_CHECK(g.dims >= 1 && g.dims <= 3 && g.in_channels >= 1 && g.out_channels >= 1, kernel);
  for (uint32_t d = 0; d < 3; ++d) {
    NN_CHECK(g.in[d] >= 1 && g.out[d] >= 1 && g.kernel[d] >= 1 && g.stride[d] >= 1, kernel);
    if (d >= g.dims)
      NN_CHECK(
          g.in[d] == 1 && g.out[d] == 1 && g.kernel[d] == 1 && g.stride[d] == 1 && g.pad[d] == 0,
          kernel);
  }
  // A 1-D geometry becomes a 2-D one with y extent 1 (describe_convolution).
}

// The input as cuDNN sees it: x itself, or its zero-padded copy in scratch slot A.
const float* conv_input(CudaBackend& b, const cuda::ConvPlan& plan, uint32_t rows,
                        uint32_t channels, const float* x) {
  if (!plan.explicit_pad) return x;
  const uint64_t total = uint64_t(rows) * channels * math::padded_plane(plan.pad);
  float* padded = static_cast<float*>(b.scratch(CudaBackend::kSlotA, total * sizeof(float)));
  pad_kernel<<<grid_for(total), kThreads, 0, b.stream()>>>(plan.pad, total, x, padded);
  NN_CUDA_LAUNCHED("pad_kernel");
  return padded;
}

}  // namespace

void CudaBackend::conv_forward(const ConvGeometry& g, uint32_t rows, const float* x, const float* w,
                               const float* bias, bool accumulate, float* y) {
  const cuda::DeviceGuard guard(device_);
  check_geometry(g, "conv_forward");
  if (rows == 0) return;
  cuda::Cudnn& dnn = cudnn();
  const cuda::ConvPlan& plan = dnn.conv_plan(g, rows, scratch_capacity(kSlotB));
  const float* input = conv_input(*this, plan, rows, g.in_channels, x);
  void* work = plan.forward_bytes ? scratch(kSlotB, plan.forward_bytes) : nullptr;
  const float one = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  NN_CUDNN_CALL(dnn.api().cudnnConvolutionForward(
      dnn.handle(), &one, plan.x.get(), input, plan.w.get(), w, plan.conv.get(), plan.forward, work,
      plan.forward_bytes, &beta, plan.y.get(), y));
  if (bias)
    NN_CUDNN_CALL(
        dnn.api().cudnnAddTensor(dnn.handle(), &one, plan.bias.get(), bias, &one, plan.y.get(), y));
}

void CudaBackend::conv_backward_data(const ConvGeometry& g, uint32_t rows, const float* dy,
                                     const float* w, float* dx) {
  const cuda::DeviceGuard guard(device_);
  check_geometry(g, "conv_backward_data");
  if (rows == 0) return;
  cuda::Cudnn& dnn = cudnn();
  const cuda::ConvPlan& plan = dnn.conv_plan(g, rows, scratch_capacity(kSlotB));
  void* work = plan.backward_data_bytes ? scratch(kSlotB, plan.backward_data_bytes) : nullptr;
  const float one = 1.0f, zero = 0.0f;
  if (!plan.explicit_pad) {
    NN_CUDNN_CALL(dnn.api().cudnnConvolutionBackwardData(
        dnn.handle(), &one, plan.w.get(), w, plan.y.get(), dy, plan.conv.get(), plan.backward_data,
        work, plan.backward_data_bytes, &one, plan.x.get(), dx));
    return;
  }
  const uint64_t padded_total = uint64_t(rows) * g.in_channels * math::padded_plane(plan.pad);
  float* padded = static_cast<float*>(scratch(kSlotC, padded_total * sizeof(float)));
  NN_CUDNN_CALL(dnn.api().cudnnConvolutionBackwardData(
      dnn.handle(), &one, plan.w.get(), w, plan.y.get(), dy, plan.conv.get(), plan.backward_data,
      work, plan.backward_data_bytes, &zero, plan.x.get(), padded));
  const uint64_t total = uint64_t(rows) * g.in_size();
  crop_add_kernel<<<grid_for(total), kThreads, 0, stream_>>>(plan.pad, total, padded, dx);
  NN_CUDA_LAUNCHED("crop_add_kernel");
}

void CudaBackend::conv_backward_filter(const ConvGeometry& g, uint32_t rows, const float* x,
                                       const float* dy, float alpha, float* dw, float* dbias) {
  const cuda::DeviceGuard guard(device_);
  check_geometry(g, "conv_backward_filter");
  if (rows == 0) {  // no examples: zero gradients, as on the CPU
    fill(dw, g.weight_size(), 0.0f);
    if (dbias) fill(dbias, g.out_channels, 0.0f);
    return;
  }
  cuda::Cudnn& dnn = cudnn();
  const cuda::ConvPlan& plan = dnn.conv_plan(g, rows, scratch_capacity(kSlotB));
  const float* input = conv_input(*this, plan, rows, g.in_channels, x);
  void* work = plan.backward_filter_bytes ? scratch(kSlotB, plan.backward_filter_bytes) : nullptr;
  const float zero = 0.0f;
  NN_CUDNN_CALL(dnn.api().cudnnConvolutionBackwardFilter(
      dnn.handle(), &alpha, plan.x.get(), input, plan.y.get(), dy, plan.conv.get(),
      plan.backward_filter, work, plan.backward_filter_bytes, &zero, plan.w.get(), dw));
  if (dbias)
    NN_CUDNN_CALL(dnn.api().cudnnConvolutionBackwardBias(dnn.handle(), &alpha, plan.y.get(), dy,
                                                         &zero, plan.bias.get(), dbias));
}

}  // namespace nn
