// A prediction job's held-out truth (nn-predict --target): the dataset of the items each example
// should have ranked high, and what is measured against it while the examples are scored:
// ranking metrics (precision, recall, NDCG at 1..K), or, when every example has one class (or
// the job says classify), a classifier report (accuracy, confusion matrix). Then the report's
// lines for the log.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/text_examples.h"
#include "distributed/communicator.h"
#include "predict/classifier_report.h"
#include "predict/predictor.h"

namespace nn {

class PredictionTarget {
 public:
  // `path` "" = no target (ConfigError when `classify` asks for one). Otherwise the file's
  // dataset named `dataset` (the scored layer's DataSet), or its only one; it must have
  // `examples` examples, and be sparse unless evaluated as a classifier. `units` is the scored
  // layer's width and `k` the results per example. `items`: the scored layer's item names, when
  // the network carries them; a target that names its items otherwise is refused with the first
  // difference, or, with `remap`, re-indexed into the layer's order by name.
  PredictionTarget(const std::string& path, bool classify, const std::string& dataset,
                   uint64_t examples, uint32_t units, uint32_t k,
                   const FeatureNames& items = nullptr, bool remap = false);
  PredictionTarget(const PredictionTarget&) = delete;
  PredictionTarget& operator=(const PredictionTarget&) = delete;

  bool present() const { return truth_ != nullptr; }
  // The held-out dataset (present() only).
  const ExampleSet& truth() const { return *truth_; }
  bool classify() const { return classify_; }
  // Example e's k ranked units (UINT32_MAX past its candidates) against its truth.
  void add(uint64_t e, const uint32_t* ranked);
  // Ranks that scored different examples: the ranking metrics summed. Collective.
  void sum_over_ranks(Communicator& comm);
  // The report: accuracy and confusion matrix (classes labelled from `labels` when given), or
  // the metrics table "k,precision,recall,ndcg". Empty without a target.
  std::vector<std::string> report(const FeatureIndex* labels) const;

  const RankingMetrics& metrics() const { return metrics_; }
  const ClassifierReport& classifier() const { return classifier_; }

 private:
  std::vector<ExampleSet> sets_;
  const ExampleSet* truth_ = nullptr;
  bool classify_ = false;
  uint32_t k_;
  std::vector<int64_t> classes_;
  RankingMetrics metrics_;
  ClassifierReport classifier_;
  std::vector<uint32_t> row_;
};

}  // namespace nn
