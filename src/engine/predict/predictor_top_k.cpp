// Predictor::run_top_k: each example's top K selected on the backend (Backend::top_k_filtered)
// after its exclusion and multiplier filters, so that only k results per row are read back
// instead of every score of a layer that may have hundreds of thousands of units; such a layer
// may also be scored in column blocks (predict/blocked_top_k.h), so that its scores are never
// all held at once.
#include <algorithm>

#include "core/error.h"
#include "layers/fully_connected_layer.h"
#include "predict/predictor.h"

namespace nn {

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
    Backend& be = net_.backend();
    if (&layer == blocked_) {
      // Every layer but this one ran; its scores are computed a block of columns at a time
      // from its sources' activations and ranked block by block.
      auto& fc = static_cast<FullyConnectedLayer&>(layer);
      const LayerContext ctx{be, rows, false, 0, 0};
      // Padded rows: blocks over the whole stride, so that the last one ends where the layer's
      // product does (the tile promise); the padding is never ranked (valid_local <= units).
      blocked_top_.run(
          be, rows, layer.stride(), blocks_.columns, be.gemm_column_tile(), k, valid_local, first,
          filter,
          [&](uint32_t col, uint32_t count, float* out) {
            fc.forward_columns(ctx, col, count, out);
          },
          top);
      consume(first, rows, top);
    } else if (!model_parallel) {
      selector_.select(be, layer.activations(), rows, 0, cols, k, valid_local, first, filter, top,
                       layer.kernel_row_stride());
      consume(first, rows, top);
    } else if (local_columns) {
      // Every row over this rank's columns; rank 0 merges the ranks' candidates.
      selector_.select(be, layer.activations(), rows, col_first, cols, k, valid_local, first,
                       filter, mine, layer.kernel_row_stride());
      merge_top_k(*comm_, mine, rows, k, top);
      if (comm_->rank() == 0) consume(first, rows, top);
    } else {
      // This rank's rows over every column; every rank gets every row's selection.
      selector_.select(be, layer.activations(), slice.count, 0, cols, k, valid_local,
                       first + slice.first, filter, mine, layer.kernel_row_stride());
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
