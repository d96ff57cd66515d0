// cuDNN handle, descriptor wrappers and convolution plans (cudnn_support.h).
#include "backend/cuda/cudnn_support.h"

#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace nn::cuda {

// Destructors ignore statuses: they must not throw, and a failed destroy leaks at worst.
TensorDesc::TensorDesc() {
  NN_CUDNN_CALL(cudnnCreateTensorDescriptor(&d_));
}
TensorDesc::~TensorDesc() {
  cudnnDestroyTensorDescriptor(d_);
}

void TensorDesc::set(const std::vector<int>& dims) {
  std::vector<int> strides(dims.size());
  int stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= dims[i];
  }
  NN_CUDNN_CALL(cudnnSetTensorNdDescriptor(d_, CUDNN_DATA_FLOAT, int(dims.size()), dims.data(),
                                           strides.data()));
}

FilterDesc::FilterDesc() {
  NN_CUDNN_CALL(cudnnCreateFilterDescriptor(&d_));
}
FilterDesc::~FilterDesc() {
  cudnnDestroyFilterDescriptor(d_);
}

void FilterDesc::set(const std::vector<int>& dims) {
  NN_CUDNN_CALL(cudnnSetFilterNdDescriptor(d_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                           int(dims.size()), dims.data()));
}

ConvDesc::ConvDesc() {
  NN_CUDNN_CALL(cudnnCreateConvolutionDescriptor(&d_));
}
ConvDesc::~ConvDesc() {
  cudnnDestroyConvolutionDescriptor(d_);
}

LrnDesc::LrnDesc() {
  NN_CUDNN_CALL(cudnnCreateLRNDescriptor(&d_));
}
LrnDesc::~LrnDesc() {
  cudnnDestroyLRNDescriptor(d_);
}

std::vector<int> tensor_dims(uint32_t n, uint32_t c, const uint32_t* extent, uint32_t dims) {
  if (dims <= 2) return {int(n), int(c), int(extent[1]), int(extent[0])};
  return {int(n), int(c), int(extent[2]), int(extent[1]), int(extent[0])};
}

namespace {

// The heuristics' choice: deterministic with allowed math first, then allowed math, then the
// first that runs at all (cuDNN lists them fastest first).
template <typename Perf>
const Perf* choose(const Perf* perf, int count, bool tf32) {
  const Perf* allowed = nullptr;
  const Perf* any = nullptr;
  for (int i = 0; i < count; ++i) {
    const Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (!any) any = &p;
    const bool math_ok = tf32 || p.mathType == CUDNN_FMA_MATH;
    if (!math_ok) continue;
    if (p.determinism == CUDNN_DETERMINISTIC) return &p;
    if (!allowed) allowed = &p;
  }
  return allowed ? allowed : any;
}

std::string describe(const ConvGeometry& g, uint32_t rows) {
  auto axes = [](const std::array<uint32_t, 3>& v) {
    return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
  };
  return std::to_string(rows) + " rows, " + std::to_string(g.in_channels) + " -> " +
         std::to_string(g.out_channels) + " channels, in " + axes(g.in) + ", out " + axes(g.out) +
         ", kernel " + axes(g.kernel) + ", stride " + axes(g.stride) + ", pad " + axes(g.pad);
}

}  // namespace

Cudnn::Cudnn(cudaStream_t stream, bool tf32) : tf32_(tf32) {
  NN_CUDNN_CALL(cudnnCreate(&handle_));
  NN_CUDNN_CALL(cudnnSetStream(handle_, stream));
}

Cudnn::~Cudnn() {
  plans_.clear();
  if (handle_) cudnnDestroy(handle_);
}

