// Convolutional, Pooling and LRN layers mapped onto the backend's kernel parameters
// (ConvGeometry, LrnParams), from their final sizes. The shape rules themselves (output extents,
// padding, derived layer sizes) are config/layer_shapes.h.
#pragma once

#include <cstdint>

#include "backend/conv_params.h"
#include "config/layer_shapes.h"
#include "config/network_spec.h"

namespace nn {

// Kernel shape for `layer` (Convolutional or Max/Average Pooling) reading `source`, both with
// their final dimensions (config/layer_shapes.h). For pooling, out_channels = in_channels.
ConvGeometry layer_geometry(const LayerSpec& layer, const LayerSpec& source);

// LRN shape of a layer: channels = its last dimension, plane = the product of the others.
LrnParams lrn_shape(const LayerSpec& layer);

}  // namespace nn
