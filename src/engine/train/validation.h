// Held-out evaluation during training: runs the network (no dropout, no denoising) over a
// validation set bound to the same layers and reports the metric that fits the network: top-1
// accuracy for classifiers (every training example has one class), recall@K and NDCG@K for sparse
// outputs (recommenders; the items of an example's input are not ranked when the input and the
// output share one item space, unless asked: the rule of predict/input_items.h, which nn-predict
// --target follows too), else the validation loss. Reuses nn-predict's metric code
// (RankingMetrics, ClassifierReport).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "io/example_file.h"
#include "model/batch_loader.h"
#include "model/network.h"
#include "train/step.h"

namespace nn {

struct ValidationResult {
  std::string metric;            // primary metric: "accuracy", "recall@10" or "loss"
  double value = 0.0;            // its value
  bool higher_is_better = true;  // false for "loss"
  std::vector<std::pair<std::string, double>> values;  // every metric, the primary first
  uint64_t examples = 0;
  // True when `other` is better than this result by the primary metric.
  bool improved_by(const ValidationResult& other) const {
    return higher_is_better ? other.value > value : other.value < value;
  }
};

class Validator {
 public:
  // `data` binds the network's input and output layers to the validation datasets. `k` is the
  // cut-off of the ranking metrics. `training_truth` (the training data's first output dataset)
  // decides what the network is: a classifier when each of its examples has one class (a
  // validation set that holds out one item per user stays a recommender). `rank_input_items`
  // ranks each example's input items too. Throws ConfigError when the network has no output
  // bound.
  // Streamed (`sources` non-empty: one per binding of `data`, inputs then outputs, whose
  // datasets are then headers without arrays): the validation set is read `segment` examples at
  // a time (a whole number of minibatches, so the batches are those of a whole read), and a
  // `training_truth` without arrays is judged by the validation truth's first segment.
  Validator(Network& net, const BoundData& data, uint32_t k, const ExampleSet& training_truth,
            bool rank_input_items = false, std::vector<StreamedDataset> sources = {},
            uint64_t segment = 0);

  // Evaluates the current weights. Leaves the network's minibatch allocation as it found it.
  ValidationResult evaluate();
  // The primary metric's name ("accuracy", "recall@10", "loss").
  const std::string& metric() const { return metric_; }
  // Which items the rankings leave out (predict/input_items.h's sentence); "" unless ranking.
  const std::string& ranking_rule() const { return ranking_rule_; }

 private:
  enum class Mode { Classify, Rank, Loss };
  Network& net_;
  BoundData data_;
  uint32_t k_;
  BatchLoader loader_;
  OutputLosses losses_;
  Mode mode_ = Mode::Loss;
  std::string metric_, ranking_rule_;
  std::vector<int64_t> classes_;          // Classify: true class per example
  const ExampleSet* exclude_ = nullptr;   // Rank: input dataset whose items are not ranked
  std::vector<StreamedDataset> sources_;  // streamed: where each binding's examples are
  uint64_t segment_ = 0;
};

}  // namespace nn
