// Sparse batches the host hands over already in order, on every backend, against the same
// batches sorted on the device: the same bits. (1) The compact row-sparse weight gradient
// (train/row_sparse.h) with its entries grouped by slot on the loader's thread
// (SparseView::slot_ptr, data/batch.h index_touched): example weights, stored values, repeated
// indices within a row, more than one block of outputs. (2) The loss of sparse targets whose
// rows are ascending (SparseView::rows_sorted): SoftMax and Sigmoid cross-entropy, with values
// and repeated indices. On CUDA the sorts are skipped; on the CPU the grouped gradient is an
// item-major loop of its own (cpu/sparse.cpp). (3) The forward product of an indexed batch, rows
// ascending or not, gives the plain batch's bits (a grouped forward would have to keep each
// row's entry order: one without that check failed this test).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/device_array.h"
#include "backend_test_util.h"
#include "config/enums.h"
#include "core/random.h"
#include "data/batch.h"

namespace nn {
namespace {

class PresortedSparse : public test::BackendTest {};

// An indexed batch (data/batch.h index_touched) in backend memory, and its views: `plain` as an
// unindexed batch hands it over, `indexed` with the distinct items, slots and slot groups.
struct UploadedBatch {
  DeviceArray<uint32_t> row_ptr, index, slot, touched, groups;
  DeviceArray<float> value, weight;
  SparseView plain, indexed;

