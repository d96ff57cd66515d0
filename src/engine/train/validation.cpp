// Validation-set evaluation during training (see validation.h).
#include "train/validation.h"

#include <algorithm>
#include <numeric>

#include "backend/device_array.h"
#include "backend/math/loss_sums.h"
#include "core/error.h"
#include "predict/classifier_report.h"
#include "predict/input_items.h"
#include "predict/predictor.h"

namespace nn {

Validator::Validator(Network& net, const BoundData& data, uint32_t k,
                     const ExampleSet& training_truth, bool rank_input_items)
    : net_(net),
      data_(data),
      k_(std::max<uint32_t>(k, 1)),
      loader_(data, {}, 0),
      losses_(net, data) {
  if (data_.outputs.empty()) throw ConfigError("validation needs datasets bound to output layers");
  const ExampleSet& truth = *data_.outputs[0].dataset;
  const uint32_t units = net_.layer(data_.outputs[0].layer).units();
  k_ = std::min(k_, units);
  if (is_single_label(training_truth)) {
    mode_ = Mode::Classify;
    metric_ = "accuracy";
    classes_ = true_classes(truth, units, "validation dataset '" + truth.name + "'");
  } else if (truth.is_sparse()) {
    mode_ = Mode::Rank;
    metric_ = "recall@" + std::to_string(k_);
    // A recommender's input items are known to the user: ranking them again would make the
    // metric measure reconstruction rather than recommendation. nn-predict --target follows the
    // same rule, so one metric name means one number.
    exclude_ = input_items_left_out(data_, truth, rank_input_items);
    ranking_rule_ = nn::ranking_rule(data_, truth, rank_input_items);
  } else {
    metric_ = "loss";
  }
}

ValidationResult Validator::evaluate() {
  Backend& be = net_.backend();
  const uint32_t saved_rows = net_.max_batch();
  // A sampled output layer trains without buffers (train/sampled_output.h); validation scores
  // the full layer, so it gets them for the evaluation only.
  const Layer* saved_unallocated = net_.unallocated();
  const uint32_t batch = std::max<uint32_t>(saved_rows, 1);
  const uint64_t n = data_.examples;
  net_.set_max_batch(static_cast<uint32_t>(std::min<uint64_t>(batch, n)));
  Layer& out = net_.layer(data_.outputs[0].layer);
  const ExampleSet& truth = *data_.outputs[0].dataset;
  const uint32_t units = out.units();
  const uint32_t k = k_;

  RankingMetrics ranking(k);
  ClassifierReport classifier(units, k);
  // The loss is summed in the backend's memory (one read at the end, not one per batch): each
  // batch's outputs into the batch slot, then folded into the total, as the trainer does.
  DeviceArray<double> sums;
  sums.assign(be, std::vector<double>(math::kLossSumCount, 0.0));
  std::vector<uint32_t> ids(batch), truth_row;
  std::vector<uint32_t> excluded, ex_ptr, ex_index;
  DeviceArray<uint32_t> d_ex_ptr, d_ex_index, d_top_index;
  DeviceArray<float> d_top_score;
  HostBatch hb;
  TopK top;
  for (uint64_t first = 0; first < n; first += batch) {
    const uint32_t rows = static_cast<uint32_t>(std::min<uint64_t>(batch, n - first));
    std::iota(ids.begin(), ids.begin() + rows, static_cast<uint32_t>(first));
    loader_.assemble(ids.data(), rows, 0, false, hb);
    load_inputs(net_, data_, hb);
    LayerContext ctx{be, rows, false, 0, 0};
    net_.forward(ctx);
    losses_.accumulate(hb, /*write_deltas=*/false, nullptr, sums.data() + math::kLossBatch);
    be.fold_loss_sums(sums.data(), first / batch + 1);
    if (mode_ == Mode::Loss) continue;
    // Ranked on the backend (only k per row come back), leaving out the input items.
    TopKFilter filter;
    if (exclude_) {
      ex_ptr.assign(1, 0);
      ex_index.clear();
      for (uint32_t r = 0; r < rows; ++r) {
        sorted_items(*exclude_, first + r, excluded);
        ex_index.insert(ex_index.end(), excluded.begin(), excluded.end());
        ex_ptr.push_back(static_cast<uint32_t>(ex_index.size()));
      }
      if (!ex_index.empty()) {
        d_ex_ptr.assign(be, ex_ptr);
        d_ex_index.assign(be, ex_index);
        filter.exclude_ptr = d_ex_ptr.data();
        filter.exclude_index = d_ex_index.data();
      }
    }
    const size_t selected = size_t(rows) * k;
    d_top_index.resize(be, selected);
    d_top_score.resize(be, selected);
    be.top_k_filtered(out.activations(), rows, units, units, k, filter, d_top_score.data(),
                      d_top_index.data());
    top.index.resize(selected);
    be.download(top.index.data(), d_top_index.data(), selected * sizeof(uint32_t));
    for (uint32_t r = 0; r < rows; ++r) {
      const uint32_t* ranked = &top.index[size_t(r) * k];
      if (mode_ == Mode::Classify) {
        classifier.add(classes_[first + r], ranked, k);
        continue;
      }
      sorted_items(truth, first + r, truth_row);
      ranking.add(ranked, k, truth_row);
    }
  }
  net_.set_max_batch(saved_rows, 0, saved_unallocated);
  const double loss = sums.to_host()[math::kLossTotal];

  ValidationResult r;
  r.metric = metric_;
  r.examples = n;
  const double mean_loss = loss / double(std::max<uint64_t>(n, 1));
  if (mode_ == Mode::Classify) {
    r.value = classifier.top1();
    r.values = {{"accuracy", r.value},
                {"top" + std::to_string(k) + "_accuracy", classifier.topk()}};
  } else if (mode_ == Mode::Rank) {
    r.value = ranking.recall(k);
    r.values = {{metric_, r.value},
                {"ndcg@" + std::to_string(k), ranking.ndcg(k)},
                {"precision@" + std::to_string(k), ranking.precision(k)}};
  } else {
    r.value = mean_loss;
    r.higher_is_better = false;
  }
  if (mode_ != Mode::Loss)
    r.values.push_back({"loss", mean_loss});
  else
    r.values = {{"loss", mean_loss}};
  return r;
}

}  // namespace nn
