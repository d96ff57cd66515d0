// Pieces of one training/evaluation step shared by the trainer, the predictor and the gradient
// checks: putting a host batch into the input layers, and computing the output losses (and
// their deltas) against the batch's targets.
#pragma once

#include <memory>
#include <vector>

#include "backend/kernel_params.h"
#include "model/batch_loader.h"
#include "model/network.h"
#include "model/target_buffer.h"

namespace nn {

// Uploads the input slots of `batch` into the network's bound input layers.
void load_inputs(Network& net, const BoundData& data, const HostBatch& batch);

class OutputLosses {
 public:
  // Checks every output layer's ErrorFunction/activation/target pairing (ConfigError if bad).
  OutputLosses(Network& net, const BoundData& data);
  // Sum over the batch and all output layers of the per-example error. With `write_deltas`,
  // each output layer's delta buffer receives dE/dz. Call after a forward pass.
  double evaluate(const HostBatch& batch, bool write_deltas);

 private:
  Network& net_;
  BoundData data_;
  std::vector<LossParams> params_;
  std::vector<std::unique_ptr<TargetBuffer>> targets_;
};

}  // namespace nn
