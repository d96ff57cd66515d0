// DSSTNE's shape rules for Convolutional and Pooling layers (see conv_geometry.h).
#include "layers/conv_geometry.h"

#include <algorithm>

#include "io/kernel_padding.h"

namespace nn {

uint32_t conv_output_extent(uint32_t in, uint32_t kernel, uint32_t stride) {
  if (in <= kernel) return 1;
  if (stride <= 1) return in;
  return (in - kernel) / stride + 1;
}

uint32_t spatial_axes(const LayerSpec& layer) {
  return uint32_t(std::clamp(layer.kernel_dimensions, 1, 3));
}

uint32_t trailing_channels(const LayerSpec& layer, uint32_t from) {
  uint32_t c = 1;
  for (uint32_t d = from; d < 4; ++d) c *= layer.n[d];
  return c;
}

ConvGeometry layer_geometry(const LayerSpec& layer, const LayerSpec& source) {
  ConvGeometry g;
  g.dims = spatial_axes(layer);
  // kernel_padding() applies DSSTNE's rule over the sources it can find in the spec it is given;
  // here that is this one source.
  NetworkSpec pair;
  pair.layers = {source, layer};
  const auto pad = kernel_padding(pair, layer);
  for (uint32_t d = 0; d < g.dims; ++d) {
    g.in[d] = source.n[d];
    g.out[d] = layer.n[d];
    g.kernel[d] = layer.kernel[d];
    g.stride[d] = layer.kernel_stride[d];
    g.pad[d] = pad[d];
  }
  g.in_channels = trailing_channels(source, g.dims);
  g.out_channels =
      layer.type == LayerType::Pooling ? g.in_channels : trailing_channels(layer, g.dims);
  return g;
}

LrnParams lrn_shape(const LayerSpec& layer) {
  LrnParams p;
  const int last = std::clamp(layer.dimensions, 1, 4) - 1;
  p.channels = layer.n[last];
  p.plane = 1;
  for (int d = 0; d < 4; ++d)
    if (d != last) p.plane *= layer.n[d];
  return p;
}

}  // namespace nn
