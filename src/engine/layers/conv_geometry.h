// How Convolutional and Pooling layers map onto the backend's kernel shapes, following DSSTNE
// (NNNetwork::CalculateDerivedLayerDimensions, dsstne-reference.md §3.2):
//
//  * A layer's kernel has kernel_dimensions (1-3) spatial axes: x, y, z in that order. For a
//    layer or source N = [Nx, Ny, Nz, Nw], the first kernel_dimensions entries are spatial and
//    the rest (their product) are channels, e.g. a 2-D kernel over a 28x28x3 image: planes of
//    28x28, 3 channels.
//  * Output extent along a spatial axis: 1 when in <= kernel, in when the stride is 1, else
//    (in - kernel) / stride + 1 (so stride-1 layers keep their size, even for even kernels).
//  * Padding (io/kernel_padding.h): (kernel - in + 1) / 2 when in < kernel, kernel / 2
//    when the stride is 1, else 0.
//  * Convolution output channels = the layer's N after the spatial axes (DSSTNE: "N in the next
//    free dimension"); pooling keeps its source's channels; LRN normalises across the channels
//    of a layer, i.e. its last dimension.
#pragma once

#include <cstdint>

#include "backend/conv_params.h"
#include "config/network_spec.h"

namespace nn {

// DSSTNE's CalculateConvolutionDimensions.
uint32_t conv_output_extent(uint32_t in, uint32_t kernel, uint32_t stride);

// Number of spatial axes of a Convolutional or Max/Average Pooling layer (its
// kernel_dimensions, clamped to 1..3).
uint32_t spatial_axes(const LayerSpec& layer);

// Product of n[from..3] (channels of a layer or source seen with `from` spatial axes).
uint32_t trailing_channels(const LayerSpec& layer, uint32_t from);

// Kernel shape for `layer` (Convolutional or Max/Average Pooling) reading `source`, both with
// their final dimensions (model/layer_dimensions.h). For pooling, out_channels = in_channels.
ConvGeometry layer_geometry(const LayerSpec& layer, const LayerSpec& source);

// LRN shape of a layer: channels = its last dimension, plane = the product of the others.
LrnParams lrn_shape(const LayerSpec& layer);

}  // namespace nn
