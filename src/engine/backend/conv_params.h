// Shapes for the convolution, pooling and local response normalisation kernels.
//
// Layout: a batch is [rows][channels][z][y][x], x fastest (DSSTNE's unit order: Nx varies
// fastest, the channel is the layer's last dimension), i.e. NCHW / NCDHW. Unused spatial axes
// (d >= dims) must have extent 1, kernel 1, stride 1 and padding 0, so 1-D and 2-D shapes are 3-D
// ones with trailing ones; the backends refuse anything else (a 2-D convolution over several z
// slices is a 3-D one with a z kernel of 1).
//
// Output position o along an axis reads inputs o * stride - pad + k for k in [0, kernel);
// positions outside [0, in) are zero padding (convolution) or skipped (pooling). Output extents
// are given, not computed here: DSSTNE derives them with its own rule, which for even kernels
// differs from cuDNN's (in + 2 pad - kernel) / stride + 1 (see config/layer_shapes.h).
//
// Convolution weights are [out channels][in channels][kz][ky][kx] (cuDNN's NCHW filter order,
// as DSSTNE stores them); the operation is a cross-correlation, as in cuDNN.
#pragma once

#include <array>
#include <cstdint>

#include "config/enums.h"

namespace nn {

struct ConvGeometry {
  uint32_t dims = 2;  // spatial dimensions in use, 1..3
  uint32_t in_channels = 1, out_channels = 1;
  std::array<uint32_t, 3> in{{1, 1, 1}};   // x, y, z extents of one input channel
  std::array<uint32_t, 3> out{{1, 1, 1}};  // x, y, z extents of one output channel
  std::array<uint32_t, 3> kernel{{1, 1, 1}};
  std::array<uint32_t, 3> stride{{1, 1, 1}};
  std::array<uint32_t, 3> pad{{0, 0, 0}};

  uint64_t in_plane() const { return uint64_t(in[0]) * in[1] * in[2]; }
  uint64_t out_plane() const { return uint64_t(out[0]) * out[1] * out[2]; }
  uint64_t kernel_volume() const { return uint64_t(kernel[0]) * kernel[1] * kernel[2]; }
  uint64_t in_size() const { return in_channels * in_plane(); }     // floats per example
  uint64_t out_size() const { return out_channels * out_plane(); }  // floats per example
  uint64_t weight_size() const { return uint64_t(out_channels) * in_channels * kernel_volume(); }
  // Every output reads exactly the input at the same position (1x1 kernel, stride 1, no pad).
  bool is_pointwise() const {
    return kernel_volume() == 1 && stride == std::array<uint32_t, 3>{{1, 1, 1}} &&
           pad == std::array<uint32_t, 3>{{0, 0, 0}} && in == out;
  }
};

// Max or Average pooling: geometry with in_channels == out_channels. Average divides by the
// number of window positions inside the input (cuDNN's COUNT_EXCLUDE_PADDING, as DSSTNE uses);
// Max ignores positions outside the input. A window with no position inside yields 0.
struct PoolParams {
  ConvGeometry geometry;
  PoolingFunction function = PoolingFunction::Max;
};

// Every backend's pooling kernels start here: InternalError naming `kernel` unless `p` is Max or
// Average pooling over 1 to 3 dimensions with positive extents and as many outputs as inputs
// channels (conv_params.cpp).
void check_pool_params(const PoolParams& p, const char* kernel);

// Cross-channel local response normalisation (cuDNN's CUDNN_LRN_CROSS_CHANNEL_DIM1):
//   y_c = x_c * (k + alpha / n * sum_{j = c - (n-1)/2}^{c + n/2} x_j^2) ^ -beta
// over the channels j that exist; independently at every position of the plane.
struct LrnParams {
  uint32_t channels = 1;
  uint64_t plane = 1;  // positions per channel
  uint32_t n = 5;
  float k = 2.0f, alpha = 1e-4f, beta = 0.75f;
};

}  // namespace nn
