// Warm starts across a changed catalog (docs/retraining.md): yesterday's network's arrays carried
// into today's network, matched by item name. The new network (built from today's data and the
// config, and initialised as the config says) gives the shapes and the starting values; the old
// network file gives every value that carries over:
//   - an Input layer's kept item keeps its weight row, an Output layer's kept item its column
//     and bias;
//   - an item new to the catalog keeps the new network's initial values;
//   - an item that left the catalog is dropped;
//   - every other array (hidden layers, batch normalisation, layers without items) is copied
//     when its shape agrees, and any other change of shape is an error naming the layer and
//     both shapes.
// The epoch, the learning-rate schedule and the random streams start afresh. The optimizer state
// of kept items (and of copied arrays) is carried over with their values when asked (the caller
// asks when the old run used the same optimizer); new items' state starts at zero.
#pragma once

#include <string>
#include <vector>

#include "io/network_file.h"

namespace nn {

struct WarmStartResult {
  NetworkFile arrays;              // `fresh` with the old values carried over
  std::vector<std::string> lines;  // per layer: what was kept, added and dropped
};

// `fresh`: the new network as a file (Network::to_file, after initialisation); `old`: the
// network file read from `old_path` (named in messages). Throws DataError for a layer whose shape
// changed other than by its items, and for an item layer whose size changed when either side does
// not name its items.
WarmStartResult warm_start(const NetworkFile& fresh, const NetworkFile& old,
                           const std::string& old_path, bool carry_optimizer_state = false);

}  // namespace nn
