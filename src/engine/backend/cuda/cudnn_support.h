// The one place the CUDA backend talks to cuDNN's descriptors: a handle bound to the backend's
// stream, owning wrappers of the tensor / filter / convolution / LRN descriptors, and the
// convolution plans (descriptors plus the chosen algorithms and their workspace sizes) cached
// per (geometry, batch rows). Every status goes through NN_CUDNN_CALL (cuda_check.h).
//
// cuDNN 9 marks this "legacy" API deprecated in favour of the graph API (its deprecation
// warnings are off unless CUDNN_WARN_DEPRECATED is defined); it is complete for what the
// Backend needs and keeps these wrappers thin.
//
// Algorithms: cuDNN's heuristics (cudnnGet*Algorithm_v7), preferring deterministic ones (the
// backward data and filter passes otherwise may sum with atomics in a varying order) whose math
// is FP32 FMA, or any math when the backend was created with TF32.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "backend/conv_params.h"
#include "backend/math/conv_math.h"

namespace nn::cuda {

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
};

class Cudnn {
 public:
  Cudnn(cudaStream_t stream, bool tf32);
  ~Cudnn();
  Cudnn(const Cudnn&) = delete;
  Cudnn& operator=(const Cudnn&) = delete;

  cudnnHandle_t handle() const { return handle_; }
  // The plan for convolving `rows` examples of geometry g (built on first use, then cached).
  const ConvPlan& conv_plan(const ConvGeometry& g, uint32_t rows);

 private:
  cudnnHandle_t handle_ = nullptr;
  bool tf32_ = false;
  std::map<std::vector<uint32_t>, std::unique_ptr<ConvPlan>> plans_;
};

}  // namespace nn::cuda
