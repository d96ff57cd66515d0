// The ranking rule that nn-predict's metrics (--target) and nn-train's validation share, so
// that one metric name means one number: a recommender is judged on items the user has not
// shown it, so each example's input items are left out of its ranking when the input and the
// output share one item space (a sparse input dataset as wide as the target), unless the job
// asks to rank them. Also the sentence both tools print to say which rule they used.
#pragma once

#include <cstdint>
#include <string>

#include "model/binding.h"
#include "predict/sample_filter.h"

namespace nn {

// The input dataset whose items are left out of each example's ranking against `truth`: the
// first sparse input dataset with as many features as `truth`; null when there is none or
// `rank_inputs` asks to rank them.
const ExampleSet* input_items_left_out(const BoundData& data, const ExampleSet& truth,
                                       bool rank_inputs);

// "each example's input items (dataset 'input') are left out of its ranking", "input items are
// ranked too (asked)" or "the input and the output have different items: every item is
// ranked": what the tools print next to their metrics.
std::string ranking_rule(const BoundData& data, const ExampleSet& truth, bool rank_inputs);

// Adds the items of examples [begin, end) of `inputs` to `filters` as items left out of their
// rankings, whatever the filters do with their own items (exclude them or, with `multiply`,
// scale their scores).
// `offset`: the number of `inputs`' example 0 among all examples (a streamed segment).
void leave_out_input_items(SampleFilters& filters, const ExampleSet& inputs, uint64_t begin,
                           uint64_t end, bool multiply, uint64_t offset = 0);

}  // namespace nn
