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
//
// Layer features: WeightNorm caps every filter (the in channels x kernel volume weights feeding
// one output channel, a ROW of the bank) after each update; SharedWeights lets a connection use
// another convolution's filter bank when both read the same channels with the same kernel and
// stride (never transposed); DeltaNorm, BatchNormalization and the sparseness penalty (Layer)
// work as on fully connected layers.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "layers/batch_norm.h"
#include "layers/layer.h"

namespace nn {

struct ConvConnection {
  Layer* source = nullptr;
  ConvGeometry geometry;
  Parameter weights;  // [out channels][in channels][kernel volume]; empty when shared
  Parameter bias;     // [out channels]
  // SharedWeights: the filter bank is `shared`'s (an unshared connection of some convolutional
  // layer with the same channels, kernel and stride).
  ConvConnection* shared = nullptr;
  std::string shared_input, shared_output;  // the shared weight's layers (for files)
  // On an unshared connection: how many connections use its bank (itself included). With more
  // than one, every use adds its gradient into weights.grad, zeroed before backward.
  uint32_t users = 1;

  Parameter& filters() { return shared ? shared->weights : weights; }
  const Parameter& filters() const { return shared ? shared->weights : weights; }
  uint32_t filter_users() const { return shared ? shared->users : users; }
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

  // The connection from the layer named `source`, or null.
  ConvConnection* connection_from(const std::string& source);
  // Points this layer's SharedWeights connections at the filter banks they share. Called by the
  // Network once every layer is built; `find` looks a layer up by name. Throws ConfigError
  // (prefixed with `where`, naming the entry) when the shared weight is missing, not a
  // convolution's, itself shared, transposed, or of another geometry.
  void resolve_shared_weights(const std::function<Layer*(const std::string&)>& find,
                              const std::string& where);
  // Zeroes the gradients of banks used by several connections (they accumulate); the Network
  // calls this before every backward pass.
  void zero_shared_gradients(Backend& backend);

 private:
  void load_shared(const WeightArrays& wa, ConvConnection& c);
  std::vector<std::unique_ptr<ConvConnection>> connections_;
  // Filter gradient of one use of a bank with several users, before it is added to the bank's.
  DeviceArray<float> shared_grad_;
  Backend* backend_ = nullptr;
  std::unique_ptr<BatchNorm> bn_;
  DeviceArray<float> z_;     // pre-normalisation z when batch normalised (kept for backward)
  bool bn_trained_ = false;  // the last forward normalised with batch statistics
};

// WeightArrays dimensions of a convolution weight (see above): {width, height, length, depth,
// breadth}.
std::array<uint64_t, 5> conv_weight_dims(const ConvGeometry& g);

}  // namespace nn
