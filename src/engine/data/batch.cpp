// Minibatch assembly from host datasets. Runs once per minibatch on the training path, so the
// output vectors are reused (clear + insert keeps their capacity) and nothing is allocated per
// entry. Datasets are assumed validated (ExampleSet::validate); only example ids are checked here.
#include "data/batch.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"

namespace nn {

namespace {

void check_ids(const ExampleSet& ds, const uint32_t* ids, uint32_t count, const char* fn) {
  for (uint32_t i = 0; i < count; ++i)
    if (ids[i] >= ds.examples)
      throw DataError(std::string(fn) + ": dataset \"" + ds.name + "\": example id " +
                      std::to_string(ids[i]) + " at batch position " + std::to_string(i) +
                      " is out of range; the dataset has " + std::to_string(ds.examples) +
                      " examples");
}

}  // namespace

void gather_sparse(const ExampleSet& ds, const uint32_t* ids, uint32_t count, SparseBatch& out) {
  out.indexed = false;
  if (!ds.is_sparse())
    throw DataError("gather_sparse: dataset \"" + ds.name + "\" is dense, not Sparse");
  check_ids(ds, ids, count, "gather_sparse");
  if (ds.features() > std::numeric_limits<uint32_t>::max())
    throw DataError("gather_sparse: dataset \"" + ds.name + "\": " + std::to_string(ds.features()) +
                    " features do not fit a 32-bit column index");

  out.rows = count;
  out.cols = static_cast<uint32_t>(ds.features());
  out.ignore_zero = ds.sparse_ignore_zero();
  out.row_ptr.resize(size_t(count) + 1);

  // First pass: row offsets, so the entry arrays are sized once.
  uint64_t total = 0;
  out.row_ptr[0] = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t r = ds.row(ids[i]);
    total += ds.sparse_end[r] - ds.sparse_start[r];
    if (total > std::numeric_limits<uint32_t>::max())
      throw DataError("gather_sparse: dataset \"" + ds.name +
                      "\": batch has more than 2^32-1 entries; use a smaller batch");
    out.row_ptr[i + 1] = static_cast<uint32_t>(total);
  }

  const bool values = !ds.is_boolean();
  out.index.resize(total);
  if (values)
    out.value.resize(total);
  else
    out.value.clear();
  uint32_t* idx = out.index.data();
  float* val = out.value.data();
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t r = ds.row(ids[i]);
    const uint64_t s = ds.sparse_start[r], n = ds.sparse_end[r] - s;
    const uint32_t at = out.row_ptr[i];
    if (n == 0) continue;  // an empty example: `idx` may be null when the whole batch is empty
    std::memcpy(idx + at, ds.sparse_index.data() + s, n * sizeof(uint32_t));
    if (values) std::memcpy(val + at, ds.sparse_value.data() + s, n * sizeof(float));
  }
  gather_weights(ds, ids, count, out.row_weight);
}

void gather_dense(const ExampleSet& ds, const uint32_t* ids, uint32_t count, bool as_input,
                  float* out) {
  if (ds.is_sparse())
    throw DataError("gather_dense: dataset \"" + ds.name + "\" is Sparse, not dense");
  check_ids(ds, ids, count, "gather_dense");
  const uint64_t f = ds.features();

  if (ds.is_boolean()) {
    // Compressed one-hot: one class id per row (validated to be in range).
    std::fill(out, out + uint64_t(count) * f, 0.0f);
    for (uint32_t i = 0; i < count; ++i)
      out[uint64_t(i) * f + static_cast<uint64_t>(ds.dense[ds.row(ids[i])])] = 1.0f;
    return;
  }

  // DSSTNE's normalisation of 8-bit data: y = x * scale + shift.
  float scale = 1.0f, shift = 0.0f;
  if (ds.type == DataType::UChar || ds.type == DataType::RGB8) {
    scale = 1.0f / 256.0f;
    shift = as_input ? -0.5f : 0.0f;
  } else if (ds.type == DataType::Char) {
    scale = 1.0f / 128.0f;
  }
  const bool identity = scale == 1.0f && shift == 0.0f;
  for (uint32_t i = 0; i < count; ++i) {
    const float* src = ds.dense.data() + ds.row(ids[i]) * f;
    float* dst = out + uint64_t(i) * f;
    if (identity) {
      std::memcpy(dst, src, f * sizeof(float));
    } else {
      for (uint64_t k = 0; k < f; ++k) dst[k] = src[k] * scale + shift;
    }
  }
}

