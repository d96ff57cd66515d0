// TargetBuffer (train/target_buffer.h): sparse targets are checked on the host before they are
// uploaded (a bad index is a DataError naming the row and the index, so that no device backend
// stops its stream inside a step to report it), and each row's ascending order is noticed.
#include "train/target_buffer.h"

#include <gtest/gtest.h>

#include <string>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace nn {
namespace {

// Two rows: {1, 4} and {2, <last>}, over `cols` columns.
SparseBatch two_rows(uint32_t cols, uint32_t last) {
  SparseBatch b;
  b.rows = 2;
  b.cols = cols;
  b.row_ptr = {0, 2, 4};
  b.index = {1, 4, 2, last};
  return b;
}

TEST(TargetBuffer, ASparseIndexOutsideTheOutputLayerIsADataErrorBeforeUpload) {
  CpuBackend backend(1);
  TargetBuffer targets;
  try {
    targets.load_sparse(backend, two_rows(10, 7), 6);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              "loss: sparse targets of batch row 1: index 7 is outside the output layer's 6 units");
  }
  // The last unit is inside.
  const TargetView& v = targets.load_sparse(backend, two_rows(10, 5), 6);
  EXPECT_TRUE(v.sparse);
  EXPECT_EQ(v.sp.nnz, 4u);
}

TEST(TargetBuffer, RowsInAscendingOrderAreMarkedSorted) {
  CpuBackend backend(1);
  TargetBuffer targets;
  EXPECT_TRUE(targets.load_sparse(backend, two_rows(10, 3), 10).sp.rows_sorted);
  // Row 1 holds {2, 0}: descending within the row.
  EXPECT_FALSE(targets.load_sparse(backend, two_rows(10, 0), 10).sp.rows_sorted);
  // Rows may start below the previous row's last index.
  SparseBatch b = two_rows(10, 9);
  b.index = {5, 8, 0, 9};
  EXPECT_TRUE(targets.load_sparse(backend, b, 10).sp.rows_sorted);
}

}  // namespace
}  // namespace nn
