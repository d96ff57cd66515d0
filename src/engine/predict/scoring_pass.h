// The scoring pass of a prediction job: the examples run through the network in minibatches and
// each batch's top K of the scored layer, after the sample filters, handed to the caller. Only
// the k results per example leave the backend when rankings are all that is wanted; with a layer
// dump every score comes to the host (the dump writes it) and the ranking runs there.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "predict/layer_dump.h"
#include "predict/predictor.h"
#include "predict/rank_merge.h"
#include "predict/sample_filter.h"

namespace nn {

struct ScoringPass {
  std::string layer;        // the scored layer
  uint32_t k = 10;          // results per example
  uint32_t units = 0;       // the scored layer's units
  uint32_t valid_cols = 0;  // units that may be ranked (those the output index names)
  const SampleFilters* filters = nullptr;  // per example (null: none)
  bool multiply = false;                   // filters multiply scores instead of excluding items
  bool rank = true;                        // false: no rankings wanted (a dump alone)
  LayerDump* dump = nullptr;               // the dump, and the layer it writes
  Layer* dump_layer = nullptr;
  std::function<std::string(uint64_t)> sample_name;  // labels of dumped rows
  int threads = 0;                                   // host ranking threads (0: OpenMP's)
  // The number of the predictor's example 0 among all examples (a streamed segment's first):
  // filters, the dump and `emit` see examples by that numbering.
  uint64_t first_example = 0;
};

// Runs examples [range.begin, range.end) through `predictor` (over `net`); `emit` gets each
// batch's first example, rows and top k (global unit numbers) when the pass ranks.
void run_scoring_pass(
    Predictor& predictor, Network& net, const ScoringPass& pass, ExampleRange range,
    const std::function<void(uint64_t first, uint32_t rows, const TopK& top)>& emit);

}  // namespace nn