void gather_weights(const ExampleSet& ds, const uint32_t* ids, uint32_t count,
                    std::vector<float>& out) {
  if (!ds.is_weighted()) {
    out.clear();
    return;
  }
  check_ids(ds, ids, count, "gather_weights");
  out.resize(count);
  // Weights belong to examples, not to the unique rows an Indexed dataset shares.
  for (uint32_t i = 0; i < count; ++i) out[i] = ds.example_weight[ids[i]];
}

void normalize_rows_l2(SparseBatch& b) {
  if (b.value.empty()) b.value.assign(b.index.size(), 1.0f);
  for (uint32_t r = 0; r < b.rows; ++r) {
    double sq = 0.0;
    for (uint32_t e = b.row_ptr[r]; e < b.row_ptr[r + 1]; ++e)
      sq += double(b.value[e]) * b.value[e];
    if (!(sq > 0.0)) continue;
    const double inv = 1.0 / std::sqrt(sq);
    for (uint32_t e = b.row_ptr[r]; e < b.row_ptr[r + 1]; ++e)
      b.value[e] = static_cast<float>(b.value[e] * inv);
  }
}

void normalize_rows_l2(float* x, uint32_t rows, uint64_t cols) {
  for (uint32_t r = 0; r < rows; ++r) {
    float* row = x + size_t(r) * cols;
    double sq = 0.0;
    for (uint64_t j = 0; j < cols; ++j) sq += double(row[j]) * row[j];
    if (!(sq > 0.0)) continue;
    const double inv = 1.0 / std::sqrt(sq);
    for (uint64_t j = 0; j < cols; ++j) row[j] = static_cast<float>(row[j] * inv);
  }
}

namespace {

// b.slot_groups from b.slot: a counting sort of the entries by slot, stable, as
// [offsets | entries | rows].
void group_by_slot(SparseBatch& b) {
  const size_t slots = b.touched.size(), nnz = b.index.size();
  b.slot_groups.assign(slots + 1 + 2 * nnz, 0u);
  uint32_t* ptr = b.slot_groups.data();
  uint32_t* entry = ptr + slots + 1;
  uint32_t* row_of = entry + nnz;
  for (const uint32_t s : b.slot) ++ptr[s + 1];
  for (size_t t = 0; t < slots; ++t) ptr[t + 1] += ptr[t];
  std::vector<uint32_t> next(ptr, ptr + slots);
  for (uint32_t r = 0; r < b.rows && r + 1 < b.row_ptr.size(); ++r)
    for (uint32_t e = b.row_ptr[r]; e < b.row_ptr[r + 1]; ++e) {
      const uint32_t at = next[b.slot[e]]++;
      entry[at] = e;
      row_of[at] = r;
    }
}

}  // namespace

void index_touched(SparseBatch& b, std::vector<uint32_t>& mark) {
  if (mark.size() < b.cols) mark.resize(b.cols, 0);
  b.touched.clear();
  b.slot.resize(b.index.size());
  for (const uint32_t j : b.index) {
    if (j >= b.cols)
      throw DataError("sparse index " + std::to_string(j) + " is outside the " +
                      std::to_string(b.cols) + " columns of the layer");
    if (!mark[j]) {
      mark[j] = 1;
      b.touched.push_back(j);
    }
  }
  std::sort(b.touched.begin(), b.touched.end());
  for (size_t i = 0; i < b.touched.size(); ++i) mark[b.touched[i]] = static_cast<uint32_t>(i + 1);
  for (size_t e = 0; e < b.index.size(); ++e) b.slot[e] = mark[b.index[e]] - 1;
  for (const uint32_t j : b.touched) mark[j] = 0;
  group_by_slot(b);
  b.indexed = true;
}

void widen_touched(SparseBatch& b, const std::vector<uint32_t>& all, std::vector<uint32_t>& mark) {
  NN_CHECK(b.indexed, "widen_touched of an unindexed batch");
  if (mark.size() < b.cols) mark.resize(b.cols, 0);
  for (size_t i = 0; i < all.size(); ++i) {
    NN_CHECK(all[i] < b.cols && (i == 0 || all[i] > all[i - 1]),
             "widen_touched: the union is not ascending within the columns");
    mark[all[i]] = static_cast<uint32_t>(i + 1);
  }
  std::vector<uint32_t> position(b.touched.size());
  bool missing = false;
  for (size_t t = 0; t < b.touched.size(); ++t) {
    missing |= mark[b.touched[t]] == 0;
    position[t] = mark[b.touched[t]] - 1;
  }
  for (const uint32_t j : all) mark[j] = 0;
  NN_CHECK(!missing, "widen_touched: the union lacks an index of this batch");
  for (uint32_t& s : b.slot) s = position[s];
  b.touched = all;
  group_by_slot(b);
}

}  // namespace nn
