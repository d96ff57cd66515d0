// gather_sparse / gather_dense / gather_weights: CSR assembly, Indexed indirection, example
// weights, DSSTNE's 8-bit normalisation (input x/256-0.5, target x/256), one-hot class ids,
// L2 row normalisation (the Input key Normalize).
#include "data/batch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "core/error.h"
#include "data/data_test_util.h"

namespace nn {
namespace {

using test::make_dense;
using test::make_sparse;

TEST(GatherSparse, CsrOfSelectedExamplesInBatchOrder) {
  const ExampleSet ds = make_sparse("s", 16, {{1, 2}, {}, {15, 3, 3}}, {{0.5f, 1}, {}, {2, 3, 4}});
  const uint32_t ids[] = {2, 0, 1, 2};
  SparseBatch b;
  gather_sparse(ds, ids, 4, b);
  EXPECT_EQ(b.rows, 4u);
  EXPECT_EQ(b.cols, 16u);
  EXPECT_EQ(b.row_ptr, (std::vector<uint32_t>{0, 3, 5, 5, 8}));
  EXPECT_EQ(b.index, (std::vector<uint32_t>{15, 3, 3, 1, 2, 15, 3, 3}));
  EXPECT_EQ(b.value, (std::vector<float>{2, 3, 4, 0.5f, 1, 2, 3, 4}));
  EXPECT_TRUE(b.row_weight.empty());
  EXPECT_FALSE(b.ignore_zero);
  EXPECT_EQ(b.nnz(), 8u);
}

TEST(GatherSparse, BooleanHasNoValuesAndIgnoreZeroFollowsAttribute) {
  ExampleSet ds = make_sparse("b", 8, {{1}, {2, 7}});
  ds.attributes |= attr::SparseIgnoreZero;
  SparseBatch b;
  b.value = {9, 9};  // stale content from a previous analog batch must go
  const uint32_t ids[] = {1};
  gather_sparse(ds, ids, 1, b);
  EXPECT_TRUE(b.value.empty());
  EXPECT_TRUE(b.ignore_zero);
  EXPECT_EQ(b.index, (std::vector<uint32_t>{2, 7}));
}

TEST(GatherSparse, IndexedResolvesUniqueRows) {
  ExampleSet ds = make_sparse("i", 8, {{1}, {4, 5}});
  ds.attributes |= attr::Indexed;
  ds.examples = 3;
  ds.index = {1, 1, 0};
  const uint32_t ids[] = {2, 0, 1};
  SparseBatch b;
  gather_sparse(ds, ids, 3, b);
  EXPECT_EQ(b.row_ptr, (std::vector<uint32_t>{0, 1, 3, 5}));
  EXPECT_EQ(b.index, (std::vector<uint32_t>{1, 4, 5, 4, 5}));
}

TEST(GatherSparse, WeightedGivesRowWeightsPerExample) {
  ExampleSet ds = make_sparse("w", 8, {{1}, {2}}, {{1}, {1}});
  ds.attributes |= attr::Weighted | attr::Indexed;
  ds.examples = 3;
  ds.index = {0, 1, 0};
  ds.example_weight = {0.5f, 2.0f, 3.0f};  // examples 0 and 2 share a row, not a weight
  const uint32_t ids[] = {2, 1, 0};
  SparseBatch b;
  gather_sparse(ds, ids, 3, b);
  EXPECT_EQ(b.row_weight, (std::vector<float>{3.0f, 2.0f, 0.5f}));
  EXPECT_EQ(b.value, (std::vector<float>{1, 1, 1}));  // values are not pre-multiplied
  std::vector<float> w;
  gather_weights(ds, ids, 2, w);
  EXPECT_EQ(w, (std::vector<float>{3.0f, 2.0f}));
}

TEST(GatherSparse, RejectsBadIdsAndDenseData) {
  const ExampleSet ds = make_sparse("s", 8, {{1}});
  const uint32_t bad[] = {1};
  SparseBatch b;
  EXPECT_THROW(gather_sparse(ds, bad, 1, b), DataError);
  const ExampleSet dense = make_dense("d", DataType::Float, 2, 1, {1, 2});
  const uint32_t ok[] = {0};
  EXPECT_THROW(gather_sparse(dense, ok, 1, b), DataError);
  std::vector<float> out(2);
  EXPECT_THROW(gather_dense(ds, ok, 1, true, out.data()), DataError);
}

TEST(GatherDense, FloatRowsCopiedThroughIndex) {
  ExampleSet ds = make_dense("f", DataType::Float, 3, 2, {1, 2, 3, 4, 5, 6});
  ds.attributes = attr::Indexed;
  ds.examples = 3;
  ds.index = {1, 0, 1};
  const uint32_t ids[] = {1, 2};
  std::vector<float> out(6, -1);
  gather_dense(ds, ids, 2, true, out.data());
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  gather_dense(ds, ids, 2, false, out.data());  // float data is never rescaled
  EXPECT_EQ(out, (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST(GatherDense, UInt8NormalisedAsInputAndAsTarget) {
  const ExampleSet ds = make_dense("u8", DataType::UChar, 4, 1, {0, 64, 128, 255});
  const uint32_t ids[] = {0};
  std::vector<float> in(4), target(4);
  gather_dense(ds, ids, 1, true, in.data());
  gather_dense(ds, ids, 1, false, target.data());
  const float raw[] = {0, 64, 128, 255};
  for (int k = 0; k < 4; ++k) {
    EXPECT_FLOAT_EQ(in[k], raw[k] / 256.0f - 0.5f) << k;
    EXPECT_FLOAT_EQ(target[k], raw[k] / 256.0f) << k;
  }
  EXPECT_FLOAT_EQ(in[0], -0.5f);
  EXPECT_FLOAT_EQ(target[2], 0.5f);
}

TEST(GatherDense, Int8ScaledBy128) {
  const ExampleSet ds = make_dense("i8", DataType::Char, 3, 1, {-128, 0, 64});
  const uint32_t ids[] = {0};
  std::vector<float> in(3), target(3);
  gather_dense(ds, ids, 1, true, in.data());
  gather_dense(ds, ids, 1, false, target.data());
  EXPECT_EQ(in, (std::vector<float>{-1.0f, 0.0f, 0.5f}));
  EXPECT_EQ(target, in);
}

TEST(GatherDense, BooleanClassIdsBecomeOneHot) {
  ExampleSet ds = make_dense("labels", DataType::UInt, 4, 3, {3, 0, 1});
  ds.attributes = attr::Boolean;
  const uint32_t ids[] = {0, 2, 1};
  std::vector<float> out(12, 7.0f);
  gather_dense(ds, ids, 3, false, out.data());
  EXPECT_EQ(out, (std::vector<float>{0, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 0}));
}

TEST(GatherWeights, EmptyWhenNotWeighted) {
  const ExampleSet ds = make_sparse("s", 8, {{1}});
  std::vector<float> w = {1, 2, 3};
  const uint32_t ids[] = {0};
  gather_weights(ds, ids, 1, w);
  EXPECT_TRUE(w.empty());
}

TEST(NormalizeRowsL2, SparseRowsGetLengthOneAndIndicatorRowsGetValues) {
  // Indicator rows: the values are materialised, 1/sqrt(n) for a row of n items; an empty row
  // stays empty.
  const ExampleSet ds = make_sparse("b", 8, {{1, 2, 3, 4}, {}, {7}});
  const uint32_t ids[] = {0, 1, 2};
  SparseBatch b;
  gather_sparse(ds, ids, 3, b);
  normalize_rows_l2(b);
  EXPECT_EQ(b.value, (std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f, 1.0f}));
  EXPECT_EQ(b.index, (std::vector<uint32_t>{1, 2, 3, 4, 7}));
  // Analog rows: divided by their Euclidean length; a row of zeros is left as it is.
  const ExampleSet analog = make_sparse("a", 8, {{0, 5}, {2}}, {{3, -4}, {0}});
  const uint32_t two[] = {0, 1};
  gather_sparse(analog, two, 2, b);
  normalize_rows_l2(b);
  EXPECT_FLOAT_EQ(b.value[0], 0.6f);
  EXPECT_FLOAT_EQ(b.value[1], -0.8f);
  EXPECT_EQ(b.value[2], 0.0f);
}

TEST(NormalizeRowsL2, DenseRows) {
  std::vector<float> x = {3, 0, 4, 0, 0, 0, 1, 1, 1};
  normalize_rows_l2(x.data(), 3, 3);
  EXPECT_FLOAT_EQ(x[0], 0.6f);
  EXPECT_FLOAT_EQ(x[2], 0.8f);
  EXPECT_EQ(x[1], 0.0f);
  for (int k = 3; k < 6; ++k) EXPECT_EQ(x[k], 0.0f);
  for (int k = 6; k < 9; ++k) EXPECT_FLOAT_EQ(x[k], 1.0f / std::sqrt(3.0f));
}

// ML-20M-shaped batches gather every entry. (Their speed is measured by scripts/bench_gather.sh:
// a time limit here failed under load and under sanitizers.)
TEST(GatherSparse, LargeBatchesGatherEveryEntry) {
  std::vector<std::vector<uint32_t>> rows(4096);
  for (size_t i = 0; i < rows.size(); ++i)
    for (uint32_t k = 0; k < 144; ++k) rows[i].push_back((i * 131 + k * 17) % 27278);
  const ExampleSet ds = make_sparse("ml", 27392, rows);
  std::vector<uint32_t> ids(256);
  SparseBatch b;
  uint64_t total = 0;
  for (int batch = 0; batch < 200; ++batch) {
    for (uint32_t i = 0; i < 256; ++i) ids[i] = (batch * 256 + i * 7) % 4096;
    gather_sparse(ds, ids.data(), 256, b);
    total += b.nnz();
  }
  EXPECT_EQ(total, 200ull * 256 * 144);
}

}  // namespace
}  // namespace nn
