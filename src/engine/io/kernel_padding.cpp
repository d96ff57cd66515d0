// DSSTNE's padding rule for convolution and pooling layers (see kernel_padding.h).
#include "io/kernel_padding.h"

#include <algorithm>

namespace nn {

std::array<uint32_t, 3> kernel_padding(const NetworkSpec& spec, const LayerSpec& layer) {
  std::array<uint32_t, 3> padding{{0, 0, 0}};
  if (layer.type == LayerType::FullyConnected) return padding;
  if (layer.type == LayerType::Pooling && layer.pooling == PoolingFunction::DotProduct)
    return padding;
  const int dims = std::clamp(layer.kernel_dimensions, 0, 3);
  // DSSTNE visits every source and only overwrites a value when a rule applies, so with sources of
  // different sizes the last matching source wins; all sources normally have the same size.
  for (const std::string& source_name : layer.sources) {
    const LayerSpec* source = spec.find_layer(source_name);
    if (!source) continue;
    for (int d = 0; d < dims; ++d) {
      const uint32_t in = source->n[d], kernel = layer.kernel[d];
      if (in < kernel)
        padding[d] = (kernel - in + 1) / 2;
      else if (layer.kernel_stride[d] == 1)
        padding[d] = kernel / 2;
    }
  }
  return padding;
}

}  // namespace nn
