// Targets of one output layer for the current minibatch, in backend memory.
#pragma once

#include "backend/device_array.h"
#include "data/batch.h"

namespace nn {

class TargetBuffer {
 public:
  // Uploads a sparse or dense host batch and returns the view for the loss kernels. A sparse
  // target index of `units` or more (the output layer's width) is a DataError here, on the host,
  // so that no device backend has to stop its stream to report it. Two buffer sets, as the
  // input layers keep (InputLayer::load_sparse): `set` is 0 or 1.
  const TargetView& load_sparse(Backend& backend, const SparseBatch& batch, uint32_t units,
                                unsigned set = 0);
  const TargetView& load_dense(Backend& backend, const std::vector<float>& values, uint32_t cols,
                               const std::vector<float>& weights, unsigned set = 0);
  const TargetView& view() const { return view_; }
  // Uploads per-row target sums (model-parallel SoftMax outputs, TargetView::row_sum).
  const float* load_row_sum(Backend& backend, const std::vector<float>& sums) {
    row_sum_.assign(backend, sums);
    return row_sum_.data();
  }

 private:
  struct Buffers {
    DeviceArray<uint32_t> row_ptr, index;
    DeviceArray<float> value, row_weight, dense;
  };
  Buffers sets_[2];
  DeviceArray<float> row_sum_;
  TargetView view_;
};

}  // namespace nn
