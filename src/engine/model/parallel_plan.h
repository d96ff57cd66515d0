// The per-layer choice between data and model parallelism under several processes (ranks).
//
// Data parallel: every rank holds the whole layer and takes its rows of each minibatch; the
// weight gradients are all-reduced every step. Model parallel (fully connected layers only):
// every rank holds a slice of the layer's units, with their weights, biases and optimizer
// state, and computes every row of the minibatch for them; activations and deltas travel
// instead of weights.
//
// The rule, for each fully connected Hidden or Output layer (others stay data parallel):
//   1. a layer key "Parallel": "Data" or "Model" decides (Model on a layer that cannot be split
//      is a ConfigError naming the layer and the reason);
//   2. a layer that cannot be split stays data parallel (the reason is printed);
//   3. a layer whose replicated weights (value, gradient and optimizer state) take more than
//      a quarter of a rank's memory budget is split;
//   4. otherwise, with predicted step times (the scaling cost model of train/scaling_plan.h
//      over a named or measured link: nn-train --link), the mode predicted faster; without
//      them, the mode that moves fewer bytes per step (cost model below).
// Cost model: bytes a rank sends per step with ring collectives over P ranks, minibatch B,
// f = (P - 1) / P, 4-byte floats:
//   data:  all-reduce of the layer's parameters:  2 f * 4 * (sum of sources' units + sources)
//          * units (in prediction nothing is reduced: 0)
//   model: per dense non-input source, all-gather of its rows: f * 4 * B * source units, and
//          when the source needs a delta, reduce-scatter of dE/dx: the same again (input
//          sources cost nothing: every rank reads the whole batch); a Hidden layer also hands
//          its activations to the ranks' rows and takes its deltas back (all-to-all, twice
//          in training): f * 4 * B * units each; SoftMax all-reduces 2 values per row.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/network_spec.h"

namespace nn {

// What the rule needs to know about one layer.
struct LayerCostInput {
  struct Source {
    uint64_t units = 0;
    bool input = false;        // an Input layer: every rank holds the whole batch of it
    bool needs_delta = false;  // a dE/dx flows back into it
  };
  std::string name;
  bool fully_connected = false;
  bool output = false;
  bool softmax = false;
  uint64_t units = 0;
  std::vector<Source> sources;
  ParallelMode requested = ParallelMode::Auto;
  std::string cannot_split;  // non-empty: why the layer cannot be split
};

struct ParallelSettings {
  int ranks = 1;
  uint32_t minibatch = 1024;
  bool training = true;
  int optimizer_states = 0;    // state arrays per parameter (Adam: 2)
  uint64_t memory_budget = 0;  // bytes per rank; 0 = no memory criterion
  // Non-empty: why nothing may be split unless the key asks for it (e.g. a validation set,
  // which split layers do not support yet); "Auto" layers stay data parallel with this reason.
  std::string keep_whole;
  // The mode of layers whose key is Auto (the CDL key "Parallel"): Auto leaves them to the
  // rule, Data keeps them whole, Model splits those that can be split.
  ParallelMode default_mode = ParallelMode::Auto;
  // Rule 4's figures: per entry of `layers` (same order), the predicted seconds per step of the
  // layer (compute and communication) in each mode; empty: the bytes rule. `predicted_basis`
  // says where they come from, for the reasons ("eth-10g (preset)").
  struct Predicted {
    double data_s = 0.0, model_s = 0.0;
  };
  std::vector<Predicted> predicted;
  std::string predicted_basis;
};

struct LayerChoice {
  std::string layer;
  bool model_parallel = false;
  std::string reason;
  uint64_t replicated_bytes = 0;  // the layer's weights, gradients and state on every rank
  uint64_t data_bytes = 0;        // bytes sent per step, data parallel
  uint64_t model_bytes = 0;       // bytes sent per step, model parallel
};

// One choice per entry of `layers` (in order). Throws ConfigError for a "Model" request the
// layer cannot take.
std::vector<LayerChoice> choose_parallel(const std::vector<LayerCostInput>& layers,
                                         const ParallelSettings& settings);
// "Output: model parallel (weights 512.0 MiB > ...)": one line for the log.
std::string describe(const LayerChoice& choice);

}  // namespace nn
