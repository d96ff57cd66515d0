// cuDNN loading, handle, descriptor wrappers and convolution plans (cudnn_support.h).
#include "backend/cuda/cudnn_support.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_factory.h"
#include "backend/cuda/device_guard.h"
#include "core/error.h"
#include "core/memory_budget.h"

namespace nn::cuda {
namespace {

struct Loaded {
  CudnnApi api;
  std::string error;  // empty when loaded
};

// Opens the first candidate that loads and resolves every function. The handle is never closed:
// cuDNN stays loaded for the life of the process.
Loaded load() {
  Loaded l;
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("NN_CUDNN_LIBRARY"); env && *env) candidates.push_back(env);
  candidates.push_back("libcudnn.so." + std::to_string(CUDNN_MAJOR));
#ifdef NN_CUDNN_CONFIGURED_PATH
  candidates.push_back(NN_CUDNN_CONFIGURED_PATH);
#endif
  std::string tried;
  for (const std::string& name : candidates) {
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      tried += (tried.empty() ? "" : "; ") + std::string(e ? e : name + ": cannot be opened");
      continue;
    }
    std::string missing;
#define NN_CUDNN_RESOLVE(fn)                                     \
  l.api.fn = reinterpret_cast<decltype(&::fn)>(dlsym(lib, #fn)); \
  if (!l.api.fn && missing.empty()) missing = #fn;
    NN_CUDNN_FUNCTIONS(NN_CUDNN_RESOLVE)
#undef NN_CUDNN_RESOLVE
    if (!missing.empty()) {
      tried += (tried.empty() ? "" : "; ") + name + ": no symbol " + missing;
      l.api = CudnnApi{};
      continue;
    }
    const size_t version = l.api.cudnnGetVersion();
    if (version / 10000 != CUDNN_MAJOR) {  // 9.19.0 is 91900
      tried += (tried.empty() ? "" : "; ") + name + ": cuDNN version " + std::to_string(version) +
               ", built against " + std::to_string(CUDNN_MAJOR) + ".x";
      l.api = CudnnApi{};
      continue;
    }
    return l;
  }
  l.error = "cuDNN cannot be loaded (" + tried +
            "); set NN_CUDNN_LIBRARY to the path of libcudnn.so." + std::to_string(CUDNN_MAJOR);
  return l;
}

const Loaded& loaded() {
  static const Loaded l = load();
  return l;
}

}  // namespace

const CudnnApi& cudnn_api() {
  const Loaded& l = loaded();
  if (!l.error.empty())
    throw BackendError("backend 'cuda': convolution, LRN and batch normalisation need " + l.error);
  return l.api;
}

// Destructors ignore statuses: they must not throw, and a failed destroy leaks at worst.
TensorDesc::TensorDesc() {
  NN_CUDNN_CALL(cudnn_api().cudnnCreateTensorDescriptor(&d_));
}
TensorDesc::~TensorDesc() {
  cudnn_api().cudnnDestroyTensorDescriptor(d_);
}

void TensorDesc::set(const std::vector<int>& dims) {
  std::vector<int> strides(dims.size());
  int stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= dims[i];
  }
  NN_CUDNN_CALL(cudnn_api().cudnnSetTensorNdDescriptor(d_, CUDNN_DATA_FLOAT, int(dims.size()),
                                                       dims.data(), strides.data()));
}

FilterDesc::FilterDesc() {
  NN_CUDNN_CALL(cudnn_api().cudnnCreateFilterDescriptor(&d_));
}
FilterDesc::~FilterDesc() {
  cudnn_api().cudnnDestroyFilterDescriptor(d_);
}

void FilterDesc::set(const std::vector<int>& dims) {
  NN_CUDNN_CALL(cudnn_api().cudnnSetFilterNdDescriptor(d_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                       int(dims.size()), dims.data()));
}

ConvDesc::ConvDesc() {
  NN_CUDNN_CALL(cudnn_api().cudnnCreateConvolutionDescriptor(&d_));
}
ConvDesc::~ConvDesc() {
  cudnn_api().cudnnDestroyConvolutionDescriptor(d_);
}

LrnDesc::LrnDesc() {
  NN_CUDNN_CALL(cudnn_api().cudnnCreateLRNDescriptor(&d_));
}
LrnDesc::~LrnDesc() {
  cudnn_api().cudnnDestroyLRNDescriptor(d_);
}

std::vector<int> tensor_dims(uint32_t n, uint32_t c, const uint32_t* extent, uint32_t dims) {
  if (dims <= 2) return {int(n), int(c), int(extent[1]), int(extent[0])};
  return {int(n), int(c), int(extent[2]), int(extent[1]), int(extent[0])};
}

