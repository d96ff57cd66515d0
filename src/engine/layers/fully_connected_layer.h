// Fully connected layer: z = sum over sources (x_s W_s + b_s) + sum of skip activations,
// a = f(z), dropout in training (hidden layers). Sparse sources are multiplied straight from
// their indices (forward and weight gradient), never densified. One weight matrix W[in][out]
// and one bias per source, as in DSSTNE.
#pragma once

#include <memory>
#include <vector>

#include "layers/layer.h"

namespace nn {

struct Connection {
  Layer* source = nullptr;
  Parameter weights;  // [source units][units]
  Parameter bias;     // [units]
};

class FullyConnectedLayer : public Layer {
 public:
  FullyConnectedLayer(const LayerSpec& spec, uint32_t index);

  void build(Backend& backend) override;
  void initialize(Rng& rng) override;
  void save(NetworkFile& file) const override;
  void load(const NetworkFile& file, size_t& cursor) override;
  std::vector<std::unique_ptr<Connection>>& connections() { return connections_; }
  const std::vector<std::unique_ptr<Connection>>& connections() const { return connections_; }

  void forward(const LayerContext& ctx) override;
  void backward(const LayerContext& ctx) override;
  std::vector<Parameter*> parameters() override;

 private:
  Connection& connect(Backend& backend, Layer* source);
  std::vector<std::unique_ptr<Connection>> connections_;
  Backend* backend_ = nullptr;
};

// Host-side initial weights for a [n_in][n_out] matrix per the layer's WeightInit
// (dsstne-reference.md §3.5). Shared by every layer type with weights.
std::vector<float> initial_weights(const LayerSpec& spec, size_t n_in, size_t n_out, Rng& rng);
// Copies weights/biases/optimizer state of one WeightArrays into a connection's parameters,
// checking names and sizes (DataError naming the weight).
void load_connection(Backend& backend, const WeightArrays& wa, const std::string& input,
                     const std::string& output, Parameter& weights, Parameter& bias);
// The reverse: parameters to WeightArrays (width = outputs, height = inputs).
WeightArrays save_connection(const std::string& input, const std::string& output, uint64_t n_out,
                             uint64_t n_in, float norm, const Parameter& weights,
                             const Parameter& bias);

}  // namespace nn
