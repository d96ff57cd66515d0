// Optimizer: hyper-parameters, learning-rate schedule and per-parameter state management. The
// update arithmetic of every kind (SGD, Momentum, Nesterov, AdaGrad, AdaDelta, RMSProp, Adam) is
// a backend kernel, so all backends share one definition of each rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "layers/parameter.h"

namespace nn {

struct OptimizerSettings {
  OptimizerKind kind = OptimizerKind::SGD;
  float alpha = 0.1f;      // learning rate
  float lambda = 0.0f;     // L2 weight decay
  float lambda1 = 0.0f;    // L1 weight decay
  float mu = 0.9f;         // momentum / decay / Adam beta1
  float mu1 = 0.999f;      // Adam beta2
  float decay = 0.0f;      // per-update decay: alpha / (1 + decay * step)
  int alpha_interval = 0;  // epochs between alpha *= alpha_multiplier (0 = never)
  float alpha_multiplier = 1.0f;
};

// One line describing the settings, e.g. "RMSProp alpha=0.001 mu=0.9 lambda=0".
std::string describe(const OptimizerSettings& s);

class Optimizer {
 public:
  Optimizer(Backend& backend, OptimizerSettings settings);
  const OptimizerSettings& settings() const { return settings_; }

  // Makes sure `p` has zeroed state of the right shape (keeps state loaded from a checkpoint).
  void prepare(Parameter& p);
  // Learning rate for an update in `epoch` (0-based) after `step` previous updates.
  float learning_rate(uint64_t epoch, uint64_t step) const;
  // Applies one update (step is 1-based) with learning rate alpha, then the parameter's
  // max-norm constraint (WeightNorm), if any.
  // A parameter whose gradient is held by rows (p.row_grad.enabled, train/row_sparse.h) updates
  // those rows only.
  void update(Parameter& p, uint64_t step, float alpha);
  // update() of every parameter of `parameters`, those with a dense gradient in one multi-tensor
  // call (Backend::optimizer_step_multi: one launch on a GPU instead of one per array), the
  // row-sparse ones by their rows. The same arithmetic, so the same results, as update() on each.
  // A dense array with a BF16 copy (Parameter::value_bf16) has it rewritten by the same pass
  // (Parameter::bf16_written), unless WeightNorm follows the update; update(), update_rows() and
  // skip_rows() leave the copy stale and say so.
  void update_all(const std::vector<Parameter*>& parameters, uint64_t step, float alpha);
  // The steps rows of `p` ([*][width]) skipped, caught up (Backend::optimizer_skip_rows; `rows`
  // and `factors` in backend memory, rows null for rows 0..count).
  void skip_rows(Parameter& p, uint32_t width, const uint32_t* rows, const float* factors,
                 uint32_t count);
  // The lazy update of a sampled output layer (train/sampled_output.h), whose weights are held
  // transposed while it trains: `p` viewed as [p.size() / width][width] (one output unit per
  // row), only its rows `index` (`count` of them, distinct, backend memory) are updated, by
  // `grad` ([count][width]) exactly as update() would update them (the same rule and weight
  // decay; WeightNorm bounds each updated row, a column of the untransposed matrix), their
  // optimizer state with them; every other row and its state stays as it was.
  void update_rows(Parameter& p, uint32_t width, const uint32_t* index, uint32_t count,
                   const float* grad, uint64_t step, float alpha);

 private:
  OptimizerParams params(const Parameter& p, uint64_t step, float alpha) const;
  // The step's parameters for a regularized (L2/L1 decay) or unregularized array.
  OptimizerParams params(bool regularize, uint64_t step, float alpha) const;
  // The parameter's max-norm constraint (WeightNorm) after its update, if it has one.
  void clip_norms(Parameter& p);

  Backend& backend_;
  OptimizerSettings settings_;
  // update_rows' compact copy of the updated rows (WeightNorm).
  DeviceArray<float> columns_;
  std::vector<OptimizerTensor> multi_;  // update_all's tensors (kept to avoid reallocating)
};

}  // namespace nn
