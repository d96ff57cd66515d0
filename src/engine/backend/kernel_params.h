// Plain parameter blocks passed to backend kernels. Pointers are backend (device) pointers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "config/enums.h"

namespace nn {

struct ActivationParams {
  Activation kind = Activation::Sigmoid;
  float slope = 0.01f;       // LeakyRectifiedLinear
  float alpha = 1.0f;        // ExponentialLinear / ScaledExponentialLinear
  float lambda = 1.050701f;  // ScaledExponentialLinear
  float max_value = 1.0f;    // ReluMax (a in [0, max]) and LinearMax (a in [-max, max])
  // Padded rows (Backend::row_alignment): the rows of the [rows][cols] matrix an activation
  // runs over are row_stride floats apart; columns [cols, row_stride) are neither read nor
  // written. 0: row_stride = cols.
  uint32_t row_stride = 0;
};

// A CSR minibatch in backend memory. value == nullptr => every stored entry is 1.
// row_weight == nullptr => every example weight is 1.
struct SparseView {
  uint32_t rows = 0, cols = 0;
  const uint32_t* row_ptr = nullptr;  // rows + 1
  const uint32_t* index = nullptr;
  const float* value = nullptr;
  const float* row_weight = nullptr;
  uint64_t nnz = 0;
  // Row-sparse gradients (train/row_sparse.h), when the batch was indexed: the batch's distinct
  // indices, ascending (touched[0..touched_count)), and for each entry the position of its index
  // among them (slot[e]: touched[slot[e]] == index[e]). Null otherwise.
  const uint32_t* touched = nullptr;
  const uint32_t* slot = nullptr;
  uint32_t touched_count = 0;
  // With touched/slot: the entries grouped by slot, in entry order within a slot: slot t's
  // entries are slot_entry[slot_ptr[t] .. slot_ptr[t + 1]) (touched_count + 1 offsets), of rows
  // slot_row[...]. Found on the loader's thread, so that a view whose index is `slot` (the
  // compact row-sparse gradient's) arrives grouped by index: the CUDA weight gradient reads the
  // groups instead of sorting the entries on the device. Null when not computed.
  const uint32_t* slot_ptr = nullptr;
  const uint32_t* slot_entry = nullptr;
  const uint32_t* slot_row = nullptr;
  // Every row's indices are ascending (repeats allowed), as the host found them: a device
  // backend may take the entries as sorted by (row, index) without sorting them (targets).
  bool rows_sorted = false;