  UploadedBatch(Backend& be, const SparseBatch& b)
      : row_ptr(test::to_device(be, b.row_ptr)),
        index(test::to_device(be, b.index)),
        slot(test::to_device(be, b.slot)),
        touched(test::to_device(be, b.touched)),
        groups(test::to_device(be, b.slot_groups)),
        value(test::to_device(be, b.value)),
        weight(test::to_device(be, b.row_weight)) {
    plain.rows = b.rows;
    plain.cols = b.cols;
    plain.row_ptr = row_ptr.data();
    plain.index = index.data();
    plain.value = value.data();
    plain.row_weight = weight.data();
    plain.nnz = b.index.size();
    indexed = plain;
    indexed.touched = touched.data();
    indexed.slot = slot.data();
    indexed.touched_count = uint32_t(b.touched.size());
    indexed.set_slot_groups(groups.data());
  }
};

TEST_P(PresortedSparse, GroupedGradientEqualsTheSortedOneBitForBit) {
  auto be = backend(2);
  Rng rng(9);
  SparseBatch b;
  b.rows = 40;
  b.cols = 500;
  b.row_ptr.push_back(0);
  for (uint32_t r = 0; r < b.rows; ++r) {
    const uint32_t count = 1 + uint32_t(rng.below(12));
    for (uint32_t k = 0; k < count; ++k) {
      // Popular items low, so that many rows share them; now and then an index twice in a row.
      b.index.push_back(uint32_t(rng.below(k % 3 == 0 ? 20 : b.cols)));
      b.value.push_back(float(rng.uniform()) + 0.5f);
    }
    b.row_ptr.push_back(uint32_t(b.index.size()));
  }
  for (uint32_t r = 0; r < b.rows; ++r) b.row_weight.push_back(0.5f + float(r % 3));
  std::vector<uint32_t> mark;
  index_touched(b, mark);
  const uint32_t n_out = 300;  // two blocks of 256 outputs on CUDA
  std::vector<float> delta(size_t(b.rows) * n_out);
  for (float& d : delta) d = float(rng.uniform()) - 0.5f;

  const UploadedBatch up(*be, b);
  auto d = test::to_device(*be, delta);
  // The compact row-sparse gradient's view (indices are slots), without and with the groups.
  SparseView sorted = up.indexed;
  sorted.cols = uint32_t(b.touched.size());
  sorted.index = up.slot.data();
  sorted.slot_ptr = sorted.slot_entry = sorted.slot_row = nullptr;
  SparseView grouped = up.indexed;
  grouped.cols = sorted.cols;
  grouped.index = sorted.index;

  const size_t n = b.touched.size() * size_t(n_out);
  DeviceArray<float> g_sorted(*be, n), g_grouped(*be, n);
  be->fill(g_sorted.data(), n, 0.25f);  // the gradient is added to what is there
  be->fill(g_grouped.data(), n, 0.25f);
  be->sparse_weight_gradient(sorted, d.data(), n_out, 1.0f / b.rows, g_sorted.data());
  be->sparse_weight_gradient(grouped, d.data(), n_out, 1.0f / b.rows, g_grouped.data());
  const auto want = g_sorted.to_host(), got = g_grouped.to_host();
  EXPECT_EQ(got, want);
  // Not trivially equal: the gradient moved away from the fill value.
  size_t moved = 0;
  for (const float v : got) moved += v != 0.25f;
  EXPECT_GT(moved, n / 2);
}

TEST_P(PresortedSparse, IndexedBatchGivesTheForwardProductBitForBit) {
  Rng rng(21);
  for (const bool ascending : {true, false}) {
    for (const int threads : {1, 2, 3}) {
      SCOPED_TRACE(std::string(ascending ? "ascending rows" : "rows in any order") + ", " +
                   std::to_string(threads) + " threads");
      auto be = backend(threads);
      SparseBatch b;
      b.rows = 37;
      b.cols = 400;
      b.row_ptr.push_back(0);
      for (uint32_t r = 0; r < b.rows; ++r) {
        std::vector<uint32_t> items;
        const uint32_t count = uint32_t(rng.below(14));  // empty rows too
        for (uint32_t k = 0; k < count; ++k)
          items.push_back(uint32_t(rng.below(k % 3 == 0 ? 15 : b.cols)));
        if (count > 3) items.push_back(items[1]);  // an index twice in a row
        if (ascending) std::sort(items.begin(), items.end());
        for (const uint32_t j : items) {
          b.index.push_back(j);
          b.value.push_back(float(rng.uniform()) + 0.5f);
        }
        b.row_ptr.push_back(uint32_t(b.index.size()));
      }
      for (uint32_t r = 0; r < b.rows; ++r) b.row_weight.push_back(0.5f + float(r % 4));
      std::vector<uint32_t> mark;
      index_touched(b, mark);
      const uint32_t n_out = 600;
      std::vector<float> w(size_t(b.cols) * n_out);
      for (float& v : w) v = float(rng.uniform()) - 0.5f;

      const UploadedBatch up(*be, b);
      auto dw = test::to_device(*be, w);

      const size_t n = size_t(b.rows) * n_out;
      DeviceArray<float> z_plain(*be, n), z_indexed(*be, n);
      be->fill(z_plain.data(), n, 0.25f);  // the product is added to what is there
      be->fill(z_indexed.data(), n, 0.25f);
      be->sparse_matmul(up.plain, dw.data(), n_out, z_plain.data());
      be->sparse_matmul(up.indexed, dw.data(), n_out, z_indexed.data());
      const auto want = z_plain.to_host(), got = z_indexed.to_host();
      EXPECT_EQ(got, want);
      size_t moved = 0;
      for (const float v : got) moved += v != 0.25f;
      EXPECT_GT(moved, n / 2);
    }
  }
}

TEST_P(PresortedSparse, SortedTargetRowsGiveTheLossOfSortedEntries) {
  auto be = backend(2);
  Rng rng(4);
  const uint32_t rows = 30, cols = 700;
  std::vector<uint32_t> row_ptr{0}, index;
  std::vector<float> value;
  for (uint32_t r = 0; r < rows; ++r) {
    std::vector<uint32_t> items;
    const uint32_t count = uint32_t(rng.below(9));  // empty rows too
    for (uint32_t k = 0; k < count; ++k) items.push_back(uint32_t(rng.below(cols)));
    if (count > 2) items.push_back(items[0]);  // a repeated target
    std::sort(items.begin(), items.end());
    for (const uint32_t j : items) {
      index.push_back(j);
      value.push_back(0.5f + float(rng.uniform()));
    }
    row_ptr.push_back(uint32_t(index.size()));
  }
  std::vector<float> z(size_t(rows) * cols);
  for (float& v : z) v = 4.0f * float(rng.uniform()) - 2.0f;
  auto d_row_ptr = test::to_device(*be, row_ptr);
  auto d_index = test::to_device(*be, index);
  auto d_value = test::to_device(*be, value);
  for (const Activation act : {Activation::SoftMax, Activation::Sigmoid}) {
    for (const bool with_values : {false, true}) {
      SCOPED_TRACE(std::string(act == Activation::SoftMax ? "SoftMax" : "Sigmoid") +
                   (with_values ? " values" : " Boolean"));
      LossParams p;
      p.function = ErrorFunction::CrossEntropy;
      p.activation.kind = act;
      std::vector<float> delta[2];
      double loss[2];
      for (int sorted = 0; sorted < 2; ++sorted) {
        TargetView t;
        t.sparse = true;
        t.sp.rows = rows;
        t.sp.cols = cols;
        t.sp.row_ptr = d_row_ptr.data();
        t.sp.index = d_index.data();
        t.sp.value = with_values ? d_value.data() : nullptr;
        t.sp.nnz = index.size();
        t.sp.rows_sorted = sorted == 1;
        auto a = test::to_device(*be, z);
        be->activate(p.activation, a.data(), rows, cols);
        DeviceArray<float> d(*be, size_t(rows) * cols);
        loss[sorted] = be->loss_and_delta(p, a.data(), t, rows, cols, d.data());
        delta[sorted] = d.to_host();
      }
      EXPECT_EQ(loss[1], loss[0]);
      EXPECT_EQ(delta[1], delta[0]);
    }
  }
}

NN_INSTANTIATE_ON_BACKENDS(PresortedSparse);

}  // namespace
}  // namespace nn
