// The loss part of one training/evaluation step, shared by the trainer, the validation and the
// gradient checks: the output losses (and their deltas) against the batch's targets. Putting a
// batch into the input layers is model/batch_inputs.h.
#pragma once

#include <memory>
#include <vector>

#include "backend/kernel_params.h"
#include "core/profiler.h"
#include "model/batch_inputs.h"
#include "model/batch_loader.h"
#include "model/network.h"
#include "train/target_buffer.h"

namespace nn {

// Columns [first, first + count) of a sparse batch, re-based to 0, and every row's target sum
// over all its columns (duplicates merged as the loss merges them: values add, Boolean entries
// count once): a model-parallel output layer's targets.
void slice_sparse_columns(const SparseBatch& in, uint32_t first, uint32_t count, SparseBatch& out,
                          std::vector<float>& row_sum);

class OutputLosses {
 public:
  // Checks every output layer's ErrorFunction/activation/target pairing (ConfigError if bad).
  OutputLosses(Network& net, const BoundData& data);
  // Sum over the batch and all output layers of the per-example error. With `write_deltas`,
  // each output layer's delta buffer receives dE/dz. Call after a forward pass.
  // Model-parallel output layers hold every row of the global minibatch for their columns:
  // their targets come from `whole` (the global minibatch; required when there are such
  // layers), matched to the slice by global column, and their part of the error is this
  // rank's columns only (the ranks' errors add up to the whole).
  double evaluate(const HostBatch& batch, bool write_deltas, const HostBatch* whole = nullptr);
  // The same sum added into *sum, a double in the backend's memory (Backend::loss_accumulate),
  // without reading it back: the training loop reads its sums once per reporting interval.
  // `activations_deferred`: the forward pass ran with LayerContext::defer_output_activation, so
  // the output layers with Layer::activation_deferrable() hold z; their loss applies the
  // activation first, in one operation (Backend::activate_loss_accumulate).
  // `profiler` (optional) times the targets' upload and each layer's loss.
  void accumulate(const HostBatch& batch, bool write_deltas, const HostBatch* whole, double* sum,
                  bool activations_deferred = false, Profiler* profiler = nullptr);
  // Uploads the batch's targets of every output layer not split over the ranks into buffer set
  // `set` (TargetBuffer), ahead of the step: the training loop does it beside the stream
  // (Backend::begin_side_uploads). The next evaluate() or accumulate() of this same batch object
  // uses them (any other call drops them).
  void load_targets(const HostBatch& batch, unsigned set);
  // Leaves output `o` out of both sums (a sampled output layer computes its own loss:
  // train/sampled_output.h).
  void skip_output(size_t o) { skipped_.at(o) = true; }

 private:
  // Loads output o's targets for this batch; rows and cols: the part of the layer its loss covers.
  TargetView targets(size_t o, const HostBatch& batch, const HostBatch* whole, uint32_t& rows,
                     uint32_t& cols);
  Network& net_;
  BoundData data_;
  std::vector<LossParams> params_;
  std::vector<std::unique_ptr<TargetBuffer>> targets_;
  SparseBatch slice_;  // staging for a model-parallel layer's columns
  std::vector<float> dense_slice_, row_sum_;
  std::vector<bool> skipped_;
  // Output o's targets of `batch` (an output not split over the ranks) into buffer set `set`.
  TargetView load_own(size_t o, const HostBatch& batch, unsigned set);
  struct Loaded {  // load_targets' view of an output, until the loss of that batch uses it
    const HostBatch* batch = nullptr;  // null: none loaded
    TargetView view;
  };
  std::vector<Loaded> loaded_;
};

}  // namespace nn
