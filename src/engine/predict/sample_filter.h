// Per-sample item filters of a prediction job (nn-predict -f): "sample<TAB>item[,value]:..."
// lines (the text example format), with sample and item labels mapped through index files, and
// their application to a scored batch: the filtered items are left out of the ranking, or (DSSTNE's
// semantics, --filter-multiply) their scores are multiplied by the filter's values.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "data/text_examples.h"
#include "predict/predictor.h"

namespace nn {

struct FilterRow {
  std::vector<uint32_t> items;     // sorted output columns
  std::vector<float> values;       // parallel to items (value 0 when absent)
  std::vector<uint32_t> excluded;  // when items multiply: sorted columns left out besides
};

// Rows keyed by example number. `path` is a file or a directory whose files are all read (in
// name order). Samples or items missing from the indices are skipped (counted in *skipped).
// Throws DataError("<file>:<line>: ...") on malformed lines.
std::unordered_map<uint64_t, FilterRow> load_sample_filter(const std::string& path,
                                                           const FeatureIndex& samples,
                                                           const FeatureIndex& items,
                                                           uint64_t* skipped);

using SampleFilters = std::unordered_map<uint64_t, FilterRow>;

// A filter given as a dataset file (FILE.nc, as nn-generate writes them): example e's items
// (with their values, 1 for indicator data) filter example e's ranking, so no sample or output
// index is needed (nn-predict --data ... -f seen.nc). The file's one sparse dataset, or the one
// named `dataset`; it must have `examples` examples and at most `units` features. Throws
// DataError naming the file otherwise.
SampleFilters load_dataset_filter(const std::string& path, const std::string& dataset,
                                  uint64_t examples, uint32_t units);

// Example `example`'s filter for ranking on the backend (Predictor::run_top_k): its items
// excluded, or with `multiply` its scores multiplied (and its `excluded` left out). Points into
// `filters`.
RowFilter row_filter(const SampleFilters& filters, uint64_t example, bool multiply);

// The same on the host, for the `rows` score rows [rows][units] of examples first..: returns the
// scores to rank (`scores`, or `scaled` holding multiplied copies) and sets excluded[r] to row r's
// items to leave out (null: none).
const float* apply_filters(const SampleFilters& filters, bool multiply, uint64_t first,
                           uint32_t rows, uint32_t units, const float* scores,
                           std::vector<float>& scaled,
                           std::vector<const std::vector<uint32_t>*>& excluded);

}  // namespace nn
