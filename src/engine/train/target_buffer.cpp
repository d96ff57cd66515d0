// Target upload for loss computation.
#include "train/target_buffer.h"

namespace nn {

const TargetView& TargetBuffer::load_sparse(Backend& backend, const SparseBatch& b) {
  row_ptr_.assign(backend, b.row_ptr);
  index_.assign(backend, b.index);
  value_.assign(backend, b.value);
  row_weight_.assign(backend, b.row_weight);
  view_ = TargetView{};
  view_.sparse = true;
  view_.sp.rows = b.rows;
  view_.sp.cols = b.cols;
  view_.sp.row_ptr = row_ptr_.data();
  view_.sp.index = index_.data();
  view_.sp.value = b.value.empty() ? nullptr : value_.data();
  view_.sp.row_weight = b.row_weight.empty() ? nullptr : row_weight_.data();
  view_.sp.nnz = b.index.size();
  view_.ignore_zero = b.ignore_zero;
  view_.row_weight = view_.sp.row_weight;
  return view_;
}

const TargetView& TargetBuffer::load_dense(Backend& backend, const std::vector<float>& values,
                                           uint32_t cols, const std::vector<float>& weights) {
  dense_.assign(backend, values);
  row_weight_.assign(backend, weights);
  view_ = TargetView{};
  view_.sparse = false;
  view_.dense = dense_.data();
  view_.row_weight = weights.empty() ? nullptr : row_weight_.data();
  (void)cols;
  return view_;
}

}  // namespace nn
