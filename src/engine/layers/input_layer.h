// Input layer: holds the current minibatch of its dataset, dense ([rows][units] floats) or
// sparse (CSR, never densified). Dense inputs may use dropout (pDropout) in training; sparse
// inputs get denoising/dropout while the batch is assembled on the host.
#pragma once

#include "data/batch.h"
#include "layers/layer.h"

namespace nn {

class InputLayer : public Layer {
 public:
  InputLayer(const LayerSpec& spec, uint32_t index, bool sparse);

  void allocate(Backend& backend, uint32_t max_rows) override;
  bool has_sparse_output() const override { return sparse_; }
  const SparseView& sparse_output() const override { return view_; }
  bool needs_delta() const override { return false; }

  // Copies a host batch into backend memory: into buffer set `set` (0 or 1). The layer keeps two
  // sets so that the training loop can copy a step's batch while the step before, which reads
  // the other set, still runs (Backend::begin_side_uploads); the passes read the set loaded last.
  void load_dense(Backend& backend, const float* host, uint32_t rows, unsigned set = 0);
  void load_sparse(Backend& backend, const SparseBatch& batch, unsigned set = 0);

  // Model parallelism: a layer that feeds a sharded layer (feeds_sharded()) also holds the
  // whole global minibatch, every rank's rows, which the sharded layer reads without any
  // communication. Dropout on a dense one draws the masks of the global row positions, so the
  // rows this rank also holds in activations() get the same masks there.
  void load_full_dense(Backend& backend, const float* host, uint32_t rows);
  void load_full_sparse(Backend& backend, const SparseBatch& batch);
  const float* full_activations() const { return full_a_.data(); }
  const SparseView& full_sparse_output() const { return full_view_; }

  void forward(const LayerContext& ctx) override;
  void backward(const LayerContext&) override {}

 private:
  bool sparse_;
  // A sparse batch's arrays, and an indexed batch's (data/batch.h index_touched).
  struct SparseBuffers {
    DeviceArray<uint32_t> row_ptr, index;
    DeviceArray<float> value, row_weight;
    DeviceArray<uint32_t> touched, slot, slot_groups;
  };
  SparseBuffers sets_[2];
  SparseView view_;  // of the set loaded last
  // A dense input's other set (the activations a_ hold the set loaded last, dense_set_).
  DeviceArray<float> dense_other_;
  unsigned dense_set_ = 0;
  DeviceArray<float> full_a_;
  DeviceArray<uint32_t> full_row_ptr_, full_index_;
  DeviceArray<float> full_value_, full_row_weight_;
  DeviceArray<uint32_t> full_touched_, full_slot_, full_slot_groups_;
  SparseView full_view_;
};

}  // namespace nn
