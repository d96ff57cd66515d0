// Batched forward evaluation, top-K selection and ranking metrics.
#include "model/predictor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <omp.h>

#include "core/error.h"
#include "model/step.h"

namespace nn {

Predictor::Predictor(Network& net, const BoundData& inputs, uint32_t minibatch)
    : net_(net),
      data_(inputs),
      minibatch_(minibatch),
      loader_(BoundData{inputs.inputs, {}, inputs.examples}, {}, 0) {
  if (minibatch_ == 0) throw ConfigError("minibatch must be positive");
  net_.set_max_batch(static_cast<uint32_t>(std::min<uint64_t>(minibatch_, data_.examples)));
}

void Predictor::run(
    const std::string& layer_name,
    const std::function<void(uint64_t, uint32_t, const float*)>& consume, uint64_t begin,
    uint64_t end) {
  Backend& be = net_.backend();
  Layer& layer = net_.layer(layer_name);
  if (layer.has_sparse_output())
    throw ConfigError("layer '" + layer_name + "' is a sparse input; it has no scores");
  const uint64_t n = std::min<uint64_t>(data_.examples, end);
  std::vector<uint32_t> ids(minibatch_);
  std::vector<float> scores;
  HostBatch hb;
  for (uint64_t first = begin; first < n; first += minibatch_) {
    const uint32_t rows = static_cast<uint32_t>(std::min<uint64_t>(minibatch_, n - first));
    std::iota(ids.begin(), ids.begin() + rows, static_cast<uint32_t>(first));
    loader_.assemble(ids.data(), rows, 0, false, hb);
    load_inputs(net_, data_, hb);
    LayerContext ctx{be, rows, false, 0, 0};
    net_.forward(ctx);
    scores.resize(size_t(rows) * layer.units());
    be.download(scores.data(), layer.activations(), scores.size() * sizeof(float));
    consume(first, rows, scores.data());
  }
}

void top_k_rows(const float* scores, uint32_t rows, uint32_t cols, uint32_t valid_cols, uint32_t k,
                const std::function<const std::vector<uint32_t>*(uint32_t)>& exclude, TopK& out,
                int threads) {
  out.index.assign(size_t(rows) * k, std::numeric_limits<uint32_t>::max());
  out.score.assign(size_t(rows) * k, -std::numeric_limits<float>::infinity());
  valid_cols = std::min(valid_cols, cols);
  if (threads <= 0) threads = omp_get_max_threads();
#pragma omp parallel num_threads(threads)
  {
    std::vector<uint32_t> cand;
#pragma omp for schedule(dynamic, 8)
    for (int64_t r = 0; r < int64_t(rows); ++r) {
      const float* s = scores + size_t(r) * cols;
      const std::vector<uint32_t>* ex = exclude ? exclude(uint32_t(r)) : nullptr;
      cand.clear();
      size_t e = 0;
      for (uint32_t c = 0; c < valid_cols; ++c) {
        if (ex) {
          while (e < ex->size() && (*ex)[e] < c) ++e;
          if (e < ex->size() && (*ex)[e] == c) continue;
        }
        if (std::isnan(s[c])) continue;
        cand.push_back(c);
      }
      auto better = [s](uint32_t a, uint32_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); };
      const size_t take = std::min<size_t>(k, cand.size());
      std::partial_sort(cand.begin(), cand.begin() + take, cand.end(), better);
      for (size_t j = 0; j < take; ++j) {
        out.index[size_t(r) * k + j] = cand[j];
        out.score[size_t(r) * k + j] = s[cand[j]];
      }
    }
  }
}

void sorted_items(const DataSet& ds, uint64_t e, std::vector<uint32_t>& out) {
  const uint64_t u = ds.row(e);
  out.assign(ds.sparse_index.begin() + ds.sparse_start[u],
             ds.sparse_index.begin() + ds.sparse_end[u]);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

void RankingMetrics::add(const uint32_t* ranked, uint32_t count,
                         const std::vector<uint32_t>& truth) {
  if (truth.empty()) return;
  ++examples_;
  double idcg_all = 0.0;
  std::vector<double> idcg(k_);
  for (uint32_t i = 0; i < k_; ++i) {
    if (i < truth.size()) idcg_all += 1.0 / std::log2(double(i) + 2.0);
    idcg[i] = idcg_all;
  }
  uint32_t hits = 0;
  double dcg = 0.0;
  for (uint32_t j = 0; j < k_; ++j) {
    if (j < count && ranked[j] != std::numeric_limits<uint32_t>::max() &&
        std::binary_search(truth.begin(), truth.end(), ranked[j])) {
      ++hits;
      dcg += 1.0 / std::log2(double(j) + 2.0);
    }
    const double cut = double(j + 1);
    precision_[j] += hits / cut;
    recall_[j] += hits / std::min(cut, double(truth.size()));
    ndcg_[j] += dcg / idcg[j];
  }
}

std::vector<double> RankingMetrics::sums() const {
  std::vector<double> out;
  out.push_back(double(examples_));
  out.insert(out.end(), precision_.begin(), precision_.end());
  out.insert(out.end(), recall_.begin(), recall_.end());
  out.insert(out.end(), ndcg_.begin(), ndcg_.end());
  return out;
}

void RankingMetrics::add_sums(const std::vector<double>& s) {
  NN_CHECK(s.size() == 1 + 3 * size_t(k_), "ranking metric sums of another k");
  examples_ += uint64_t(s[0] + 0.5);
  for (uint32_t j = 0; j < k_; ++j) {
    precision_[j] += s[1 + j];
    recall_[j] += s[1 + k_ + j];
    ndcg_[j] += s[1 + 2 * k_ + j];
  }
}

}  // namespace nn
