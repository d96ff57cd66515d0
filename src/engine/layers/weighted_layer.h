// Base of the layers with one weight (matrix or filter bank) and one bias per source: fully
// connected and convolutional layers. Everything they share lives here once: the connections and
// their SharedWeights links (resolution, gradient zeroing, file form), initialisation, batch
// normalisation, and the way from the pre-activations z to the activations a (batch
// normalisation, skips, the activation function or MaxOut, dropout) and back. A derived layer
// creates its connections, computes z from its sources and the weight gradients from dE/dz, and
// answers a few questions through the hooks below.
//
// MaxOut (Activation MaxOut, k = the layer's Maxout.k): the weights produce pre_units() =
// units() x k values per example, laid out as [units() / inner][k][inner] where inner =
// maxout_inner(): 1 for fully connected layers (unit j's pieces are z columns j*k .. j*k+k-1), the
// output plane for convolutions (channel c's pieces are channels c*k .. c*k+k-1). Each output is
// the largest of its pieces; batch normalisation runs over the pieces, skips are added after the
// max, dropout after that.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "layers/batch_norm.h"
#include "layers/layer.h"

namespace nn {

// What every connection has: its source, weights and bias, and its SharedWeights link.
struct WeightConnection {
  Layer* source = nullptr;
  Parameter weights;  // empty when the weights are shared
  Parameter bias;     // one per output (piece)
  // SharedWeights: the weights are `shared`'s (an unshared connection of a layer of the same
  // type). Transposed (fully connected layers only): that matrix is used as its transpose.
  WeightConnection* shared = nullptr;
  bool transposed = false;
  std::string shared_input, shared_output;  // the shared weight's layers (for files)
  // On an unshared connection: how many connections use its weights (itself included). With
  // more than one, every use adds its gradient into weights.grad, zeroed before backward.
  uint32_t users = 1;

  Parameter& used_weights() { return shared ? shared->weights : weights; }
  const Parameter& used_weights() const { return shared ? shared->weights : weights; }
  uint32_t used_weights_users() const { return shared ? shared->users : users; }
};

// C is the layer's connection type, derived from WeightConnection.
template <class C>
class WeightedLayer : public Layer {
 public:
  using Layer::Layer;

  void initialize(uint64_t seed) override;
  void save(NetworkFile& file) const override;
  void load(const NetworkFile& file, size_t& cursor) override;
  void allocate(Backend& backend, uint32_t max_rows) override;
  std::vector<Parameter*> parameters() override;
  std::vector<DeviceArray<float>*> inference_arrays() override;  // + batch norm statistics

  std::vector<std::unique_ptr<C>>& connections() { return connections_; }
  const std::vector<std::unique_ptr<C>>& connections() const { return connections_; }
  // The connection from the layer named `source`, or null.
  C* connection_from(const std::string& source);
  // Points this layer's SharedWeights connections at the weights they share. Called by the
  // Network once every layer is built; `find` looks a layer up by name. Throws ConfigError
  // (prefixed with `where`, naming the entry) when the shared weight is missing, of another
  // layer type, itself shared, or of the wrong shape.
  void resolve_shared_weights(const std::function<Layer*(const std::string&)>& find,
                              const std::string& where);
  // Zeroes the gradients of weights used by several connections (they accumulate); the Network
  // calls this on every layer before a backward pass.
  void zero_shared_gradients(Backend& backend);

  BatchNorm* batch_norm() { return bn_.get(); }
  // The activation is finish_forward()'s last step unless the layer is MaxOut (maxout_forward)
  // or split over processes (its own forward), or dropout follows it (hidden layers only).
  bool ends_with_activate() const override {
    return !maxout() && !sharded() && !(kind() == LayerKind::Hidden && spec_.p_dropout > 0.0f);
  }
  // Width of z (what the weights produce): units() x pieces_per_unit().
  uint32_t pre_units() const;
  // Row length of z and dE/dz, of the matrices and of the biases of an unsplit layer:
  // pre_units(), or the padded stride (only whole fully connected layers are padded).
  uint32_t z_width() const { return padded() ? stride() : pre_units(); }

