// Input layer: uploads minibatches; applies dropout to dense inputs in training.
#include "layers/input_layer.h"

#include <algorithm>

#include "core/error.h"

namespace nn {

InputLayer::InputLayer(const LayerSpec& spec, uint32_t index, bool sparse)
    : Layer(spec, index), sparse_(sparse) {}

void InputLayer::allocate(Backend& backend, uint32_t max_rows) {
  if (!sparse_) Layer::allocate(backend, max_rows);
  if (!sparse_ && feeds_sharded_)
    full_a_.resize(backend, size_t(std::max(max_global_rows_, max_rows)) * units());
}

void InputLayer::load_full_dense(Backend& backend, const float* host, uint32_t rows) {
  NN_CHECK(!sparse_, "dense batch for sparse input layer " + name());
  const size_t n = size_t(rows) * units();
  NN_CHECK(n <= full_a_.size(), "whole batch larger than allocated for layer " + name());
  backend.upload(full_a_.data(), host, n * sizeof(float));
}

void InputLayer::load_full_sparse(Backend& backend, const SparseBatch& batch) {
  NN_CHECK(sparse_, "sparse batch for dense input layer " + name());
  full_row_ptr_.assign(backend, batch.row_ptr);
  full_index_.assign(backend, batch.index);
  full_value_.assign(backend, batch.value);
  full_row_weight_.assign(backend, batch.row_weight);
  full_view_.rows = batch.rows;
  full_view_.cols = units();
  full_view_.row_ptr = full_row_ptr_.data();
  full_view_.index = full_index_.data();
  full_view_.value = batch.value.empty() ? nullptr : full_value_.data();
  full_view_.row_weight = batch.row_weight.empty() ? nullptr : full_row_weight_.data();
  full_view_.nnz = batch.index.size();
}

void InputLayer::load_dense(Backend& backend, const float* host, uint32_t rows) {
  NN_CHECK(!sparse_, "dense batch for sparse input layer " + name());
  const size_t n = size_t(rows) * units();
  NN_CHECK(n <= a_.size(), "batch larger than allocated for layer " + name());
  backend.upload(a_.data(), host, n * sizeof(float));
}

void InputLayer::load_sparse(Backend& backend, const SparseBatch& batch) {
  NN_CHECK(sparse_, "sparse batch for dense input layer " + name());
  row_ptr_.assign(backend, batch.row_ptr);
  index_.assign(backend, batch.index);
  value_.assign(backend, batch.value);
  row_weight_.assign(backend, batch.row_weight);
  view_.rows = batch.rows;
  view_.cols = units();
  view_.row_ptr = row_ptr_.data();
  view_.index = index_.data();
  view_.value = batch.value.empty() ? nullptr : value_.data();
  view_.row_weight = batch.row_weight.empty() ? nullptr : row_weight_.data();
  view_.nnz = batch.index.size();
}

void InputLayer::forward(const LayerContext& ctx) {
  if (sparse_ || !ctx.training || spec_.p_dropout <= 0.0f) return;
  ctx.backend.dropout(a_.data(), size_t(ctx.rows) * units(), spec_.p_dropout, ctx.seed,
                      dropout_stream(ctx, index(), units()));
  if (feeds_sharded_) {
    LayerContext whole = ctx;  // the global batch: rows from position 0
    whole.rows = ctx.all_rows();
    whole.row_offset = 0;
    ctx.backend.dropout(full_a_.data(), size_t(whole.rows) * units(), spec_.p_dropout, ctx.seed,
                        dropout_stream(whole, index(), units()));
  }
}

}  // namespace nn
