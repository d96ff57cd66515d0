// Training set-up shared by the public Trainer, TrainJob (run_training) and train_cdl, so that
// the same settings mean the same run everywhere: names and public settings as the training
// loop's options, the network-wide settings a run takes from the spec, epoch reports as the
// public EpochStats.
#pragma once

#include <optional>
#include <string>

#include "config/enums.h"
#include "config/network_spec.h"
#include "nn/train_job.h"
#include "nn/trainer.h"
#include "train/training_loop.h"

namespace nn::api {

// "adam" -> OptimizerKind::Adam (any case); ConfigError listing the names otherwise.
OptimizerKind optimizer_kind(const std::string& name);

// The public parallelism setting as the parallel plan's mode.
ParallelMode parallel_mode(Parallelism p);

// A TrainJob's settings as the training loop's options (the network's settings still to apply).
TrainOptions train_options(const TrainJob& job);

// What every run takes from the network: the optimizer's Decay, and ShuffleIndices unless
// `shuffle` overrides it.
void apply_network_settings(const NetworkSpec& spec, const std::optional<bool>& shuffle,
                            TrainOptions& options);

EpochStats epoch_stats(const EpochReport& r);

}  // namespace nn::api
