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

  // Creates the connection for `source` (call in source order) and allocates its parameters.
  Connection& connect(Backend& backend, Layer* source);
  std::vector<std::unique_ptr<Connection>>& connections() { return connections_; }
  const std::vector<std::unique_ptr<Connection>>& connections() const { return connections_; }

  void forward(const LayerContext& ctx) override;
  void backward(const LayerContext& ctx) override;
  std::vector<Parameter*> parameters() override;

 private:
  std::vector<std::unique_ptr<Connection>> connections_;
};

}  // namespace nn
