// Per-sample item filters for nn-predict: "sample<TAB>item[,value]:item[,value]..." lines (the
// text example format), with sample and item labels mapped through index files.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "data/text_examples.h"

namespace nn::tool {

struct FilterRow {
  std::vector<uint32_t> items;  // sorted output columns
  std::vector<float> values;    // parallel to items (value 0 when absent)
};

// Rows keyed by example number. `path` is a file or a directory whose files are all read (in
// name order). Samples or items missing from the indices are skipped (counted in *skipped).
// Throws DataError("<file>:<line>: ...") on malformed lines.
std::unordered_map<uint64_t, FilterRow> load_sample_filter(const std::string& path,
                                                           const FeatureIndex& samples,
                                                           const FeatureIndex& items,
                                                           uint64_t* skipped);

}  // namespace nn::tool