const ConvPlan& Cudnn::conv_plan(const ConvGeometry& g, uint32_t rows) {
  std::vector<uint32_t> key = {rows, g.dims, g.in_channels, g.out_channels};
  for (const auto* a : {&g.in, &g.out, &g.kernel, &g.stride, &g.pad})
    key.insert(key.end(), a->begin(), a->end());
  auto found = plans_.find(key);
  if (found != plans_.end()) return *found->second;

  auto plan = std::make_unique<ConvPlan>();
  ConvPlan& p = *plan;
  p.explicit_pad = !math::cudnn_geometry_matches(g);
  p.pad = math::pad_shape_of(g);
  const uint32_t* x_extent = p.explicit_pad ? p.pad.padded : g.in.data();
  const uint32_t ones[3] = {1, 1, 1};
  p.x.set(tensor_dims(rows, g.in_channels, x_extent, g.dims));
  p.y.set(tensor_dims(rows, g.out_channels, g.out.data(), g.dims));
  p.bias.set(tensor_dims(1, g.out_channels, ones, g.dims));
  std::vector<int> w_dims = {int(g.out_channels), int(g.in_channels)};
  const int spatial = g.dims <= 2 ? 2 : 3;
  std::vector<int> pad(spatial), stride(spatial), dilation(spatial, 1);
  for (int i = 0; i < spatial; ++i) {
    const int d = spatial - 1 - i;  // cuDNN lists the outermost spatial axis first
    w_dims.push_back(int(g.kernel[d]));
    pad[i] = p.explicit_pad ? 0 : int(g.pad[d]);
    stride[i] = int(g.stride[d]);
  }
  p.w.set(w_dims);
  NN_CUDNN_CALL(cudnnSetConvolutionNdDescriptor(p.conv.get(), spatial, pad.data(), stride.data(),
                                                dilation.data(), CUDNN_CROSS_CORRELATION,
                                                CUDNN_DATA_FLOAT));
  NN_CUDNN_CALL(
      cudnnSetConvolutionMathType(p.conv.get(), tf32_ ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));

  // The output cuDNN derives must be the layer's: that is what the explicit padding is for.
  std::vector<int> out(w_dims.size());
  NN_CUDNN_CALL(cudnnGetConvolutionNdForwardOutputDim(p.conv.get(), p.x.get(), p.w.get(),
                                                      int(out.size()), out.data()));
  const std::vector<int> want = tensor_dims(rows, g.out_channels, g.out.data(), g.dims);
  if (out != want)
    throw BackendError("cuDNN convolution: output shape differs from the layer's for " +
                       describe(g, rows));

  constexpr int kMax = 16;
  int count = 0;
  {
    cudnnConvolutionFwdAlgoPerf_t perf[kMax];
    NN_CUDNN_CALL(cudnnGetConvolutionForwardAlgorithm_v7(
        handle_, p.x.get(), p.w.get(), p.conv.get(), p.y.get(), kMax, &count, perf));
    const auto* best = choose(perf, count, tf32_);
    if (!best)
      throw BackendError("cuDNN: no forward convolution algorithm for " + describe(g, rows));
    p.forward = best->algo;
    NN_CUDNN_CALL(cudnnGetConvolutionForwardWorkspaceSize(
        handle_, p.x.get(), p.w.get(), p.conv.get(), p.y.get(), p.forward, &p.forward_bytes));
  }
  {
    cudnnConvolutionBwdDataAlgoPerf_t perf[kMax];
    NN_CUDNN_CALL(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        handle_, p.w.get(), p.y.get(), p.conv.get(), p.x.get(), kMax, &count, perf));
    const auto* best = choose(perf, count, tf32_);
    if (!best)
      throw BackendError("cuDNN: no backward data convolution algorithm for " + describe(g, rows));
    p.backward_data = best->algo;
    NN_CUDNN_CALL(cudnnGetConvolutionBackwardDataWorkspaceSize(
        handle_, p.w.get(), p.y.get(), p.conv.get(), p.x.get(), p.backward_data,
        &p.backward_data_bytes));
  }
  {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[kMax];
    NN_CUDNN_CALL(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        handle_, p.x.get(), p.y.get(), p.conv.get(), p.w.get(), kMax, &count, perf));
    const auto* best = choose(perf, count, tf32_);
    if (!best)
      throw BackendError("cuDNN: no backward filter convolution algorithm for " +
                         describe(g, rows));
    p.backward_filter = best->algo;
    NN_CUDNN_CALL(cudnnGetConvolutionBackwardFilterWorkspaceSize(
        handle_, p.x.get(), p.y.get(), p.conv.get(), p.w.get(), p.backward_filter,
        &p.backward_filter_bytes));
  }
  return *plans_.emplace(std::move(key), std::move(plan)).first->second;
}

}  // namespace nn::cuda

namespace nn {

cuda::Cudnn& CudaBackend::cudnn() {
  if (!cudnn_) cudnn_ = std::make_unique<cuda::Cudnn>(stream_, tf32_);
  return *cudnn_;
}

}  // namespace nn
