// Fully connected layer: z = sum over sources (x_s W_s + b_s) + sum of skip activations,
// optional batch normalisation of z, a = f(z), dropout in training (hidden layers). Sparse
// sources are multiplied straight from their indices (forward and weight gradient), never
// densified. One weight matrix W[in][out] and one bias per source, as in DSSTNE; a connection
// may instead use another connection's matrix (SharedWeights, optionally transposed).
//
// Layer features handled here: SharedWeights, WeightNorm (a max-norm constraint on the
// parameter, applied by the optimizer), DeltaNorm and BatchNormalization (layers/batch_norm.h); the
// sparseness penalty is the Layer base's (layers/layer.h).
//
// Activation MaxOut: the layer computes k = Maxout.k pre-activations per unit (weights, biases
// and batch normalisation are k times wider: unit j's pieces are z columns j*k .. j*k+k-1) and
// a_j is the largest of them. Skip activations are added after the max, which is the same as
// adding them to every piece when there is no batch normalisation.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "layers/batch_norm.h"
#include "layers/layer.h"

namespace nn {

struct Connection {
  Layer* source = nullptr;
  Parameter weights;  // [source units][units]; empty when the matrix is shared
  Parameter bias;     // [units]
  // SharedWeights: the matrix is `shared`'s (an unshared connection of some fully connected
  // layer). Transposed: that matrix is [units][source units] and is used as its transpose.
  Connection* shared = nullptr;
  bool transposed = false;
  std::string shared_input, shared_output;  // the shared weight's layers (for files)
  // On an unshared connection: how many connections use its matrix (itself included). With
  // more than one, every use adds its gradient into weights.grad, zeroed before backward.
  uint32_t users = 1;

  Parameter& matrix() { return shared ? shared->weights : weights; }
  const Parameter& matrix() const { return shared ? shared->weights : weights; }
  uint32_t matrix_users() const { return shared ? shared->users : users; }
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

  void allocate(Backend& backend, uint32_t max_rows) override;
  void forward(const LayerContext& ctx) override;
  void backward(const LayerContext& ctx) override;
  std::vector<Parameter*> parameters() override;

  // The connection from the layer named `source`, or null.
  Connection* connection_from(const std::string& source);
  // Points this layer's SharedWeights connections at the matrices they share. Called by the
  // Network once every layer is built; `find` looks a layer up by name. Throws ConfigError
  // (prefixed with `where`) naming the layers when a shared weight is missing, not fully
  // connected, itself shared, or of the wrong shape.
  void resolve_shared_weights(const std::function<Layer*(const std::string&)>& find,
                              const std::string& where);
  // Zeroes the gradients of matrices used by several connections (they accumulate); the
  // Network calls this on every layer before a backward pass.
  void zero_shared_gradients(Backend& backend);

  BatchNorm* batch_norm() { return bn_.get(); }
  // Width of z (what the weights produce): units() x Maxout.k for MaxOut layers, else units().
  uint32_t pre_units() const;

 private:
  Connection& connect(Backend& backend, Layer* source);
  void load_shared(const WeightArrays& wa, Connection& c);
  std::vector<std::unique_ptr<Connection>> connections_;
  Backend* backend_ = nullptr;
  std::unique_ptr<BatchNorm> bn_;
  bool maxout() const { return spec_.activation == Activation::MaxOut; }
  DeviceArray<float> z_;  // z, when batch normalised (kept for backward) or MaxOut
  // MaxOut only: normalised z (with batch norm), dE/dz, and each unit's winning piece.
  DeviceArray<float> z_norm_, z_delta_;
  DeviceArray<uint32_t> winner_;
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
