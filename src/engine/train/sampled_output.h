// Sampled output training (the Output layer key "Sampling", docs/wide-outputs.md): a training
// step computes only some columns of a wide fully connected output layer. For a minibatch with
// targets P (every column some row targets) and drawn negatives D (accidental hits removed,
// train/negative_sampler.h), S = P then D, and with h the source's activations:
//   z = h W[:, S] + b[S] (+ -log pi_j on the columns of D for SoftMax: the log-Q correction),
//   the layer's loss on z against the targets moved to their places in S, dE/dz = delta,
//   Sigmoid: delta of a column j of D multiplied by 1 / pi_j (Horvitz-Thompson: the sampled
//   negatives' terms estimate the sum over every column outside P without bias),
//   gradients dW[:, S] = h^T delta / rows, db[S] = column sums / rows, dE/dh += delta W[:, S]^T,
//   and the optimizer updates the columns of S only (Optimizer::update_rows: lazy updates).
// While it trains, the layer holds W and its optimizer state transposed ([units][inputs]), so
// that each column of S is one contiguous row: gathering W[:, S] and updating it in place touch
// |S| rows instead of a cache line of every input's row per column (with 5% of a 200,000-unit
// layer sampled, that was more than half of the matrix and its state every step). The network's
// [inputs][units] layout is restored (restore_weights) before anything else reads them.
//   Sigmoid with an adaptive optimizer (AdaGrad, RMSProp, AdaDelta, Adam), which divides each
//   weight's gradient by its own running size and so divides the 1 / pi weight away: the update
//   of a column of D is multiplied by min(1 / pi_j, kMaxStepWeight) instead (step weights: the
//   column moves in the steps that draw it about as far as the full layer moves it in all).
// pi_j is the probability that column j is in D. The full layer's activations are never formed
// in training (the layer has no buffers then); validation and prediction use the full layer.
// A model-parallel (split) layer: every rank computes the same S from the whole minibatch's
// targets and the same draws, and computes the columns of S in its slice for every row of the
// global minibatch (the source's rows gathered); SoftMax normalises over the ranks (row maxima
// and sums all-reduced), dE/dh is summed back onto the ranks' rows, and each rank updates its
// own columns (no gradient reduction: it holds them alone).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/device_array.h"
#include "distributed/communicator.h"
#include "layers/fully_connected_layer.h"
#include "model/batch_loader.h"
#include "model/network.h"
#include "train/negative_sampler.h"
#include "train/optimizer.h"
#include "train/target_buffer.h"

namespace nn {

class SampledOutput {
 public:
  // The largest step weight (see above): larger weights made single steps unstable (measured
  // on the MovieLens sample, docs/wide-outputs.md).
  static constexpr double kMaxStepWeight = 5.0;

  // The sampled output layer of `data` (null when no output layer has Sampling). Throws
  // ConfigError when more than one has it, or when the one that has it cannot be sampled: not
  // a fully connected layer with one dense source and its own weights, with a SoftMax or
  // Sigmoid activation and CrossEntropy, no batch normalisation or skips, sparse targets. With
  // `comm` of several ranks (data parallelism) the ranks agree on the columns (the union of
  // their targets, the same draws) and sum their compact gradients (weighted by rows, as the
  // other gradients) through `comm`, a host communicator. A split layer uses its shard's
  // communicator instead (see above).
  static std::unique_ptr<SampledOutput> create(Network& net, const BoundData& data, uint64_t seed,
                                               Communicator* comm);
  ~SampledOutput();
  SampledOutput(const SampledOutput&) = delete;
  SampledOutput& operator=(const SampledOutput&) = delete;

  FullyConnectedLayer& layer() { return layer_; }
  size_t output() const { return output_; }  // its place in data.outputs

  // After the forward pass of every other layer: the columns of this step (`ctx.step`), z on
  // them, the loss added into *sum (backend memory) and dE/dz kept for backward(). `whole`: the
  // global minibatch, required when the layer is split (its rows are every rank's).
  void forward_loss(const LayerContext& ctx, const HostBatch& batch, const HostBatch* whole,
                    double* sum);
  // The layer's backward pass (Network::backward's `instead`): the compact gradients and the
  // source's dE/da. With several ranks forward_loss() and update() are collective: every rank
  // calls them for every step, with or without rows.
  void backward(const LayerContext& ctx);
  // True for the layer's weights and bias, which update() updates instead of the optimizer's
  // update of every parameter.
  bool owns(const Parameter* p) const;
  void update(Optimizer& optimizer, uint64_t step, float alpha);

