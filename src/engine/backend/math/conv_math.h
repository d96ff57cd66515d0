// Index arithmetic of the CUDA convolution's explicit padding (cuda/conv.cu), shared with host
// tests. cuDNN takes one symmetric padding per axis and derives the output extent as
// (in + 2 pad - kernel) / stride + 1; DSSTNE's layers give the output extent themselves (for even
// kernels at stride 1 it keeps in == out, which no symmetric cuDNN padding gives). When the two
// disagree on any axis, the input is copied into a zero-padded buffer of exactly
// (out - 1) * stride + kernel positions per axis (the input starts `pad` positions in, and
// positions past the input, or inputs past the last window, are dropped) and cuDNN runs with no
// padding: its output is then the layer's output exactly. The backward data pass computes the
// padded gradient and adds its interior back (crop).
#pragma once

#include <cstdint>

#include "backend/conv_params.h"
#include "backend/math/fast_math.h"

namespace nn::math {

// One axis as cuDNN would see it: its output extent for a symmetric padding.
inline int64_t cudnn_output_extent(uint32_t in, uint32_t kernel, uint32_t stride, uint32_t pad) {
  const int64_t span = int64_t(in) + 2 * int64_t(pad) - kernel;
  return span < 0 ? 0 : span / stride + 1;
}

// True when cuDNN's geometry with the layer's padding gives the layer's output extents.
inline bool cudnn_geometry_matches(const ConvGeometry& g) {
  for (int d = 0; d < 3; ++d)
    if (cudnn_output_extent(g.in[d], g.kernel[d], g.stride[d], g.pad[d]) != int64_t(g.out[d]))
      return false;
  return true;
}

// The explicitly padded input: extents and where the input starts in it (x, y, z).
struct PadShape {
  uint32_t in[3];      // input extents
  uint32_t padded[3];  // (out - 1) * stride + kernel
  uint32_t pad[3];     // the input's first position in the padded buffer
};

inline PadShape pad_shape_of(const ConvGeometry& g) {
  PadShape s{};
  for (int d = 0; d < 3; ++d) {
    s.in[d] = g.in[d];
    s.padded[d] = (g.out[d] - 1) * g.stride[d] + g.kernel[d];
    s.pad[d] = g.pad[d];
  }
  return s;
}

inline uint64_t padded_plane(const PadShape& s) {
  return uint64_t(s.padded[0]) * s.padded[1] * s.padded[2];
}

// For element i of the padded batch ([planes][pz][py][px], a plane being one (row, channel)):
// the index of the input element it holds, or -1 for padding.
NN_FORCE_INLINE int64_t padded_source(const PadShape& s, uint64_t i) {
  const uint64_t px = i % s.padded[0];
  uint64_t t = i / s.padded[0];
  const uint64_t py = t % s.padded[1];
  t /= s.padded[1];
  const uint64_t pz = t % s.padded[2];
  const uint64_t plane = t / s.padded[2];
  const int64_t ix = int64_t(px) - s.pad[0], iy = int64_t(py) - s.pad[1],
                iz = int64_t(pz) - s.pad[2];
  if (ix < 0 || iy < 0 || iz < 0 || ix >= s.in[0] || iy >= s.in[1] || iz >= s.in[2]) return -1;
  const uint64_t in_plane = uint64_t(s.in[0]) * s.in[1] * s.in[2];
  return int64_t(plane * in_plane + (uint64_t(iz) * s.in[1] + uint64_t(iy)) * s.in[0] +
                 uint64_t(ix));
}

// For element i of the input batch: the padded element that holds it, or -1 when the padded
// buffer dropped it (an input no window reads).
NN_FORCE_INLINE int64_t padded_target(const PadShape& s, uint64_t i) {
  const uint64_t ix = i % s.in[0];
  uint64_t t = i / s.in[0];
  const uint64_t iy = t % s.in[1];
  t /= s.in[1];
  const uint64_t iz = t % s.in[2];
  const uint64_t plane = t / s.in[2];
  const uint64_t px = ix + s.pad[0], py = iy + s.pad[1], pz = iz + s.pad[2];
  if (px >= s.padded[0] || py >= s.padded[1] || pz >= s.padded[2]) return -1;
  return int64_t((plane * s.padded[2] + pz) * s.padded[1] * s.padded[0] + py * s.padded[0] + px);
}

}  // namespace nn::math
