// Minibatches gathered from datasets in host memory, in the form the backends consume:
// sparse batches as CSR (row_ptr/index/value) and dense batches as row-major [rows][features].
#pragma once

#include <cstdint>
#include <vector>

#include "data/dataset.h"

namespace nn {

struct SparseBatch {
  uint32_t rows = 0;
  uint32_t cols = 0;
  std::vector<uint32_t> row_ptr;  // rows + 1 offsets
  std::vector<uint32_t> index;    // column of each entry
  std::vector<float> value;       // empty => every entry is 1
  std::vector<float> row_weight;  // empty => every example weight is 1
  bool ignore_zero = false;       // SparseIgnoreZero: only stored entries count in losses
  // Filled by index_touched() (row-sparse gradients, train/row_sparse.h): the distinct indices,
  // ascending, and each entry's position among them. `indexed` says they belong to this batch.
  bool indexed = false;
  std::vector<uint32_t> touched;
  std::vector<uint32_t> slot;
  // The entries grouped by slot (SparseView::slot_ptr/slot_entry/slot_row, in one array so that
  // they travel to the device in one copy): touched.size() + 1 offsets, then nnz entry numbers,
  // then their nnz rows.
  std::vector<uint32_t> slot_groups;
  uint64_t nnz() const { return index.size(); }
};

// Fills b.touched, b.slot and b.slot_groups from b.index. `mark` is scratch of at least b.cols
// entries, all zero on entry and on return (kept by the caller so a wide catalog is not cleared
// per batch).
void index_touched(SparseBatch& b, std::vector<uint32_t>& mark);
// Data parallelism: b (indexed) takes `all` as its touched list, the ascending union of every
// rank's (each of b's touched indices is in it); b.slot and b.slot_groups are remapped to it.
// `mark` as for index_touched.
void widen_touched(SparseBatch& b, const std::vector<uint32_t>& all, std::vector<uint32_t>& mark);

// Gathers examples ids[0..count) of a sparse dataset. Duplicate indices inside an example are kept.
void gather_sparse(const ExampleSet& ds, const uint32_t* ids, uint32_t count, SparseBatch& out);

// Gathers examples of a dense dataset into out[count][features()] as floats.
// As an input, uint8 data becomes x/256 - 0.5 and int8 data x/128 (DSSTNE's normalisation);
// as a target, uint8 becomes x/256 and int8 x/128. Dense Boolean (class id) data becomes one-hot.
void gather_dense(const ExampleSet& ds, const uint32_t* ids, uint32_t count, bool as_input,
                  float* out);

// Input row normalisation (the Input layer key "Normalize": "L2"): divides every example's values
// by the Euclidean length of its row, so each row has length 1 (a row of zeros stays as it is).
// A sparse row's length is taken over its stored entries (an indicator row of n items has
// length sqrt(n)); the values are materialised for indicator data. Example weights are not
// touched. Applied before denoising, so a denoised row is a normalised row with entries dropped
// and the survivors scaled by 1/(1-p), as in Mult-DAE and Mult-VAE.
void normalize_rows_l2(SparseBatch& b);
void normalize_rows_l2(float* x, uint32_t rows, uint64_t cols);

// Per-example weights for a batch (empty when the dataset is not Weighted).
void gather_weights(const ExampleSet& ds, const uint32_t* ids, uint32_t count,
                    std::vector<float>& out);

}  // namespace nn
