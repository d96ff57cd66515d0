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

namespace {

// A dataset that has examples but no arrays: a streamed dataset's header.
bool header_only(const ExampleSet& ds) {
  return ds.examples > 0 && ds.sparse_start.empty() && ds.dense.empty();
}

// Examples [first, first + count) of every binding of `data` read from `sources` into `sets`;
// the bindings re-pointed at them.
BoundData read_segment(const BoundData& data, const std::vector<StreamedDataset>& sources,
                       uint64_t first, uint64_t count, std::vector<ExampleSet>& sets) {
  std::vector<uint64_t> ids(count);
  std::iota(ids.begin(), ids.end(), first);
  BoundData out = data;
  out.examples = count;
  sets.clear();
  sets.reserve(sources.size());
  size_t slot = 0;
  for (auto* list : {&out.inputs, &out.outputs})
    for (LayerData& d : *list) {
      // A dataset bound twice (an autoencoder's input and output) is read once.
      size_t same = 0;
      while (same < slot && (sources[same].file != sources[slot].file ||
                             sources[same].dataset != sources[slot].dataset))
        ++same;
      if (same == slot) {
        sets.push_back(sources[slot].file->read(sources[slot].dataset, ids));
        d.dataset = &sets.back();
      } else {
        d.dataset = same < out.inputs.size() ? out.inputs[same].dataset
                                             : out.outputs[same - out.inputs.size()].dataset;
      }
      ++slot;
    }
  return out;
}

}  // namespace

Validator::Validator(Network& net, const BoundData& data, uint32_t k,
                     const ExampleSet& training_truth, bool rank_input_items,
                     std::vector<StreamedDataset> sources, uint64_t segment)
    : net_(net),
      data_(data),
      k_(std::max<uint32_t>(k, 1)),
      loader_(data, {}, 0),
      losses_(net, data),
      sources_(std::move(sources)),
      segment_(segment) {
  if (data_.outputs.empty()) throw ConfigError("validation needs datasets bound to output layers");
  const ExampleSet& truth = *data_.outputs[0].dataset;
  const uint32_t units = net_.layer(data_.outputs[0].layer).units();
  k_ = std::min(k_, units);
  bool single_label = false;
  if (!header_only(training_truth)) {
    single_label = is_single_label(training_truth);
  } else if (!sources_.empty()) {
    std::vector<ExampleSet> sets;
    const BoundData first =
        read_segment(data_, sources_, 0,
                     std::min<uint64_t>(data_.examples, std::max<uint64_t>(segment_, 1)), sets);
    single_label = is_single_label(*first.outputs[0].dataset);
  }
  if (single_label) {
    mode_ = Mode::Classify;
    metric_ = "accuracy";
    if (sources_.empty())
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
  uint64_t batches = 0;
  // Examples [0, count) of `data` (all of them, or a streamed segment's), through `loader`.
  auto run = [&](const BoundData& data, const BatchLoader& loader, uint64_t count,
                 const ExampleSet& truth, const std::vector<int64_t>& classes,
                 const ExampleSet* exclude) {
    for (uint64_t first = 0; first < count; first += batch) {
      const uint32_t rows = static_cast<uint32_t>(std::min<uint64_t>(batch, count - first));
      std::iota(ids.begin(), ids.begin() + rows, static_cast<uint32_t>(first));
      loader.assemble(ids.data(), rows, 0, false, hb);
      load_inputs(net_, data, hb);
      LayerContext ctx{be, rows, false, 0, 0};
      net_.forward(ctx);
      losses_.accumulate(hb, /*write_deltas=*/false, nullptr, sums.data() + math::kLossBatch);
      be.fold_loss_sums(sums.data(), ++batches);
      if (mode_ == Mode::Loss) continue;
      // Ranked on the backend (only k per row come back), leaving out the input items.
      TopKFilter filter;
      if (exclude) {
        ex_ptr.assign(1, 0);
        ex_index.clear();
        for (uint32_t r = 0; r < rows; ++r) {
          sorted_items(*exclude, first + r, excluded);
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
      // Padded rows: the row length is the stride, the padding never ranked.
      be.top_k_filtered(out.activations(), rows, out.stride(), units, k, filter, d_top_score.data(),
                        d_top_index.data());
      top.index.resize(selected);
      be.download(top.index.data(), d_top_index.data(), selected * sizeof(uint32_t));
      for (uint32_t r = 0; r < rows; ++r) {
        const uint32_t* ranked = &top.index[size_t(r) * k];
        if (mode_ == Mode::Classify) {
          classifier.add(classes[first + r], ranked, k);
          continue;
        }
        sorted_items(truth, first + r, truth_row);
        ranking.add(ranked, k, truth_row);
      }
    }
  };
  if (sources_.empty()) {
    run(data_, loader_, n, truth, classes_, exclude_);
  } else {
    // A whole number of minibatches per segment: the batches of a whole read.
    const uint64_t segment = std::max<uint64_t>(1, segment_ / batch) * batch;
    std::vector<ExampleSet> sets;
    std::vector<int64_t> classes;
    for (uint64_t a = 0; a < n; a += segment) {
      const uint64_t count = std::min(segment, n - a);
      const BoundData part = read_segment(data_, sources_, a, count, sets);
      const ExampleSet& part_truth = *part.outputs[0].dataset;
      if (mode_ == Mode::Classify)
        classes = true_classes(part_truth, units, "validation dataset '" + part_truth.name + "'");
      const ExampleSet* exclude = nullptr;
      for (size_t i = 0; exclude_ && i < data_.inputs.size(); ++i)
        if (data_.inputs[i].dataset == exclude_) exclude = part.inputs[i].dataset;
      const BatchLoader loader(part, {}, 0);
      run(part, loader, count, part_truth, classes, exclude);
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
