// Convolutional layer: z = sum over sources (conv(x_s, W_s) + b_s) + sum of skip activations,
// optional batch normalisation of z (spatial mode: one mean/variance per output channel),
// a = f(z), dropout in training (hidden layers), as DSSTNE's ForwardPropagateConvolutional.
// One filter bank and one bias per source, like fully connected layers.
//
// Shapes (config/layer_shapes.h, layers/conv_geometry.h): the layer's N is [x, y, (z,) channels]
// after config/layer_shapes.h; each source is read as planes of its first kernel_dimensions axes
// times channels. Sources must be dense (a sparse input would be densified; use a fully
// connected layer first).
//
// Weights are stored in DSSTNE's conv layout: [out channels][in channels][kz][ky][kx] (cuDNN's
// NCHW filter order) with WeightArrays width = out channels, height = in channels, and length,
// depth, breadth = the kernel extents from the outermost axis in: (kx) for 1-D kernels, (ky, kx)
// for 2-D, (kz, ky, kx) for 3-D; the rest 1. Biases: one per output channel.
//
// Layer features: WeightNorm caps every filter (the in channels x kernel volume weights feeding
// one output channel, a ROW of the bank) after each update; SharedWeights lets a connection use
// another convolution's filter bank when both read the same channels with the same kernel and
// stride (never transposed); DeltaNorm, BatchNormalization and the sparseness penalty (Layer)
// work as on fully connected layers (the common part is layers/weighted_layer.h).
//
// Activation MaxOut (channel maxout): with C output channels (the layer's N) and k = Maxout.k the
// filters compute C x k channels; output channel c at each position is the largest of channels
// c*k .. c*k+k-1 there. Filter banks, biases and batch normalisation are k times wider in
// channels (the geometry's out_channels and the stored width are C x k); skips are added after
// the max.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/weighted_layer.h"

namespace nn {

// weights: [out channels][in channels][kernel volume]; bias: [out channels], where out
// channels = geometry.out_channels (C x Maxout.k for MaxOut layers).
struct ConvConnection : WeightConnection {
  ConvGeometry geometry;

  Parameter& filters() { return used_weights(); }
  const Parameter& filters() const { return used_weights(); }
  uint32_t filter_users() const { return used_weights_users(); }
};

class ConvolutionalLayer : public WeightedLayer<ConvConnection> {
 public:
  ConvolutionalLayer(const LayerSpec& spec, uint32_t index);

  void build(Backend& backend) override;
  void allocate(Backend& backend, uint32_t max_rows) override;
  void forward(const LayerContext& ctx) override;
  void backward(const LayerContext& ctx) override;

 protected:
  const char* weights_noun() const override { return "filters"; }
  std::pair<size_t, size_t> weight_fans(const ConvConnection& c) const override;
  std::array<uint64_t, 5> file_shape(const ConvConnection& c) const override;
  void check_file_shape(const ConvConnection& c, const WeightArrays& wa) const override;
  void check_shared_entry(const std::string& entry, const SharedWeightSpec& s) const override;
  std::string foreign_owner(const Layer* owner, const SharedWeightSpec& s) const override;
  void check_shared_shape(const std::string& entry, const SharedWeightSpec& s,
                          const ConvConnection& c, const ConvConnection& oc,
                          const WeightedLayer& owner) const override;
  // MaxOut pieces are whole output planes.
  uint32_t maxout_inner() const override { return out_plane_; }

 private:
  // Filter gradient of one use of a bank with several users, before it is added to the bank's.
  DeviceArray<float> shared_grad_;
  uint32_t out_plane_ = 1;  // positions per output channel
};

extern template class WeightedLayer<ConvConnection>;

// WeightArrays dimensions of a convolution weight (see above): {width, height, length, depth,
// breadth}.
std::array<uint64_t, 5> conv_weight_dims(const ConvGeometry& g);

}  // namespace nn
