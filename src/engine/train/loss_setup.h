// Chooses the loss for an output layer from the network's ErrorFunction and checks that the
// pairing with the layer's activation and its target data makes sense. The arithmetic itself is
// a backend kernel family (one formula set shared by every backend).
#pragma once

#include "backend/kernel_params.h"
#include "config/network_spec.h"
#include "data/dataset.h"

namespace nn {

// Throws ConfigError ("<net>: layer 'Output': ErrorFunction X cannot follow activation Y ...")
// for combinations without a defined gradient.
LossParams loss_params(const NetworkSpec& spec, const LayerSpec& output, const ExampleSet* targets);

}  // namespace nn
