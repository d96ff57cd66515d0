// The shape rules of Convolutional and Pooling layers, in one place, following DSSTNE
// (NNNetwork::CalculateDerivedLayerDimensions):
//
//  * A layer's kernel has kernel_dimensions (1-3) spatial axes: x, y, z in that order. For a
//    layer or source N = [Nx, Ny, Nz, Nw], the first kernel_dimensions entries are spatial and
//    the rest (their product) are channels, e.g. a 2-D kernel over a 28x28x3 image: planes of
//    28x28, 3 channels.
//  * Output extent along a spatial axis: 1 when in <= kernel, in when the stride is 1, else
//    (in - kernel) / stride + 1 (so stride-1 layers keep their size, even for even kernels).
//  * Padding (kernel_padding below): (kernel - in + 1) / 2 when in < kernel, kernel / 2
//    when the stride is 1, else 0.
//  * Convolution output channels = the layer's N after the spatial axes (DSSTNE: "N in the next
//    free dimension"); pooling keeps its source's channels; LRN normalises across the channels
//    of a layer, i.e. its last dimension.
//
// derive_layer_dimensions fills in every derived size of a spec before the layers are built
// (Network's constructor calls it; it runs on a spec whose input sizes are known, "auto"
// resolved); kernel_padding gives the padding that network files store. What it derives for
// hidden layers:
//  * Convolutional: spatial extents from the rule, channels from N. N is either the channel
//    count (an integer, as DSSTNE's configs write it) or the full derived size (what our network
//    files and JSON written back contain: kernel dimensions + 1 values), which must then match.
//  * Max/Average pooling: spatial extents from the rule, other dimensions from the source.
//  * LRN pooling: the source's size.
//  * Maxout pooling: the source's size with its last dimension (the channels) divided by the
//    network's Maxout.k, which must divide it.
//  * DotProduct / Cosine pooling: Nx = sources - 1 (one score per source after the first), from
//    at least 2 sources with the same number of units.
// Output layers keep the N they were given (DSSTNE does not derive them); it must match the
// derived spatial extents (and, for pooling, channels). Every source of a layer must give the
// same size. Idempotent, so specs read back from files pass through unchanged.
#pragma once

#include <array>
#include <cstdint>

#include "config/network_spec.h"

namespace nn {

// DSSTNE's CalculateConvolutionDimensions.
uint32_t conv_output_extent(uint32_t in, uint32_t kernel, uint32_t stride);

// Number of spatial axes of a Convolutional or Max/Average Pooling layer (its
// kernel_dimensions, clamped to 1..3).
uint32_t spatial_axes(const LayerSpec& layer);

// Product of n[from..3] (channels of a layer or source seen with `from` spatial axes).
uint32_t trailing_channels(const LayerSpec& layer, uint32_t from);

// How Maxout pooling reads a source: [rows][in_channels][plane], channels = the source's last
// dimension, plane = the product of the others; k input channels per output channel.
struct MaxoutShape {
  uint32_t in_channels = 1;
  uint64_t plane = 1;
  uint32_t k = 1;
  uint32_t out_channels() const { return in_channels / k; }
};
MaxoutShape maxout_shape(const LayerSpec& source, int k);

// LayerSpec does not store padding because it follows from the kernel, the stride and the
// source sizes; network files still carry it (layer<i>_kernelPaddingX/Y/Z) because DSSTNE reads
// it back instead of recomputing it.
// Padding {x, y, z} for `layer` within `spec`. Per kernel dimension d (d < kernel_dimensions):
// (kernel - in + 1) / 2 when the source is smaller than the kernel, kernel / 2 when the stride is
// 1, otherwise 0. Fully connected layers and DotProduct pooling have no padding. Sources that are
// not in `spec` are ignored (validation reports them elsewhere).
std::array<uint32_t, 3> kernel_padding(const NetworkSpec& spec, const LayerSpec& layer);

// Fills in the sizes. Throws ConfigError("<spec.source>: layer '<name>': ...") for pooling
// functions that have no implementation (Stochastic, LCN, GlobalTemporal), sources of different
// sizes, too few sources, a Maxout.k that does not divide the channels, or an N that contradicts
// the derived size. Sources that do not exist are left for Network to report.
void derive_layer_dimensions(NetworkSpec& spec);

}  // namespace nn
