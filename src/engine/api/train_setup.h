// Training set-up shared by the public Trainer, train_cdl() and nn-train, so that a CDL file means
// the same run everywhere: the CDL's TrainingParameters as TrainOptions, and the network-wide
// settings a run takes from the spec.
#pragma once

#include <cstdint>

#include "config/cdl_spec.h"
#include "config/network_spec.h"
#include "train/training_loop.h"

namespace nn::api {

// A CDL Train command's settings (epochs, minibatch, seed, optimizer, checkpoints, validation
// keys) as the trainer's options; `default_seed` when the CDL has no RandomSeed.
TrainOptions cdl_train_options(const CdlSpec& cdl, uint64_t default_seed);

// What every run takes from the network: the optimizer's Decay, and ShuffleIndices unless
// `shuffle` overrides it.
void apply_network_settings(const NetworkSpec& spec, const std::optional<bool>& shuffle,
                            TrainOptions& options);

}  // namespace nn::api