 protected:
  // ---- hooks ---------------------------------------------------------------------------------
  // What a connection's weights are called in messages: "matrix" or "filters".
  virtual const char* weights_noun() const = 0;
  // Fan-in and fan-out of c's initial weights (WeightInit).
  virtual std::pair<size_t, size_t> weight_fans(const C& c) const = 0;
  // c's weight in the network file: {width, height, length, depth, breadth}.
  virtual std::array<uint64_t, 5> file_shape(const C& c) const = 0;
  // Throws DataError when `wa`, stored for c, has a shape the common checks would not catch.
  virtual void check_file_shape(const C& c, const WeightArrays& wa) const {}
  // Throws ConfigError (prefixed with `entry`) for a SharedWeights entry this layer type cannot
  // take whatever it names; checked before the shared weight is looked up.
  virtual void check_shared_entry(const std::string& entry, const SharedWeightSpec& s) const {}
  // Why `owner` (the layer named by SourceOutputLayer, null when there is none) cannot own
  // weights this layer shares; it is not a layer of this type.
  virtual std::string foreign_owner(const Layer* owner, const SharedWeightSpec& s) const = 0;
  // Throws ConfigError (prefixed with `entry`) when c cannot use oc's weights (oc is a
  // connection of `owner`, unshared).
  virtual void check_shared_shape(const std::string& entry, const SharedWeightSpec& s, const C& c,
                                  const C& oc, const WeightedLayer& owner) const = 0;
  // The MaxOut pieces' stride in z (see above).
  virtual uint32_t maxout_inner() const { return 1; }
  // Values of z per unit: Maxout.k for MaxOut layers, else 1 (a Variational layer: 2, a mean
  // and a log-variance).
  virtual uint32_t pieces_per_unit() const;

  // ---- for the derived layer -----------------------------------------------------------------
  // First thing in build(): keeps the backend, checks Maxout.k.
  void start_build(Backend& backend);
  // Adds `c` (source set) with parameters named after the layer and source: a bias of
  // bias_size and, unless SharedWeights names the source (resolve_shared_weights() supplies
  // them), weights of weight_size with the WeightNorm constraint over norm_rows rows (see
  // layers/parameter.h).
  C& add_connection(std::unique_ptr<C> c, size_t weight_size, size_t bias_size, uint32_t norm_rows,
                    bool norm_over_rows);

  bool maxout() const { return spec_.activation == Activation::MaxOut; }
  // Where forward() puts z ([rows][pre_units()]) before calling finish_forward().
  float* z_buffer() { return (bn_ || maxout()) ? z_.data() : a_.data(); }
  // z -> a: batch normalisation, skips, activation or MaxOut, dropout.
  void finish_forward(const LayerContext& ctx, float* z);
  // The reverse, up to dE/dz (returned, [rows][pre_units()]) for the weight gradients.
  float* start_backward(const LayerContext& ctx);
  // Last thing in backward(): skips added before the activation receive dE/dz.
  void finish_backward(const LayerContext& ctx, const float* dz);

  std::vector<std::unique_ptr<C>> connections_;
  Backend* backend_ = nullptr;
  std::unique_ptr<BatchNorm> bn_;
  bool bn_trained_ = false;  // the last forward normalised with batch statistics

 private:
  void load_shared(const WeightArrays& wa, C& c);

  DeviceArray<float> z_;  // z, when batch normalised (kept for backward) or MaxOut
  // MaxOut only: normalised z (with batch norm), dE/dz, and each output's winning piece.
  DeviceArray<float> z_norm_, z_delta_;
  DeviceArray<uint32_t> winner_;
};

// Host-side initial weights for a [n_in][n_out] matrix per the layer's WeightInit (DSSTNE's
// schemes, NNWeight::Randomize in NNWeight.cpp), columns [col_first, col_first + col_count) of
// it (all by default): weight (i, j) is drawn from counter i * n_out + j of (seed, stream) alone,
// so a slice of the columns holds exactly what the whole matrix holds there. Shared by every
// layer type with weights.
std::vector<float> initial_weights(const LayerSpec& spec, size_t n_in, size_t n_out, uint64_t seed,
                                   uint64_t stream, size_t col_first = 0,
                                   size_t col_count = SIZE_MAX);
// The random stream of connection `connection` of layer `layer_index`'s initial weights.
inline uint64_t weight_stream(uint32_t layer_index, uint32_t connection) {
  return mix64(0x1417000000000000ull + uint64_t(layer_index) * 4096 + connection);
}
// Copies weights/biases/optimizer state of one WeightArrays into a connection's parameters,
// checking names and sizes (DataError naming the weight).
void load_connection(Backend& backend, const WeightArrays& wa, const std::string& input,
                     const std::string& output, Parameter& weights, Parameter& bias);
// The reverse: parameters to WeightArrays (width = outputs, height = inputs).
// `borrow`: where the weights live in host memory, point at them (WeightArrays::weights_run and
// weight_state_runs) instead of copying them.
WeightArrays save_connection(const std::string& input, const std::string& output, uint64_t n_out,
                             uint64_t n_in, float norm, const Parameter& weights,
                             const Parameter& bias, bool borrow = false);

}  // namespace nn
