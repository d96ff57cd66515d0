// Convolutional layer: z = sum over sources (conv(x_s, W_s) + b_s) + sum of skip activations,
// optional batch normalisation of z (spatial mode: one mean/variance per output channel),
// a = f(z), dropout in training (hidden layers), as DSSTNE's ForwardPropagateConvolutional.
// One filter bank and one bias per source, like fully connected layers.
//
// Shapes (layers/conv_geometry.h): the layer's N is [x, y, (z,) channels] after
// model/layer_dimensions.h; each source is read as planes of its first kernel_dimensions axes
// times channels. Sources must be dense (a sparse input would be densified; use a fully
// connected layer first).
//
// Weights are stored in DSSTNE's conv layout: [out channels][in channels][kz][ky][kx] (cuDNN's
// NCHW filter order) with WeightArrays width = out channels, height = in channels, and length,
// depth, breadth = the kernel extents from the outermost axis in: (kx) for 1-D kernels, (ky, kx)
// for 2-D, (kz, ky, kx) for 3-D; the rest 1. Biases: one per output channel.
#pragma once

#include <memory>
#include <vector>

#include "layers/batch_norm.h"
#include "layers/layer.h"

namespace nn {

struct ConvConnection {
  Layer* source = nullptr;
  ConvGeometry geometry;
  Parameter weights;  // [out channels][in channels][kernel volume]
  Parameter bias;     // [out channels]
};

class ConvolutionalLayer : public Layer {
 public:
  ConvolutionalLayer(const LayerSpec& spec, uint32_t index);

  void build(Backend& backend) override;
  void initialize(Rng& rng) override;
  void save(NetworkFile& file) const override;
  void load(const NetworkFile& file, size_t& cursor) override;
  void allocate(Backend& backend, uint32_t max_rows) override;

  void forward(const LayerContext& ctx) override;
  void backward(const LayerContext& ctx) override;
  std::vector<Parameter*> parameters() override;

  const std::vector<std::unique_ptr<ConvConnection>>& connections() const { return connections_; }
  BatchNorm* batch_norm() { return bn_.get(); }

 private:
  std::vector<std::unique_ptr<ConvConnection>> connections_;
  Backend* backend_ = nullptr;
  std::unique_ptr<BatchNorm> bn_;
  DeviceArray<float> z_;     // pre-normalisation z when batch normalised (kept for backward)
  bool bn_trained_ = false;  // the last forward normalised with batch statistics
};

// WeightArrays dimensions of a convolution weight (see above): {width, height, length, depth,
// breadth}.
std::array<uint64_t, 5> conv_weight_dims(const ConvGeometry& g);

}  // namespace nn
