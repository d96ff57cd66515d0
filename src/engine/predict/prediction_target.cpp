// Held-out truth of a prediction job (see prediction_target.h).
#include "predict/prediction_target.h"

#include <cstdio>

#include "core/error.h"
#include "io/netcdf_dataset.h"
#include "predict/network_items.h"
#include "predict/rank_merge.h"

namespace nn {
namespace {

// The held-out dataset: the one named like the scored layer's DataSet, or the only one in the
// file.
const ExampleSet* pick_target(const std::vector<ExampleSet>& sets, const std::string& want,
                              const std::string& file) {
  for (const auto& s : sets)
    if (s.name == want) return &s;
  if (sets.size() == 1) return &sets[0];
  std::string names;
  for (const auto& s : sets) names += (names.empty() ? "" : ", ") + s.name;
  throw ConfigError(file + ": no dataset named '" + want +
                    "' (the scored layer's DataSet); it holds " + names);
}

}  // namespace

PredictionTarget::PredictionTarget(const std::string& path, bool classify,
                                   const std::string& dataset, uint64_t examples, uint32_t units,
                                   uint32_t k, const FeatureNames& items, bool remap)
    : k_(k), metrics_(k), classifier_(units, k) {
  if (path.empty()) {
    if (classify) throw ConfigError("--classify needs a target dataset (--target or CDL Target)");
    return;
  }
  sets_ = read_datasets(path);
  truth_ = pick_target(sets_, dataset, path);
  // A target indexed with another order of the items would score the wrong items silently.
  if (items && truth_->feature_names && truth_->feature_names != items) {
    const std::string difference =
        first_name_difference(*items, *truth_->feature_names, "the target " + path);
    if (!difference.empty()) {
      if (!remap)
        throw ConfigError("--target " + path +
                          ": the target's items are not the scored layer's: " + difference +
                          " (index the target with the network's items, or give "
                          "--remap-index to match it by name)");
      for (ExampleSet& s : sets_)
        if (&s == truth_) remap_dataset_items(s, items, units, path);
    }
  }
  if (truth_->examples != examples)
    throw DataError(path + ": dataset '" + truth_->name + "' has " +
                    std::to_string(truth_->examples) + " examples, but the input has " +
                    std::to_string(examples));
  classify_ = classify || is_single_label(*truth_);
  if (classify_)
    classes_ = true_classes(*truth_, units, path);
  else if (!truth_->is_sparse())
    throw ConfigError(path + ": dataset '" + truth_->name +
                      "': ranking metrics need a sparse target; use --classify for a dense "
                      "one (the largest value of each example is its class)");
}

void PredictionTarget::add(uint64_t e, const uint32_t* ranked) {
  if (classify_) {
    classifier_.add(classes_[e], ranked, k_);
  } else if (truth_) {
    sorted_items(*truth_, e, row_);
    metrics_.add(ranked, k_, row_);
  }
}

void PredictionTarget::sum_over_ranks(Communicator& comm) {
  if (truth_ && !classify_) nn::sum_over_ranks(comm, metrics_);
}

std::vector<std::string> PredictionTarget::report(const FeatureIndex* labels) const {
  if (classify_) return classifier_.format(labels);
  if (!truth_) return {};
  std::vector<std::string> lines;
  lines.push_back("metrics over " + std::to_string(metrics_.examples()) +
                  " examples with targets (k,precision,recall,ndcg):");
  char buf[128];
  for (uint32_t j = 1; j <= k_; ++j) {
    std::snprintf(buf, sizeof buf, "%u,%6.4f,%6.4f,%6.4f", j, metrics_.precision(j),
                  metrics_.recall(j), metrics_.ndcg(j));
    lines.push_back(buf);
  }
  return lines;
}

}  // namespace nn
