// Classifier evaluation, shared by nn-predict --target and the trainer's validation set: the true
// class of each example from a target dataset (one item per example, or the largest value with
// --classify), top-1 and top-K accuracy, and a confusion matrix (rows: true class, columns:
// predicted class).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/dataset.h"
#include "data/text_examples.h"

namespace nn {

// True when every example of `truth` names exactly one class: sparse rows with one entry, dense
// Boolean data (one class id per example), or dense rows with exactly one non-zero value.
bool is_single_label(const ExampleSet& truth);

// The true class of every example (-1 when the example has none): the single item, or with
// several items the one with the largest value (the first stored on ties). `where` names the
// file for messages; throws DataError for a class id outside [0, classes).
std::vector<int64_t> true_classes(const ExampleSet& truth, uint32_t classes,
                                  const std::string& where);

class ClassifierReport {
 public:
  ClassifierReport(uint32_t classes, uint32_t k) : classes_(classes), k_(k) {}
  // `ranked` holds the `count` best classes, best first (UINT32_MAX marks missing entries).
  // Examples without a true class (truth < 0) are not counted.
  void add(int64_t truth, const uint32_t* ranked, uint32_t count);

  uint64_t examples() const { return examples_; }
  double top1() const { return examples_ ? double(top1_) / double(examples_) : 0.0; }
  double topk() const { return examples_ ? double(topk_) / double(examples_) : 0.0; }
  uint64_t count(uint32_t truth, uint32_t predicted) const;

  // Report lines: accuracies, then the confusion matrix over the classes that occur (as truth
  // or prediction), labelled from `labels` when given. Matrices with more than `max_classes`
  // such classes are summarised instead of printed.
  std::vector<std::string> format(const FeatureIndex* labels, size_t max_classes = 40) const;

 private:
  uint32_t classes_, k_;
  uint64_t examples_ = 0, top1_ = 0, topk_ = 0, unranked_ = 0;
  std::unordered_map<uint64_t, uint64_t> confusion_;  // truth * classes + predicted -> count
};

}  // namespace nn
