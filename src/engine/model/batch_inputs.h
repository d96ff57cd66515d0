// Putting a host minibatch into a network's bound input layers: the first thing every forward
// pass does (training, validation, prediction, the gradient check).
#pragma once

#include "model/batch_loader.h"
#include "model/network.h"

namespace nn {

// Uploads the input slots of `batch` into the network's bound input layers, into their buffer
// set `set` (InputLayer::load_sparse: the training loop alternates two).
void load_inputs(Network& net, const BoundData& data, const HostBatch& batch, unsigned set = 0);
// Model parallelism: uploads the whole global minibatch into the input layers that feed
// model-parallel layers (Layer::feeds_sharded); the others are left alone.
void load_full_inputs(Network& net, const BoundData& data, const HostBatch& whole);

}  // namespace nn