  // Points slot_ptr, slot_entry and slot_row into one array laid out as SparseBatch::slot_groups
  // (data/batch.h): touched_count + 1 offsets, then nnz entry numbers, then their nnz rows.
  void set_slot_groups(const uint32_t* groups) {
    slot_ptr = groups;
    slot_entry = groups + touched_count + 1;
    slot_row = slot_entry + nnz;
  }
};

// Per-row filters of Backend::top_k_filtered, in backend memory, each a CSR over the rows (a part
// whose row_ptr is null is absent). Columns within a row are ascending; a column at or past the
// valid columns is ignored.
struct TopKFilter {
  // Row r leaves out columns exclude_index[exclude_ptr[r] .. exclude_ptr[r + 1]) (duplicates
  // allowed).
  const uint32_t* exclude_ptr = nullptr;  // rows + 1
  const uint32_t* exclude_index = nullptr;
  // Row r's score at column scale_index[j] is multiplied by scale_value[j], for j in
  // [scale_ptr[r], scale_ptr[r + 1]) (a column listed twice is multiplied twice, in list order).
  const uint32_t* scale_ptr = nullptr;  // rows + 1
  const uint32_t* scale_index = nullptr;
  const float* scale_value = nullptr;
};

// Targets of an output layer: dense [rows][cols] or sparse with implicit zeros.
struct TargetView {
  bool sparse = false;
  const float* dense = nullptr;
  SparseView sp;
  bool ignore_zero = false;           // SparseIgnoreZero: only stored entries count
  const float* row_weight = nullptr;  // per-example weights (dense targets); nullptr => 1
  // SoftMax outputs split over processes (model parallelism) see only some columns of each
  // row. row_sum[r] (backend memory, one per row) is then the sum of row r's targets over the
  // whole layer: SoftMax CrossEntropy uses it for sum(t), and sparse targets are normalised by
  // it instead of by the sum of the columns at hand. nullptr: the columns are the whole row.
  const float* row_sum = nullptr;
};

struct LossParams {
  ErrorFunction function = ErrorFunction::CrossEntropy;
  ActivationParams activation;
  float smce_one_target = 0.9f, smce_zero_target = 0.1f;
  float smce_one_scale = 1.0f, smce_zero_scale = 1.0f;
  float delta_boost_one = 1.0f, delta_boost_zero = 1.0f;
  // SoftMax outputs with CrossEntropy / ScaledMarginalCrossEntropy: sparse targets are used as
  // stored instead of divided by their row sum (the network key SoftMaxTargets: Raw).
  bool raw_softmax_targets = false;
  // Padded rows: the activations (or z, fused) and deltas are [rows][row_stride] with the
  // layer's cols units in each row's first columns; the rest of a row is neither read nor
  // written (its delta stays what it was: 0 in a padded layer). Dense targets stay
  // [rows][cols]. 0: row_stride = cols.
  uint32_t row_stride = 0;
};

struct OptimizerParams {
  OptimizerKind kind = OptimizerKind::SGD;
  float alpha = 0.1f;    // learning rate for this step
  float lambda = 0.0f;   // L2 coefficient (0 for biases)
  float lambda1 = 0.0f;  // L1 coefficient (0 for biases)
  float mu = 0.9f;       // momentum / decay / Adam beta1
  float mu1 = 0.999f;    // Adam beta2
  uint64_t step = 1;     // 1-based update count (Adam bias correction)
};

// One parameter array of a multi-tensor optimizer step (Backend::optimizer_step_multi): its
// values, gradient and state arrays (as optimizer_step takes them), and whether the step's L2 and
// L1 decay apply (false for biases and other unregularized parameters). w_bf16, when set (n
// elements, backend memory), receives the updated values rounded to BF16 (math::float_to_bf16),
// written by the same pass: the BF16 copy a BF16 forward pass would otherwise convert.
struct OptimizerTensor {
  float* w = nullptr;
  const float* g = nullptr;
  float* state0 = nullptr;
  float* state1 = nullptr;
  size_t n = 0;
  bool regularize = true;
  uint16_t* w_bf16 = nullptr;
};

// Number of per-parameter state arrays an optimizer keeps (0, 1 or 2).
inline int optimizer_state_count(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::SGD:
      return 0;
    case OptimizerKind::Momentum:
    case OptimizerKind::Nesterov:
    case OptimizerKind::AdaGrad:
    case OptimizerKind::RMSProp:
      return 1;
    case OptimizerKind::AdaDelta:
    case OptimizerKind::Adam:
      return 2;
  }
  return 0;
}

// ---- layer features (normalisation) ---------------------------------------------------------
// Batch normalisation over activations laid out [rows][channels * spatial]: channel c of example
// r is the `spatial` contiguous values starting at (r * channels + c) * spatial. Per-activation
// mode (fully connected layers) is spatial = 1, channels = units; convolutional layers use one
// channel per feature map. Statistics are taken over rows * spatial values per channel.
struct BatchNormParams {
  uint32_t rows = 0;
  uint32_t channels = 0;
  uint32_t spatial = 1;
  float epsilon = 1e-5f;
  // Running statistics: running = (1 - momentum) * running + momentum * batch value (the
  // running variance takes the unbiased batch variance; with a single value per channel,
  // rows x spatial = 1, the biased one, 0).
  float momentum = 0.1f;
};

}  // namespace nn
