// Training set-up shared by the API's training entry points (see train_setup.h).
#include "api/train_setup.h"

#include "config/enum_names.h"
#include "core/error.h"

namespace nn::api {

OptimizerKind optimizer_kind(const std::string& name) {
  if (auto k = enum_from_string<OptimizerKind>(name)) return *k;
  throw ConfigError("optimizer: unknown optimizer '" + name + "'; expected one of " +
                    enum_choices<OptimizerKind>());
}

void apply_network_settings(const NetworkSpec& spec, const std::optional<bool>& shuffle,
                            TrainOptions& options) {
  options.shuffle = shuffle.value_or(spec.shuffle_indices);
  options.optimizer.decay = spec.decay;
}

EpochStats epoch_stats(const EpochReport& r) {
  return {r.epoch, r.loss, r.data_loss, r.reg_loss, r.seconds, r.examples_per_second, r.alpha};
}

}  // namespace nn::api
