// Forward-only evaluation for serving: runs a trained network over a dataset in minibatches and
// hands each batch's scores for one layer to the caller (run), or only each example's top K after
// its filters, selected on the backend so that k results per row leave the device (run_top_k),
// for a very wide layer optionally a block of columns at a time (predict/blocked_top_k.h);
// plus host-side top-K selection and ranking metrics (precision, recall, NDCG at 1..K).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "backend/device_array.h"
#include "distributed/row_split.h"
#include "model/batch_loader.h"
#include "model/network.h"
#include "predict/blocked_top_k.h"

namespace nn {

// Predictor::run_top_k scoring one layer in column blocks (predict/blocked_top_k.h) instead of
// all its units at once; that layer then gets no activations of its own, so run() cannot hand
// its scores over.
struct ScoreBlocks {
  std::string layer;     // "" : none
  uint32_t columns = 0;  // columns per block
};

class Predictor {
 public:
  // With a network that has model-parallel layers, `comm` (its ranks) is required: every rank
  // then runs every minibatch together, each taking its rows for the whole layers.
  // `blocks` names the layer run_top_k scores in column blocks (only one that
  // blocked_scoring_obstacle allows; no blocks with model-parallel layers).
  Predictor(Network& net, const BoundData& inputs, uint32_t minibatch, Communicator* comm = nullptr,
            ScoreBlocks blocks = {});

  // Calls `consume(first_example, rows, scores)` for each batch, where scores is
  // [rows][columns(layer).second] on the host: the layer's units from columns(layer).first.
  // Examples are visited in dataset order; only those in [begin, end) when a range is given
  // (one rank's share under mpirun). With model-parallel layers every rank gets every row:
  // a split Output layer gives this rank's columns, any other layer all of them.
  void run(const std::string& layer,
           const std::function<void(uint64_t first, uint32_t rows, const float* scores)>& consume,
           uint64_t begin = 0, uint64_t end = UINT64_MAX);
  // {first unit, units} of the scores run() hands over for `layer`.
  std::pair<uint32_t, uint32_t> columns(const std::string& layer);

  // Like run(), but hands over only each example's k best units of `layer` among
  // [0, valid_cols) after its filters (`filter(example)`; null: none), selected on the backend
  // (Backend::top_k_filtered), so the scores never leave it: consume(first, rows, top) gets
  // rows * k global unit numbers (UINT32_MAX past a row's candidates) and their filtered scores.
  // With model-parallel layers: a split Output layer is ranked by every rank over its columns
  // and the candidates merged on rank 0 (merge_top_k), where alone consume is called; any other
  // layer is ranked by each rank over its rows, and every rank gets every row. Collective then.
  // The layer of the constructor's ScoreBlocks is scored a block of columns at a time (the
  // same results, without holding every score of a minibatch).
  void run_top_k(const std::string& layer, uint32_t k, uint32_t valid_cols,
                 const std::function<RowFilter(uint64_t example)>& filter,
                 const std::function<void(uint64_t first, uint32_t rows, const TopK& top)>& consume,
                 uint64_t begin = 0, uint64_t end = UINT64_MAX);

 private:
  // Loads examples [first, first + rows) and runs the forward pass; returns this rank's rows of
  // the batch (all of them without model parallelism).
  RowSlice forward_batch(uint64_t first, uint32_t rows);

  Network& net_;
  BoundData data_;
  uint32_t minibatch_;
  BatchLoader loader_;
  Communicator* comm_;
  std::vector<uint32_t> ids_;
  HostBatch hb_;
  ScoreBlocks blocks_;
  Layer* blocked_ = nullptr;  // the layer of blocks_, when there is one
  TopKSelector selector_;     // run_top_k's selection on the backend
  BlockedTopK blocked_top_;
};

// Model parallelism: merges every rank's top-k candidates (`mine`, global column indices) into
// the global top k per row on rank 0 (ties: lower index first, as top_k_rows). Collective;
// `merged` is filled on rank 0 only.
void merge_top_k(Communicator& comm, const TopK& mine, uint32_t rows, uint32_t k, TopK& merged);

// Per row, the k best columns among [0, valid_cols) in descending score order (ties: lower
// index first), skipping columns listed in `exclude` for that row (may be null). Parallel over
// `threads` OpenMP threads (0: OpenMP's default). exclude(row) returns a sorted list of columns
// to skip.
void top_k_rows(const float* scores, uint32_t rows, uint32_t cols, uint32_t valid_cols, uint32_t k,
                const std::function<const std::vector<uint32_t>*(uint32_t row)>& exclude, TopK& out,
                int threads = 0);

// The distinct columns stored for example `e` of a sparse dataset, ascending (the held-out
// items of a ranking metric, or the items to leave out of a ranking).
void sorted_items(const ExampleSet& ds, uint64_t e, std::vector<uint32_t>& out);

// Accumulates DSSTNE-style ranking metrics at cut-offs 1..K (as the Predict command of DSSTNE's
// encoder tool, utils/main.cpp, with the changes in docs/dsstne-compatibility.md, "Metrics"):
// precision@j, recall@j (hits / min(j, |truth|)), NDCG@j. Examples with no truth are skipped.
class RankingMetrics {
 public:
  explicit RankingMetrics(uint32_t k) : k_(k), precision_(k), recall_(k), ndcg_(k) {}
  void add(const uint32_t* ranked, uint32_t count, const std::vector<uint32_t>& truth_sorted);
  uint32_t k() const { return k_; }
  uint64_t examples() const { return examples_; }
  double precision(uint32_t j) const { return examples_ ? precision_[j - 1] / examples_ : 0; }
  double recall(uint32_t j) const { return examples_ ? recall_[j - 1] / examples_ : 0; }
  double ndcg(uint32_t j) const { return examples_ ? ndcg_[j - 1] / examples_ : 0; }
  // The accumulated sums as one array (examples, then precision, recall and NDCG sums), so
  // processes that scored different examples can add theirs up (add_sums).
  std::vector<double> sums() const;
  void add_sums(const std::vector<double>& sums);

 private:
  uint32_t k_;
  uint64_t examples_ = 0;
  std::vector<double> precision_, recall_, ndcg_;
};

}  // namespace nn
