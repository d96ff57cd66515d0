// Fully connected layer: z = sum over sources (x_s W_s + b_s) + sum of skip activations,
// optional batch normalisation of z, a = f(z), dropout in training (hidden layers). Sparse
// sources are multiplied straight from their indices (forward and weight gradient), never
// densified. One weight matrix W[in][out] and one bias per source, as in DSSTNE; a connection
// may instead use another connection's matrix (SharedWeights, optionally transposed).
//
// Layer features: SharedWeights, WeightNorm (a max-norm constraint on the parameter, applied by
// the optimizer), DeltaNorm and BatchNormalization (layers/batch_norm.h); the sparseness penalty
// is the Layer base's (layers/layer.h). What this layer has in common with convolutions (sharing,
// file form, the way from z to a and back) is in layers/weighted_layer.h; here: the products.
//
// Activation MaxOut: the layer computes k = Maxout.k pre-activations per unit (weights, biases
// and batch normalisation are k times wider: unit j's pieces are z columns j*k .. j*k+k-1) and
// a_j is the largest of them. Skip activations are added after the max, which is the same as
// adding them to every piece when there is no batch normalisation.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/weighted_layer.h"

namespace nn {

// weights: [source units][pre_units()], or [pre_units()][source units] used transposed;
// bias: [pre_units()].
struct Connection : WeightConnection {
  Parameter& matrix() { return used_weights(); }
  const Parameter& matrix() const { return used_weights(); }
  uint32_t matrix_users() const { return used_weights_users(); }
};

class FullyConnectedLayer : public WeightedLayer<Connection> {
 public:
  FullyConnectedLayer(const LayerSpec& spec, uint32_t index);

  void build(Backend& backend) override;
  void forward(const LayerContext& ctx) override;
  void backward(const LayerContext& ctx) override;

 protected:
  const char* weights_noun() const override { return "matrix"; }
  std::pair<size_t, size_t> weight_fans(const Connection& c) const override;
  std::array<uint64_t, 5> file_shape(const Connection& c) const override;
  std::string foreign_owner(const Layer* owner, const SharedWeightSpec& s) const override;
  void check_shared_shape(const std::string& entry, const SharedWeightSpec& s, const Connection& c,
                          const Connection& oc, const WeightedLayer& owner) const override;
};

extern template class WeightedLayer<Connection>;

}  // namespace nn
