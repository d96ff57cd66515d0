// Batched forward evaluation, top-K selection and ranking metrics.
#include "predict/predictor.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "distributed/row_split.h"
#include "model/batch_inputs.h"

namespace nn {

Predictor::Predictor(Network& net, const BoundData& inputs, uint32_t minibatch, Communicator* comm,
                     ScoreBlocks blocks)
    : net_(net),
      data_(inputs),
      minibatch_(minibatch),
      loader_(BoundData{inputs.inputs, {}, inputs.examples}, {}, 0),
      comm_(comm),
      blocks_(std::move(blocks)) {
  if (minibatch_ == 0) throw ConfigError("minibatch must be positive");
  const uint32_t rows = static_cast<uint32_t>(std::min<uint64_t>(minibatch_, data_.examples));
  if (!blocks_.layer.empty() && blocks_.columns > 0) {
    const std::string why = blocked_scoring_obstacle(net_, blocks_.layer);
    if (!why.empty())
      throw ConfigError("layer '" + blocks_.layer + "' cannot be scored in column blocks: " + why);
    blocked_ = &net_.layer(blocks_.layer);
    // The blocked layer's scores are never held whole: it gets no buffers of its own.
    net_.set_max_batch(std::max<uint32_t>(1, rows), 0, blocked_);
  } else if (net_.model_parallel()) {
    NN_CHECK(comm_ != nullptr, "a model-parallel network needs its communicator to predict");
    net_.set_max_batch(std::max<uint32_t>(1, max_rank_rows(rows, comm_->size())),
                       std::max<uint32_t>(1, rows));
  } else {
    net_.set_max_batch(rows);
  }
}

std::pair<uint32_t, uint32_t> Predictor::columns(const std::string& layer_name) {
  Layer& layer = net_.layer(layer_name);
  if (layer.sharded() && layer.kind() == LayerKind::Output)
    return {layer.shard().first, layer.shard().count};
  return {0, layer.units()};
}

RowSlice Predictor::forward_batch(uint64_t first, uint32_t rows) {
  Backend& be = net_.backend();
  ids_.resize(std::max<size_t>(ids_.size(), rows));
  std::iota(ids_.begin(), ids_.begin() + rows, static_cast<uint32_t>(first));
  loader_.assemble(ids_.data(), rows, 0, false, hb_);
  if (net_.model_parallel()) {
    // Every rank runs every batch: its rows through the whole layers, every row through its
    // slice of the split ones.
    const RowSlice slice = rank_rows(rows, comm_->rank(), comm_->size());
    const HostBatch local = slice_rows(hb_, slice.first, slice.count);
    load_inputs(net_, data_, local);
    load_full_inputs(net_, data_, hb_);
    LayerContext ctx{be, slice.count, false, 0, 0, slice.first, comm_, rows};
    net_.forward(ctx);
    return slice;
  }
  load_inputs(net_, data_, hb_);
  LayerContext ctx{be, rows, false, 0, 0};
  net_.forward(ctx, blocked_);
  return RowSlice{0, rows};
}

void Predictor::run(const std::string& layer_name,
                    const std::function<void(uint64_t, uint32_t, const float*)>& consume,
                    uint64_t begin, uint64_t end) {
  Backend& be = net_.backend();
  Layer& layer = net_.layer(layer_name);
  if (layer.has_sparse_output())
    throw ConfigError("layer '" + layer_name + "' is a sparse input; it has no scores");
  if (&layer == blocked_)
    throw ConfigError("layer '" + layer_name +
                      "' is scored in column blocks: its scores are never held whole");
  const uint64_t n = std::min<uint64_t>(data_.examples, end);
  const uint32_t cols = columns(layer_name).second;
  const bool local_columns = layer.sharded() && layer.kind() == LayerKind::Output;
  std::vector<float> scores, mine;
  for (uint64_t first = begin; first < n; first += minibatch_) {
    const uint32_t rows = static_cast<uint32_t>(std::min<uint64_t>(minibatch_, n - first));
    const RowSlice slice = forward_batch(first, rows);
    scores.resize(size_t(rows) * cols);
    if (!net_.model_parallel() || local_columns) {
      layer.download_activations(be, rows, cols, scores.data());
    } else {  // this rank's rows of every unit: gathered from every rank
      mine.resize(size_t(slice.count) * cols);
      layer.download_activations(be, slice.count, cols, mine.data());
      std::vector<size_t> counts(size_t(comm_->size()));
      for (int q = 0; q < comm_->size(); ++q)
        counts[size_t(q)] = size_t(rank_rows(rows, q, comm_->size()).count) * cols;
      comm_->all_gather_v(mine.data(), scores.data(), counts);
    }
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

void merge_top_k(Communicator& comm, const TopK& mine, uint32_t rows, uint32_t k, TopK& merged) {
  const size_t n = size_t(rows) * k;
  const bool root = comm.rank() == 0;
  const size_t p = size_t(comm.size());
  std::vector<uint32_t> index(root ? n * p : 0);
  std::vector<float> score(root ? n * p : 0);
  comm.gather(mine.index.data(), n, root ? index.data() : nullptr, 0);
  comm.gather(mine.score.data(), n, root ? score.data() : nullptr, 0);
  if (!root) return;
  merged.index.assign(n, std::numeric_limits<uint32_t>::max());
  merged.score.assign(n, -std::numeric_limits<float>::infinity());
  std::vector<std::pair<float, uint32_t>> cand;
  for (uint32_t r = 0; r < rows; ++r) {
    cand.clear();
    for (size_t q = 0; q < p; ++q)
      for (uint32_t j = 0; j < k; ++j) {
        const size_t at = q * n + size_t(r) * k + j;
        if (index[at] != std::numeric_limits<uint32_t>::max())
          cand.emplace_back(score[at], index[at]);
      }
    const size_t take = std::min<size_t>(k, cand.size());
    std::partial_sort(cand.begin(), cand.begin() + take, cand.end(),
                      [](const auto& a, const auto& b) {
                        return a.first > b.first || (a.first == b.first && a.second < b.second);
                      });
    for (size_t j = 0; j < take; ++j) {
      merged.score[size_t(r) * k + j] = cand[j].first;
      merged.index[size_t(r) * k + j] = cand[j].second;
    }
  }
}

void sorted_items(const ExampleSet& ds, uint64_t e, std::vector<uint32_t>& out) {
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
