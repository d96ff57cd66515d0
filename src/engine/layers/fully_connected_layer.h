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
//
// Model parallelism (set_shard before build; fully_connected_sharded.cpp): the layer holds
// output units [first, first + count) of every rank's share: weight columns, biases and their
// optimizer state. It computes every row of the global minibatch for those units: dense
// sources are all-gathered from the ranks' rows (input layers hold the whole batch already),
// and the partial dE/dx for a source is reduce-scattered back to the ranks' rows. A Hidden
// layer hands its activations to consumers in the ordinary per-rank layout ([rows][units]),
// exchanged by an all-to-all; an Output layer keeps [global rows][count] for the loss and for
// prediction. SoftMax is normalised over the whole layer (row max and sum all-reduced).
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
  // BF16 precision (Backend::set_precision), a dense source: the forward pass rounds the source's
  // activations to BF16 here, and the backward pass's weight gradient reuses them, as its dE/dx
  // product reuses the matrix's copy (Parameter::value_bf16); neither can change in between.
  // `bf16_current` says both copies are those of the last forward pass.
  DeviceArray<uint16_t> inputs_bf16;
  bool bf16_current = false;
};

class FullyConnectedLayer : public WeightedLayer<Connection> {
 public:
  FullyConnectedLayer(const LayerSpec& spec, uint32_t index);

  void build(Backend& backend) override;
  void forward(const LayerContext& ctx) override;
  void backward(const LayerContext& ctx) override;
  void allocate(Backend& backend, uint32_t max_rows) override;
  bool can_shard(std::string* why_not) const override;
  // A whole Output layer without MaxOut, batch normalisation, skips, SharedWeights or Sampling.
  bool can_pad_rows(std::string* why_not) const override;
  // Sharded layers gather their slices to rank 0 (collective over the shard's ranks: every
  // rank must call it; only rank 0's file is complete) and load their slice of a whole file.
  void save(NetworkFile& file) const override;
  void load(const NetworkFile& file, size_t& cursor) override;

  // ---- prediction in column blocks (predict/blocked_top_k.h) ----------------------------------
  // Why forward_columns() cannot compute this layer ("" when it can): only a whole (unsplit)
  // layer whose every unit is one column of dense products plus bias, then an elementwise
  // activation (no SoftMax, MaxOut, batch normalisation, skips or sparse sources) can be computed
  // a slice of columns at a time with the values forward() gives those columns.
  std::string column_forward_obstacle() const;
  // a = f(z) of units [first, first + count) for ctx.rows rows into out ([rows][count], backend
  // memory), the same operations forward() runs on those columns (bias, then each connection's
  // product over the column slice of its matrix, then the activation), so the values match it.
  // With padded rows the columns may run on into the padding, up to stride() (f(0) there).
  void forward_columns(const LayerContext& ctx, uint32_t first, uint32_t count, float* out);

  // ---- model parallelism, also used by a sampled split output (train/sampled_output.h) ------
  // The whole minibatch of dense source k ([global rows][source units]): every rank's rows,
  // gathered (an input layer holds them already). Collective over the shard's ranks.
  const float* gathered_input(size_t k, const LayerContext& ctx);
  // SoftMax of the rows of x [rows][cols] (this rank's columns of each row) over the columns of
  // every rank: row maxima and sums all-reduced. Collective.
  void sharded_softmax(Backend& be, float* x, uint32_t rows, uint32_t cols);
  // dx [global rows][source units]: this rank's part of dE/dx for source k; the ranks' parts
  // are summed onto each rank's rows and added to the source's delta. Collective.
  void add_source_delta(const LayerContext& ctx, size_t k, const float* dx);

 protected:
  const char* weights_noun() const override { return "matrix"; }
  std::pair<size_t, size_t> weight_fans(const Connection& c) const override;
  std::array<uint64_t, 5> file_shape(const Connection& c) const override;
  std::string foreign_owner(const Layer* owner, const SharedWeightSpec& s) const override;
  void check_shared_shape(const std::string& entry, const SharedWeightSpec& s, const Connection& c,
                          const Connection& oc, const WeightedLayer& owner) const override;

  // The products of an unsplit layer, for layers built on this one (layers/variational_layer.h):
  // z ([rows][pre_units()]) = the sum over connections of x W + b, and from dz = dE/dz the
  // weight and bias gradients (means over the rows) and each source's dE/dx (added to its delta).
  void compute_z(const LayerContext& ctx, float* z);
  void propagate(const LayerContext& ctx, const float* dz);

 private:
  // ---- model parallelism (fully_connected_sharded.cpp) ----------------------------------------
  void forward_sharded(const LayerContext& ctx);
  void backward_sharded(const LayerContext& ctx);
  // Row counts of every rank times `width` (counts for collectives over rows).
  std::vector<size_t> row_counts(const LayerContext& ctx, size_t width) const;
  // [global rows][count] (local) -> this rank's rows of every unit, and back.
  void local_to_rows(Backend& be, const LayerContext& ctx, const float* local, float* out);
  void rows_to_local(Backend& be, const LayerContext& ctx, const float* in, float* local);

  DeviceArray<uint16_t> delta_bf16_;  // BF16 products: the delta, rounded once (propagate)

  DeviceArray<float> a_local_, d_local_;    // Hidden: [global rows][count]
  std::vector<DeviceArray<float>> x_full_;  // per connection: gathered dense source
  DeviceArray<float> dx_full_, dx_rows_;    // dE/dx of every row, then of this rank's rows
  std::vector<float> host_a_, host_b_;      // staging for the exchanges
};

extern template class WeightedLayer<Connection>;

}  // namespace nn
