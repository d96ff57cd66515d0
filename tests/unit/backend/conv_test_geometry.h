// Convolution and pooling geometries for the kernel tests, built independently of the layers'
// code (layers/conv_geometry.h) so the tests check it rather than repeat it: DSSTNE's output and
// padding rule, cuDNN's, and a one-line description for failure messages.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "backend/conv_params.h"

namespace nn::test {

// cuDNN's rule, out = (in + 2 pad - kernel) / stride + 1 on every axis, unless `out` gives it.
inline ConvGeometry conv_geometry(uint32_t dims, std::array<uint32_t, 3> in,
                                  std::array<uint32_t, 3> kernel, std::array<uint32_t, 3> stride,
                                  std::array<uint32_t, 3> pad, uint32_t cin, uint32_t cout,
                                  std::array<uint32_t, 3> out = {0, 0, 0}) {
  ConvGeometry g;
  g.dims = dims;
  g.in = in;
  g.kernel = kernel;
  g.stride = stride;
  g.pad = pad;
  g.in_channels = cin;
  g.out_channels = cout;
  for (int d = 0; d < 3; ++d)
    g.out[d] = out[d] ? out[d] : (in[d] + 2 * pad[d] - kernel[d]) / stride[d] + 1;
  return g;
}

// DSSTNE's rule: out = 1 when in <= kernel, in at stride 1, else (in - kernel) / stride + 1;
// pad = (kernel - in + 1) / 2 when in < kernel, kernel / 2 at stride 1, else 0.
inline ConvGeometry dsstne_geometry(uint32_t dims, std::array<uint32_t, 3> in,
                                    std::array<uint32_t, 3> kernel, std::array<uint32_t, 3> stride,
                                    uint32_t cin, uint32_t cout) {
  ConvGeometry g = conv_geometry(dims, in, kernel, stride, {0, 0, 0}, cin, cout, {1, 1, 1});
  for (int d = 0; d < 3; ++d) {
    const uint32_t i = in[d], k = kernel[d], s = stride[d];
    g.out[d] = i <= k ? 1 : s == 1 ? i : (i - k) / s + 1;
    g.pad[d] = i < k ? (k - i + 1) / 2 : s == 1 ? k / 2 : 0;
  }
  return g;
}

inline std::string describe(const ConvGeometry& g) {
  auto a = [](const std::array<uint32_t, 3>& v) {
    return std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]);
  };
  return "dims " + std::to_string(g.dims) + " in " + a(g.in) + "x" + std::to_string(g.in_channels) +
         " out " + a(g.out) + "x" + std::to_string(g.out_channels) + " kernel " + a(g.kernel) +
         " stride " + a(g.stride) + " pad " + a(g.pad);
}

}  // namespace nn::test
