// Target upload for loss computation.
#include "train/target_buffer.h"

#include <string>

#include "core/error.h"

namespace nn {

const TargetView& TargetBuffer::load_sparse(Backend& backend, const SparseBatch& b, uint32_t units,
                                            unsigned set) {
  NN_CHECK(set < 2, "target buffer set out of range");
  Buffers& s = sets_[set];
  // Targets usually arrive with each example's items ascending (nn-generate writes them so): a
  // device backend then needs no sort of the batch's entries by (row, index) for the loss.
  bool sorted = true;
  for (uint32_t r = 0; r < b.rows && r + 1 < b.row_ptr.size(); ++r)
    for (uint32_t e = b.row_ptr[r]; e < b.row_ptr[r + 1]; ++e) {
      if (b.index[e] >= units)
        throw DataError("loss: sparse targets of batch row " + std::to_string(r) + ": index " +
                        std::to_string(b.index[e]) + " is outside the output layer's " +
                        std::to_string(units) + " units");
      if (e > b.row_ptr[r] && b.index[e] < b.index[e - 1]) sorted = false;
    }
  s.row_ptr.assign(backend, b.row_ptr);
  s.index.assign(backend, b.index);
  s.value.assign(backend, b.value);
  s.row_weight.assign(backend, b.row_weight);
  view_ = TargetView{};
  view_.sparse = true;
  view_.sp.rows = b.rows;
  view_.sp.cols = b.cols;
  view_.sp.row_ptr = s.row_ptr.data();
  view_.sp.index = s.index.data();
  view_.sp.value = b.value.empty() ? nullptr : s.value.data();
  view_.sp.row_weight = b.row_weight.empty() ? nullptr : s.row_weight.data();
  view_.sp.nnz = b.index.size();
  view_.sp.rows_sorted = sorted;
  view_.ignore_zero = b.ignore_zero;
  view_.row_weight = view_.sp.row_weight;
  return view_;
}

const TargetView& TargetBuffer::load_dense(Backend& backend, const std::vector<float>& values,
                                           uint32_t cols, const std::vector<float>& weights,
                                           unsigned set) {
  NN_CHECK(set < 2, "target buffer set out of range");
  Buffers& s = sets_[set];
  s.dense.assign(backend, values);
  s.row_weight.assign(backend, weights);
  view_ = TargetView{};
  view_.sparse = false;
  view_.dense = s.dense.data();
  view_.row_weight = weights.empty() ? nullptr : s.row_weight.data();
  (void)cols;
  return view_;
}

}  // namespace nn
