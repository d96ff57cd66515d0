// Input layer: uploads minibatches; applies dropout to dense inputs in training.
#include "layers/input_layer.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace nn {

InputLayer::InputLayer(const LayerSpec& spec, uint32_t index, bool sparse)
    : Layer(spec, index), sparse_(sparse) {}

void InputLayer::allocate(Backend& backend, uint32_t max_rows) {
  if (!sparse_) Layer::allocate(backend, max_rows);
  if (!sparse_ && feeds_sharded_)
    full_a_.resize(backend, size_t(std::max(max_global_rows_, max_rows)) * units());
}

namespace {

// Uploads a dense batch into `target` (this rank's rows or the whole batch).
void upload_dense(Backend& backend, DeviceArray<float>& target, const float* host, uint32_t rows,
                  uint32_t units, const std::string& what) {
  const size_t n = size_t(rows) * units;
  NN_CHECK(n <= target.size(), "batch larger than allocated for " + what);
  backend.upload(target.data(), host, n * sizeof(float));
}

// Uploads a CSR batch into the four arrays and points `view` at them.
void upload_sparse(Backend& backend, const SparseBatch& batch, uint32_t units,
                   DeviceArray<uint32_t>& row_ptr, DeviceArray<uint32_t>& index,
                   DeviceArray<float>& value, DeviceArray<float>& row_weight, SparseView& view) {
  row_ptr.assign(backend, batch.row_ptr);
  index.assign(backend, batch.index);
  value.assign(backend, batch.value);
  row_weight.assign(backend, batch.row_weight);
  view.rows = batch.rows;
  view.cols = units;
  view.row_ptr = row_ptr.data();
  view.index = index.data();
  view.value = batch.value.empty() ? nullptr : value.data();
  view.row_weight = batch.row_weight.empty() ? nullptr : row_weight.data();
  view.nnz = batch.index.size();
  view.touched = view.slot = nullptr;
  view.touched_count = 0;
  view.slot_ptr = view.slot_entry = view.slot_row = nullptr;
}

// An indexed batch's distinct items, slots and slot groups (data/batch.h index_touched) added to
// `view` (row-sparse gradients, train/row_sparse.h).
void upload_index(Backend& backend, const SparseBatch& batch, DeviceArray<uint32_t>& touched,
                  DeviceArray<uint32_t>& slot, DeviceArray<uint32_t>& slot_groups,
                  SparseView& view) {
  if (!batch.indexed) return;
  touched.assign(backend, batch.touched);
  slot.assign(backend, batch.slot);
  view.touched = touched.data();
  view.slot = slot.data();
  view.touched_count = static_cast<uint32_t>(batch.touched.size());
  if (batch.slot_groups.size() == batch.touched.size() + 1 + 2 * batch.index.size()) {
    slot_groups.assign(backend, batch.slot_groups);
    view.set_slot_groups(slot_groups.data());
  }
}

}  // namespace

void InputLayer::load_full_dense(Backend& backend, const float* host, uint32_t rows) {
  NN_CHECK(!sparse_, "dense batch for sparse input layer " + name());
  upload_dense(backend, full_a_, host, rows, units(), "the whole batch of layer " + name());
}

void InputLayer::load_full_sparse(Backend& backend, const SparseBatch& batch) {
  NN_CHECK(sparse_, "sparse batch for dense input layer " + name());
  upload_sparse(backend, batch, units(), full_row_ptr_, full_index_, full_value_, full_row_weight_,
                full_view_);
  upload_index(backend, batch, full_touched_, full_slot_, full_slot_groups_, full_view_);
}

void InputLayer::load_dense(Backend& backend, const float* host, uint32_t rows, unsigned set) {
  NN_CHECK(!sparse_, "dense batch for sparse input layer " + name());
  NN_CHECK(set < 2, "input buffer set out of range");
  if (set != dense_set_) {
    // The activations become the other set's array (same size; made on first use).
    if (dense_other_.size() != a_.size()) dense_other_.resize(backend, a_.size());
    std::swap(a_, dense_other_);
    dense_set_ = set;
  }
  upload_dense(backend, a_, host, rows, units(), "layer " + name());
}

void InputLayer::load_sparse(Backend& backend, const SparseBatch& batch, unsigned set) {
  NN_CHECK(sparse_, "sparse batch for dense input layer " + name());
  NN_CHECK(set < 2, "input buffer set out of range");
  SparseBuffers& b = sets_[set];
  upload_sparse(backend, batch, units(), b.row_ptr, b.index, b.value, b.row_weight, view_);
  upload_index(backend, batch, b.touched, b.slot, b.slot_groups, view_);
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
