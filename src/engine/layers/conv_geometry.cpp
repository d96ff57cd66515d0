// Convolutional, Pooling and LRN layers' shapes as backend kernel parameters (see conv_geometry.h).
#include "layers/conv_geometry.h"

#include <algorithm>

#include "config/layer_shapes.h"

namespace nn {

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
