// A training run's hyper-parameters as TensorBoard's hparams dashboard lists them (one column
// each, to compare and filter runs by): the optimizer's settings, the minibatch, epochs and seed,
// and the network's error function, denoising and each layer's units, activation and dropout.
#pragma once

#include <vector>

#include "config/network_spec.h"
#include "train/tensorboard_event.h"
#include "train/training_loop.h"

namespace nn {

std::vector<HyperParameter> hyper_parameters(const TrainOptions& options, const NetworkSpec& spec);

}  // namespace nn
