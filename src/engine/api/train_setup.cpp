// CDL TrainingParameters -> TrainOptions (see train_setup.h).
#include "api/train_setup.h"

namespace nn::api {

TrainOptions cdl_train_options(const CdlSpec& cdl, uint64_t default_seed) {
  const TrainingParameters& t = cdl.training;
  TrainOptions o;
  o.epochs = static_cast<uint32_t>(t.epochs);
  o.minibatch = t.minibatch;
  o.seed = cdl.random_seed.value_or(default_seed);
  o.optimizer = {t.optimizer, t.alpha, t.lambda,         t.lambda1,         t.mu,
                 t.mu1,       0.0f,    t.alpha_interval, t.alpha_multiplier};
  o.checkpoint_name = t.checkpoint_name;
  o.checkpoint_interval = t.checkpoint_interval;
  o.checkpoints_kept = t.checkpoints_kept;
  o.validation_interval = t.validation_interval;
  o.validation_k = t.validation_k;
  o.patience = t.patience;
  o.keep_best = t.keep_best;
  return o;
}

void apply_network_settings(const NetworkSpec& spec, const std::optional<bool>& shuffle,
                            TrainOptions& options) {
  options.shuffle = shuffle.value_or(spec.shuffle_indices);
  options.optimizer.decay = spec.decay;
}

}  // namespace nn::api
