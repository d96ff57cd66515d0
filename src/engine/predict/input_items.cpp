// The shared ranking rule for held-out metrics (see input_items.h).
#include "predict/input_items.h"

#include <algorithm>
#include <iterator>

#include "predict/predictor.h"

namespace nn {
namespace {

// The first sparse input as wide as the target, whatever the job asks.
const ExampleSet* same_item_space(const BoundData& data, const ExampleSet& truth) {
  for (const auto& in : data.inputs)
    if (in.dataset->is_sparse() && in.dataset->features() == truth.features()) return in.dataset;
  return nullptr;
}

}  // namespace

const ExampleSet* input_items_left_out(const BoundData& data, const ExampleSet& truth,
                                       bool rank_inputs) {
  return rank_inputs ? nullptr : same_item_space(data, truth);
}

std::string ranking_rule(const BoundData& data, const ExampleSet& truth, bool rank_inputs) {
  const ExampleSet* inputs = same_item_space(data, truth);
  if (!inputs) return "the input and the output have different items: every item is ranked";
  if (rank_inputs) return "each example's input items are ranked too (as asked)";
  return "each example's input items (dataset '" + inputs->name + "') are left out of its ranking";
}

void leave_out_input_items(SampleFilters& filters, const ExampleSet& inputs, uint64_t begin,
                           uint64_t end, bool multiply, uint64_t offset) {
  std::vector<uint32_t> items, merged;
  end = std::min<uint64_t>(end, inputs.examples);
  for (uint64_t e = begin; e < end; ++e) {
    sorted_items(inputs, e, items);
    if (items.empty()) continue;
    FilterRow& row = filters[offset + e];
    if (multiply) {
      row.excluded = items;  // the filter's own items keep scaling their scores
      continue;
    }
    // Excluded either way: the union, ascending (values only matter when multiplying).
    merged.clear();
    std::set_union(row.items.begin(), row.items.end(), items.begin(), items.end(),
                   std::back_inserter(merged));
    row.items.swap(merged);
    row.values.assign(row.items.size(), 0.0f);
  }
}

}  // namespace nn
