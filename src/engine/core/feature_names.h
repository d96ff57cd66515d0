// The names of a sparse layer's features (items), in index order, and the comparisons a network
// makes with the names it is given: a dataset's, an index file's, another network's. Names are
// shared, not copied: a dataset, the layer bound to it and the network file written from it refer
// to one list, which for a catalog of millions of items is tens of megabytes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nn {

// Feature names in index order. "" marks an index without a name: the padding of a width rounded
// up to 128, or an id an index file skipped. Null: nobody said (DSSTNE's files, dense layers).
using FeatureNames = std::shared_ptr<const std::vector<std::string>>;

FeatureNames make_feature_names(std::vector<std::string> names);

// "" when `names` can name the features of a layer or dataset `width` wide: at most `width`
// names, each non-empty name once. Otherwise the problem, e.g. "entry 7 (\"318\") repeats
// entry 2" or "has 9800 names, more than the 9728 features".
std::string feature_names_problem(const std::vector<std::string>& names, uint64_t width);

// The first difference between the names a network was trained with (`expected`) and others
// (`given`, e.g. an index file's), worded for an error message, with `given_what` naming the
// other list ("the input index in.idx"); "" when they agree. Trailing unnamed entries ("")
// do not count: a width rounded up differently names the same features.
//   "feature \"318\" (index 2 in the network) is missing from <given_what>"
//   "<given_what> has feature \"999\" (index 9724), which the network does not know"
//   "feature \"318\" is index 2 in the network but index 5 in <given_what>"
std::string first_name_difference(const std::vector<std::string>& expected,
                                  const std::vector<std::string>& given,
                                  const std::string& given_what);

// For each index of `to`, the index in `from` with the same name, or -1 (a name `from` lacks, or
// no name). Used to carry rows across catalogs (warm starts) and to remap reordered indices.
std::vector<int64_t> match_names(const std::vector<std::string>& from,
                                 const std::vector<std::string>& to);

// Counts of a match: names kept (in both), added (only in `to`), dropped (only in `from`).
struct NameMatchCounts {
  uint64_t kept = 0, added = 0, dropped = 0;
};
NameMatchCounts count_matches(const std::vector<std::string>& from,
                              const std::vector<std::string>& to,
                              const std::vector<int64_t>& match);

}  // namespace nn
