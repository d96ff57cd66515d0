// The model summary printed when training starts: one row per layer (name, kind, shape,
// parameter count, memory) and the totals, so a user sees what was built from the JSON (sizes
// resolved from "auto", shared weights counted once) before the long work begins.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/memory_budget.h"  // format_bytes
#include "model/network.h"

namespace nn {

struct LayerSummary {
  std::string name;
  std::string kind;   // "Hidden FullyConnected Sigmoid", "Input (sparse)", ...
  std::string shape;  // "256", "28x28x1"
  uint64_t parameters = 0;
  uint64_t bytes = 0;  // parameters (values, gradients, optimizer state) + activations
};

struct ModelSummary {
  std::vector<LayerSummary> layers;  // declaration order
  uint64_t parameters = 0;
  uint64_t parameter_bytes = 0;   // values + gradients + optimizer state
  uint64_t activation_bytes = 0;  // activations and deltas at the allocated minibatch
};

// Summarises `net` as allocated now (call after set_max_batch and optimizer preparation for the
// optimizer state to be counted).
ModelSummary summarize(Network& net);

// The summary as aligned text lines (a header, one line per layer, a totals line).
std::vector<std::string> format_summary(const ModelSummary& summary, uint32_t minibatch);

}  // namespace nn
