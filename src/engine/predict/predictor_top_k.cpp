// Predictor::run_top_k: each example's top K selected on the backend (Backend::top_k_filtered)
// after its exclusion and multiplier filters, so that only k results per row are read back
// instead of every score of a layer that may have hundreds of thousands of units.
#include <algorithm>
#include <limits>

#include "core/error.h"
#include "predict/predictor.h"

namespace nn {
namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();

}  // namespace

void Predictor::select_on_backend(Layer& layer, uint32_t rows, uint32_t col_first, uint32_t cols,
                                  uint32_t k, uint32_t valid_cols, uint64_t first_example,
                                  const std::function<RowFilter(uint64_t)>& filter, TopK& out) {
  Backend& be = net_.backend();
  const size_t n = size_t(rows) * k;
  out.index.resize(n);
  out.score.resize(n);
  if (n == 0) return;
  // The rows' filters as CSR, restricted to the columns at hand and counted from col_first.
  ex_ptr_.assign(1, 0);
  sc_ptr_.assign(1, 0);
  ex_index_.clear();
  sc_index_.clear();
  sc_value_.clear();
  const uint32_t col_end = col_first + cols;
  for (uint32_t r = 0; r < rows; ++r) {
    if (filter) {
      const RowFilter f = filter(first_example + r);
      const uint32_t* ex_end = f.exclude + f.excluded;
      const uint32_t* lo = std::lower_bound(f.exclude, ex_end, col_first);
      for (const uint32_t* p = lo; p < ex_end && *p < col_end; ++p)
        ex_index_.push_back(*p - col_first);
      const uint32_t* sc_end = f.scale_index + f.scaled;
      for (const uint32_t* p = std::lower_bound(f.scale_index, sc_end, col_first);
           p < sc_end && *p < col_end; ++p) {
        sc_index_.push_back(*p - col_first);
        sc_value_.push_back(f.scale_value[p - f.scale_index]);
      }
    }
    if (ex_index_.size() > kNone || sc_index_.size() > kNone)
      throw DataError(
          "top-K filters: more than 2^32 - 1 entries in one minibatch; use a smaller "
          "minibatch");
    ex_ptr_.push_back(static_cast<uint32_t>(ex_index_.size()));
    sc_ptr_.push_back(static_cast<uint32_t>(sc_index_.size()));
  }
  TopKFilter tf;
  if (!ex_index_.empty()) {
    d_ex_ptr_.assign(be, ex_ptr_);
    d_ex_index_.assign(be, ex_index_);
    tf.exclude_ptr = d_ex_ptr_.data();
    tf.exclude_index = d_ex_index_.data();
  }
  if (!sc_index_.empty()) {
    d_sc_ptr_.assign(be, sc_ptr_);
    d_sc_index_.assign(be, sc_index_);
    d_sc_value_.assign(be, sc_value_);
    tf.scale_ptr = d_sc_ptr_.data();
    tf.scale_index = d_sc_index_.data();
    tf.scale_value = d_sc_value_.data();
  }
  d_top_index_.resize(be, n);
  d_top_score_.resize(be, n);
  be.top_k_filtered(layer.activations(), rows, cols, valid_cols, k, tf, d_top_score_.data(),
                    d_top_index_.data());
  be.download(out.index.data(), d_top_index_.data(), n * sizeof(uint32_t));
  be.download(out.score.data(), d_top_score_.data(), n * sizeof(float));
  if (col_first > 0)
    for (uint32_t& i : out.index)
      if (i != kNone) i += col_first;
}

void Predictor::run_top_k(const std::string& layer_name, uint32_t k, uint32_t valid_cols,
                          const std::function<RowFilter(uint64_t)>& filter,
                          const std::function<void(uint64_t, uint32_t, const TopK&)>& consume,
                          uint64_t begin, uint64_t end) {
  Layer& layer = net_.layer(layer_name);
  if (layer.has_sparse_output())
    throw ConfigError("layer '" + layer_name + "' is a sparse input; it has no scores");
  const auto [col_first, cols] = columns(layer_name);
  const uint32_t valid_local = valid_cols > col_first ? std::min(valid_cols - col_first, cols) : 0;
  const bool model_parallel = net_.model_parallel();
  const bool local_columns = layer.sharded() && layer.kind() == LayerKind::Output;
  const uint64_t n = std::min<uint64_t>(data_.examples, end);
  TopK top, mine;
  for (uint64_t first = begin; first < n; first += minibatch_) {
    const uint32_t rows = static_cast<uint32_t>(std::min<uint64_t>(minibatch_, n - first));
    const RowSlice slice = forward_batch(first, rows);
    if (!model_parallel) {
      select_on_backend(layer, rows, 0, cols, k, valid_local, first, filter, top);
      consume(first, rows, top);
    } else if (local_columns) {
      // Every row over this rank's columns; rank 0 merges the ranks' candidates.
      select_on_backend(layer, rows, col_first, cols, k, valid_local, first, filter, mine);
      merge_top_k(*comm_, mine, rows, k, top);
      if (comm_->rank() == 0) consume(first, rows, top);
    } else {
      // This rank's rows over every column; every rank gets every row's selection.
      select_on_backend(layer, slice.count, 0, cols, k, valid_local, first + slice.first, filter,
                        mine);
      std::vector<size_t> counts(size_t(comm_->size()));
      for (int q = 0; q < comm_->size(); ++q)
        counts[size_t(q)] = size_t(rank_rows(rows, q, comm_->size()).count) * k;
      top.index.resize(size_t(rows) * k);
      top.score.resize(size_t(rows) * k);
      comm_->all_gather_v(mine.index.data(), top.index.data(), counts);
      comm_->all_gather_v(mine.score.data(), top.score.data(), counts);
      consume(first, rows, top);
    }
  }
}

}  // namespace nn
