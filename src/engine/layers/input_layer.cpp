// Input layer: uploads minibatches; applies dropout to dense inputs in training.
#include "layers/input_layer.h"

#include "core/error.h"

namespace nn {

InputLayer::InputLayer(const LayerSpec& spec, uint32_t index, bool sparse)
    : Layer(spec, index), sparse_(sparse) {}

void InputLayer::allocate(Backend& backend, uint32_t max_rows) {
  if (!sparse_) Layer::allocate(backend, max_rows);
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
  if (!sparse_ && ctx.training && spec_.p_dropout > 0.0f)
    ctx.backend.dropout(a_.data(), size_t(ctx.rows) * units(), spec_.p_dropout, ctx.seed,
                        dropout_stream(ctx, index(), units()));
}

}  // namespace nn
