// Kernel padding of convolution and pooling layers, derived the way DSSTNE derives it
// (NNNetwork::CalculateDerivedLayerDimensions). LayerSpec does not store padding because it follows
// from the kernel, the stride and the source sizes; network files still carry it
// (layer<i>_kernelPaddingX/Y/Z) because DSSTNE reads it back instead of recomputing it.
#pragma once

#include <array>
#include <cstdint>

#include "config/network_spec.h"

namespace nn {

// Padding {x, y, z} for `layer` within `spec`. Per kernel dimension d (d < kernel_dimensions):
// (kernel - in + 1) / 2 when the source is smaller than the kernel, kernel / 2 when the stride is
// 1, otherwise 0. Fully connected layers and DotProduct pooling have no padding. Sources that are
// not in `spec` are ignored (validation reports them elsewhere).
std::array<uint32_t, 3> kernel_padding(const NetworkSpec& spec, const LayerSpec& layer);

}  // namespace nn
