// The one place the CUDA backend talks to cuDNN: the library itself, loaded at run time, a
// handle bound to the backend's stream, owning wrappers of the tensor / filter / convolution /
// LRN descriptors, and the convolution plans (descriptors plus the chosen algorithms and their
// workspace sizes) cached per (geometry, batch rows). Every status goes through NN_CUDNN_CALL
// (cuda_check.h).
//
// Run-time loading: cuDNN is opened with dlopen on first use (the NN_CUDNN_LIBRARY environment
// variable, else libcudnn.so.9 on the loader's path, else the library found at configure time)
// instead of being linked. Linking would make every program of the suite need cuDNN just to
// start, on machines where only convolution, LRN or batch norm use it (a GPU machine with the
// CUDA toolkit but no cuDNN on the library path could not even run the fully connected CUDA
// tests). Without a loadable cuDNN those operations throw BackendError saying why, and backend
// auto picks the CPU for networks that need them.
//
// cuDNN 9 marks this "legacy" API deprecated in favour of the graph API (its deprecation
// warnings are off unless CUDNN_WARN_DEPRECATED is defined); it is complete for what the
// Backend needs and keeps these wrappers thin.
//
// Algorithms: cuDNN's heuristics (cudnnGet*Algorithm_v7) rank the candidates; choose_algorithm
// (cudnn_choice.h) takes the first that fits the workspace budget, whose math is FP32 FMA (any
// math when the backend was created with TF32) and which is deterministic (the backward data and
// filter passes otherwise may sum with atomics in a varying order) unless NN_CUDNN_ALGO=fastest.
// No candidate qualifying is a BackendError naming the shape and the budget.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend/conv_params.h"
#include "backend/cuda/cudnn_choice.h"
#include "backend/math/conv_math.h"

namespace nn::cuda {

// Every cuDNN function the backend calls, resolved from the loaded library.
#define NN_CUDNN_FUNCTIONS(X)                       \
  X(cudnnGetVersion)                                \
  X(cudnnGetErrorString)                            \
  X(cudnnCreate)                                    \
  X(cudnnDestroy)                                   \
  X(cudnnSetStream)                                 \
  X(cudnnCreateTensorDescriptor)                    \
  X(cudnnDestroyTensorDescriptor)                   \
  X(cudnnSetTensorNdDescriptor)                     \
  X(cudnnCreateFilterDescriptor)                    \
  X(cudnnDestroyFilterDescriptor)                   \
  X(cudnnSetFilterNdDescriptor)                     \
  X(cudnnCreateConvolutionDescriptor)               \
  X(cudnnDestroyConvolutionDescriptor)              \
  X(cudnnSetConvolutionNdDescriptor)                \
  X(cudnnSetConvolutionMathType)                    \
  X(cudnnGetConvolutionNdForwardOutputDim)          \
  X(cudnnGetConvolutionForwardAlgorithm_v7)         \
  X(cudnnGetConvolutionForwardWorkspaceSize)        \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)    \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)   \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)  \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize) \
  X(cudnnConvolutionForward)                        \
  X(cudnnAddTensor)                                 \
  X(cudnnConvolutionBackwardData)                   \
  X(cudnnConvolutionBackwardFilter)                 \
  X(cudnnConvolutionBackwardBias)                   \
  X(cudnnCreateLRNDescriptor)                       \
  X(cudnnDestroyLRNDescriptor)                      \
  X(cudnnSetLRNDescriptor)                          \
  X(cudnnLRNCrossChannelForward)                    \
  X(cudnnLRNCrossChannelBackward)                   \
  X(cudnnBatchNormalizationForwardTraining)         \
  X(cudnnBatchNormalizationForwardInference)        \
  X(cudnnBatchNormalizationBackward)

struct CudnnApi {
#define NN_CUDNN_MEMBER(name) decltype(&::name) name = nullptr;
  NN_CUDNN_FUNCTIONS(NN_CUDNN_MEMBER)
#undef NN_CUDNN_MEMBER
};

// The loaded API (loaded once, on first call); throws BackendError saying why cuDNN cannot be
// used (not found, a symbol missing, another major version than the headers').
const CudnnApi& cudnn_api();

class TensorDesc {
 public:
  TensorDesc();
  ~TensorDesc();
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  // Packed NCHW / NCDHW float tensor of the given dimensions (4 or 5, outermost first).
  void set(const std::vector<int>& dims);
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

class FilterDesc {
 public:
  FilterDesc();
  ~FilterDesc();
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
  void set(const std::vector<int>& dims);  // [out channels][in channels][kz][ky][kx], NCHW
  cudnnFilterDescriptor_t get() const { return d_; }

 private:
  cudnnFilterDescriptor_t d_ = nullptr;
};

class ConvDesc {
 public:
  ConvDesc();
  ~ConvDesc();
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
  cudnnConvolutionDescriptor_t get() const { return d_; }