  // Puts W and its optimizer state back into the network's [inputs][units] layout (a no-op when
  // they are in it). The training loop calls it before validation, checkpoints, callbacks and
  // at the end of a run: only the sampled steps read the transposed layout. The next step
  // transposes them again.
  void restore_weights();

  // One line for the training log: the layer, the negatives and their distribution.
  std::string describe() const;
  // The last step's columns (for tests and logs).
  const SampledColumns& columns() const { return cols_; }
  // The mean number of columns of this object's steps so far (0 before the first): the width
  // of the layer the steps computed, for the profile's floors.
  double mean_columns() const { return steps_ ? double(columns_sum_) / double(steps_) : 0.0; }
  // The last step's compact gradients: [columns][source units] and [columns].
  std::vector<float> weight_gradient() const { return grad_w_.to_host(); }
  std::vector<float> bias_gradient() const { return grad_b_.to_host(); }

 private:
  SampledOutput(Network& net, const BoundData& data, size_t output, uint64_t seed,
                Communicator* comm);
  // The columns of every rank's targets (this rank's alone with one process).
  std::vector<uint32_t> positives(const SparseBatch& targets);
  // Data parallel: the compact gradients weighted by rows / global rows, summed over the ranks.
  void reduce_gradients();
  // A split layer's forward_loss: this rank's columns of S for every row of `whole`.
  void forward_split(const LayerContext& ctx, const HostBatch& whole, double* sum);
  // True when update() weights the steps of the drawn columns (Sigmoid, adaptive optimizer).
  bool weights_steps(const Optimizer& optimizer) const;
  // The optimizer's update of p's columns index_ as rows (the bias: `width` 1; the transposed
  // weights: `width` inputs), each column's change from `before` (their values
  // before the update, compact) multiplied by step_weight_.
  void weighted_update(Optimizer& optimizer, Parameter& p, uint32_t width, const float* before,
                       const float* grad, uint64_t step, float alpha);
  // W and its optimizer state into the transposed training layout, if they are not in it.
  void transpose_weights(Backend& be);
  // a ([rows][cols]) replaced by its transpose, through scratch_ (released after).
  void transpose_in_place(Backend& be, DeviceArray<float>& a, uint32_t rows, uint32_t cols);
  // index_, w_ = W[:, columns] ([columns][inputs]), b_ = b[columns] (+ the log-Q correction of the
  // columns whose inclusion is below 1, for SoftMax; correction_ holds 1 / inclusion for Sigmoid),
  // the step weights, and the z_/delta_ buffers for rows_ rows.
  void prepare_columns(Backend& be, const std::vector<uint32_t>& columns,
                       const std::vector<double>& inclusion);
  // z [rows_][m] = b_ + x_ w_^T (b_ holding the log-Q correction for SoftMax), then the activation
  // and the loss into delta_ (for a split SoftMax, normalised over the ranks).
  void compute_loss(Backend& be, const TargetView& tv, double* sum);

  Network& net_;
  FullyConnectedLayer& layer_;
  Connection& connection_;
  size_t output_, slot_;
  uint64_t seed_;
  Communicator* comm_;  // null or one rank: one process
  LossParams loss_;
  bool softmax_;
  uint32_t negatives_;
  NegativeSampler sampler_;
  SampledColumns cols_;
  uint32_t rows_ = 0, global_rows_ = 0;
  bool have_gradients_ = false;  // backward() ran for this step's rows
  bool split_;                   // the layer is model parallel: rows_ are the global rows
  const float* x_ = nullptr;     // the source's activations of rows_ rows (this step)
  std::vector<float> row_sum_;   // split: every row's target sum over the whole layer
  SparseBatch compact_targets_;
  TargetBuffer targets_;
  DeviceArray<uint32_t> index_;
  DeviceArray<float> w_, b_, correction_, z_, delta_, grad_w_, grad_b_, dx_;
  std::vector<float> step_weight_host_;     // per column: 1, or min(1 / pi, kMaxStepWeight)
  DeviceArray<float> step_weight_, after_;  // weighted_update()'s buffers
  bool transposed_ = false;                 // W and its state are in the training layout
  uint64_t columns_sum_ = 0, steps_ = 0;    // mean_columns()'s
  DeviceArray<float> scratch_;              // transpose_in_place()'s (empty between calls)
};

}  // namespace nn