namespace {

std::string describe(const ConvGeometry& g, uint32_t rows) {
  auto axes = [](const std::array<uint32_t, 3>& v) {
    return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
  };
  return std::to_string(rows) + " rows, " + std::to_string(g.in_channels) + " -> " +
         std::to_string(g.out_channels) + " channels, in " + axes(g.in) + ", out " + axes(g.out) +
         ", kernel " + axes(g.kernel) + ", stride " + axes(g.stride) + ", pad " + axes(g.pad);
}

}  // namespace

void check_int32_tensor(const char* which, uint64_t elements, const ConvGeometry& g,
                        uint32_t rows) {
  if (elements <= uint64_t(INT32_MAX)) return;
  throw BackendError("cuDNN convolution: the " + std::string(which) + " tensor of " +
                     describe(g, rows) + " has " + std::to_string(elements) +
                     " elements; cuDNN's descriptors take sizes and strides below 2^31 "
                     "(2,147,483,648): use smaller batches");
}

void describe_convolution(const CudnnApi& api, const ConvGeometry& g, uint32_t rows, bool tf32,
                          ConvPlan& p) {
  p.explicit_pad = !math::cudnn_geometry_matches(g);
  p.pad = math::pad_shape_of(g);
  const uint32_t* x_extent = p.explicit_pad ? p.pad.padded : g.in.data();
  const uint32_t ones[3] = {1, 1, 1};
  // 4-D tensors unless the z axis is in use (axes beyond g.dims have extent 1: conv.cu checks).
  const uint32_t dims = g.dims == 3 ? 3 : 2;
  // cuDNN's descriptors hold sizes and strides as int: every one must stay below 2^31.
  const auto plane = [](const uint32_t* e) { return uint64_t(e[0]) * e[1] * e[2]; };
  check_int32_tensor("input", uint64_t(rows) * g.in_channels * plane(x_extent), g, rows);
  check_int32_tensor("output", uint64_t(rows) * g.out_channels * plane(g.out.data()), g, rows);
  check_int32_tensor("filter", uint64_t(g.out_channels) * g.in_channels * plane(g.kernel.data()), g,
                     rows);
  p.x.set(tensor_dims(rows, g.in_channels, x_extent, dims));
  p.y.set(tensor_dims(rows, g.out_channels, g.out.data(), dims));
  p.bias.set(tensor_dims(1, g.out_channels, ones, dims));
  std::vector<int> w_dims = {int(g.out_channels), int(g.in_channels)};
  const int spatial = int(dims);
  std::vector<int> pad(spatial), stride(spatial), dilation(spatial, 1);
  for (int i = 0; i < spatial; ++i) {
    const int d = spatial - 1 - i;  // cuDNN lists the outermost spatial axis first
    w_dims.push_back(int(g.kernel[d]));
    pad[i] = p.explicit_pad ? 0 : int(g.pad[d]);
    stride[i] = int(g.stride[d]);
  }
  p.w.set(w_dims);
  NN_CUDNN_CALL(api.cudnnSetConvolutionNdDescriptor(p.conv.get(), spatial, pad.data(),
                                                    stride.data(), dilation.data(),
                                                    CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  NN_CUDNN_CALL(
      api.cudnnSetConvolutionMathType(p.conv.get(), tf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));

  // The output cuDNN derives must be the layer's: that is what the explicit padding is for.
  std::vector<int> out(w_dims.size());
  NN_CUDNN_CALL(api.cudnnGetConvolutionNdForwardOutputDim(p.conv.get(), p.x.get(), p.w.get(),
                                                          int(out.size()), out.data()));
  const std::vector<int> want = tensor_dims(rows, g.out_channels, g.out.data(), dims);
  if (out != want)
    throw BackendError("cuDNN convolution: output shape differs from the layer's for " +
                       describe(g, rows));
}

std::string ConvPlan::algorithms() const {
  return "forward " + std::to_string(int(forward)) + ", backward data " +
         std::to_string(int(backward_data)) + ", backward filter " +
         std::to_string(int(backward_filter));
}

Cudnn::Cudnn(cudaStream_t stream, bool tf32, const CudnnSettings& settings)
    : api_(cudnn_api()), tf32_(tf32), settings_(settings) {
  NN_CUDNN_CALL(api_.cudnnCreate(&handle_));
  NN_CUDNN_CALL(api_.cudnnSetStream(handle_, stream));
}

Cudnn::~Cudnn() {
  plans_.clear();
  if (handle_) api_.cudnnDestroy(handle_);
}

const ConvPlan& Cudnn::conv_plan(const ConvGeometry& g, uint32_t rows, size_t held_workspace) {
  std::vector<uint32_t> key = {rows, g.dims, g.in_channels, g.out_channels};
  for (const auto* a : {&g.in, &g.out, &g.kernel, &g.stride, &g.pad})
    key.insert(key.end(), a->begin(), a->end());
  auto found = plans_.find(key);
  if (found != plans_.end()) return *found->second;

  auto plan = std::make_unique<ConvPlan>();
  ConvPlan& p = *plan;
  describe_convolution(api_, g, rows, tf32_, p);

  // The budget for this shape's algorithms: the setting, within what can be allocated now.
  size_t free_bytes = 0, total_bytes = 0;
  NN_CUDA_CALL(cudaMemGetInfo(&free_bytes, &total_bytes));
  const size_t budget = workspace_budget(settings_.workspace_limit, free_bytes, held_workspace);
  // The chosen candidate's algorithm and workspace, or BackendError saying why there is none.
  const auto pick = [&](const std::vector<AlgoCandidate>& ranked, const char* pass, int* algo,
                        size_t* bytes) {
    const AlgoChoice c = choose_algorithm(ranked, settings_.fastest, tf32_, budget);
    if (c.index < 0)
      throw BackendError(
          no_algorithm_message(pass, settings_, budget, free_bytes, describe(g, rows), c));
    *algo = ranked[size_t(c.index)].algo;
    *bytes = ranked[size_t(c.index)].workspace;
  };

  constexpr int kMax = 16;
  int count = 0, algo = 0;
  {
    cudnnConvolutionFwdAlgoPerf_t perf[kMax];
    NN_CUDNN_CALL(api_.cudnnGetConvolutionForwardAlgorithm_v7(
        handle_, p.x.get(), p.w.get(), p.conv.get(), p.y.get(), kMax, &count, perf));
    pick(algo_candidates(perf, count,
                         [&](cudnnConvolutionFwdAlgo_t a, size_t* bytes) {
                           return api_.cudnnGetConvolutionForwardWorkspaceSize(
                               handle_, p.x.get(), p.w.get(), p.conv.get(), p.y.get(), a, bytes);
                         }),
         "forward", &algo, &p.forward_bytes);
    p.forward = cudnnConvolutionFwdAlgo_t(algo);
  }
  {
    cudnnConvolutionBwdDataAlgoPerf_t perf[kMax];
    NN_CUDNN_CALL(api_.cudnnGetConvolutionBackwardDataAlgorithm_v7(
        handle_, p.w.get(), p.y.get(), p.conv.get(), p.x.get(), kMax, &count, perf));
    pick(algo_candidates(perf, count,
                         [&](cudnnConvolutionBwdDataAlgo_t a, size_t* bytes) {
                           return api_.cudnnGetConvolutionBackwardDataWorkspaceSize(
                               handle_, p.w.get(), p.y.get(), p.conv.get(), p.x.get(), a, bytes);
                         }),
         "backward data", &algo, &p.backward_data_bytes);
    p.backward_data = cudnnConvolutionBwdDataAlgo_t(algo);
  }
  {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[kMax];
    NN_CUDNN_CALL(api_.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        handle_, p.x.get(), p.y.get(), p.conv.get(), p.w.get(), kMax, &count, perf));
    pick(algo_candidates(perf, count,
                         [&](cudnnConvolutionBwdFilterAlgo_t a, size_t* bytes) {
                           return api_.cudnnGetConvolutionBackwardFilterWorkspaceSize(
                               handle_, p.x.get(), p.y.get(), p.conv.get(), p.w.get(), a, bytes);
                         }),
         "backward filter", &algo, &p.backward_filter_bytes);
    p.backward_filter = cudnnConvolutionBwdFilterAlgo_t(algo);
  }
  return *plans_.emplace(std::move(key), std::move(plan)).first->second;
}

bool cudnn_loadable(std::string* why) noexcept {
  try {
    const std::string& error = cuda::loaded().error;
    if (why) *why = error;
    return error.empty();
  } catch (...) {  // (only std::bad_alloc could get here)
    return false;
  }
}

}  // namespace nn::cuda

namespace nn {

cuda::Cudnn& CudaBackend::cudnn() {
  const cuda::DeviceGuard guard(device_);
  if (!cudnn_) cudnn_ = std::make_unique<cuda::Cudnn>(stream_, tf32_, cudnn_settings_);
  return *cudnn_;
}

}  // namespace nn