 private:
  cudnnConvolutionDescriptor_t d_ = nullptr;
};

class LrnDesc {
 public:
  LrnDesc();
  ~LrnDesc();
  LrnDesc(const LrnDesc&) = delete;
  LrnDesc& operator=(const LrnDesc&) = delete;
  cudnnLRNDescriptor_t get() const { return d_; }

 private:
  cudnnLRNDescriptor_t d_ = nullptr;
};

// [n][c][spatial...] for cuDNN: 4 dimensions for 1-D and 2-D geometries (z dropped), 5 for 3-D;
// extents are x, y, z as in ConvGeometry.
std::vector<int> tensor_dims(uint32_t n, uint32_t c, const uint32_t* extent, uint32_t dims);

// Everything one convolution shape needs, built once.
struct ConvPlan {
  bool explicit_pad = false;  // the input goes through a zero-padded copy (math/conv_math.h)
  math::PadShape pad{};
  TensorDesc x, y, bias;  // x: the padded shape when explicit_pad
  FilterDesc w;
  ConvDesc conv;
  cudnnConvolutionFwdAlgo_t forward{};
  cudnnConvolutionBwdDataAlgo_t backward_data{};
  cudnnConvolutionBwdFilterAlgo_t backward_filter{};
  size_t forward_bytes = 0, backward_data_bytes = 0, backward_filter_bytes = 0;
  // The three algorithms chosen, for messages and tests: "forward 1, backward data 1, ...".
  std::string algorithms() const;
};

// Fills the descriptors of `p` for `rows` examples of g (everything but the algorithms, which
// need a handle and so a device): explicit padding when cuDNN's geometry is not the layer's,
// and a check that cuDNN's output shape is the layer's (BackendError otherwise). Public so that
// host tests can check the geometry against the real library without a GPU.
void describe_convolution(const CudnnApi& api, const ConvGeometry& g, uint32_t rows, bool tf32,
                          ConvPlan& p);

// BackendError when a tensor of `elements` elements (the input, output or filter of g for `rows`
// examples) cannot be described to cuDNN, whose descriptors hold sizes and strides as int (every
// stride is below the element count). describe_convolution checks all three first.
void check_int32_tensor(const char* which, uint64_t elements, const ConvGeometry& g, uint32_t rows);

// Whether a cuDNN algorithm computes through an FFT or Winograd transform (reduced precision).
inline bool transform_algorithm(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
inline bool transform_algorithm(cudnnConvolutionBwdDataAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
inline bool transform_algorithm(cudnnConvolutionBwdFilterAlgo_t a) {
  return a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

// cuDNN's ranked perf results (fastest first) as candidates for choose_algorithm, each with the
// workspace cuDNN's size query gives for it (the query is authoritative; the larger of the two
// is kept). workspace_of(algo, &bytes) returns the query's status. In the header for the
// host tests (fake perf results).
template <typename Perf, typename WorkspaceOf>
std::vector<AlgoCandidate> algo_candidates(const Perf* perf, int count, WorkspaceOf workspace_of) {
  std::vector<AlgoCandidate> out;
  for (int i = 0; i < count; ++i) {
    const Perf& p = perf[i];
    AlgoCandidate c;
    c.algo = int(p.algo);
    c.supported = p.status == CUDNN_STATUS_SUCCESS;
    c.workspace = p.memory;
    c.deterministic = p.determinism == CUDNN_DETERMINISTIC;
    c.tensor_ops =
        p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    c.transform = transform_algorithm(p.algo);
    if (c.supported) {
      size_t bytes = 0;
      if (workspace_of(p.algo, &bytes) == CUDNN_STATUS_SUCCESS)
        c.workspace = bytes > c.workspace ? bytes : c.workspace;
      else
        c.supported = false;
    }
    out.push_back(c);
  }
  return out;
}

class Cudnn {
 public:
  Cudnn(cudaStream_t stream, bool tf32, const CudnnSettings& settings);
  ~Cudnn();
  Cudnn(const Cudnn&) = delete;
  Cudnn& operator=(const Cudnn&) = delete;

  cudnnHandle_t handle() const { return handle_; }
  const CudnnApi& api() const { return api_; }
  // The plan for convolving `rows` examples of geometry g (built on first use, then cached).
  // held_workspace: the bytes the workspace buffer holds now (counted as available for the
  // budget besides the free device memory).
  const ConvPlan& conv_plan(const ConvGeometry& g, uint32_t rows, size_t held_workspace);

 private:
  const CudnnApi& api_;
  cudnnHandle_t handle_ = nullptr;
  bool tf32_ = false;
  CudnnSettings settings_;
  std::map<std::vector<uint32_t>, std::unique_ptr<ConvPlan>> plans_;
};

}  // namespace nn::cuda
