// Data-parallel building blocks that make N processes train exactly like one: the row split of a
// minibatch, and random masks (dropout, denoising) that depend on an example's global position
// or id, never on which process holds it or where in its slice it sits.
#include "train/data_parallel.h"

#include <gtest/gtest.h>

#include <vector>

#include "backend/backend.h"
#include "core/random.h"
#include "layers/layer.h"
#include "model/batch_loader.h"
#include "model/model_test_util.h"

namespace nn::test {
namespace {

TEST(DataParallel, RankRowsCoverTheBatchContiguouslyAndEvenly) {
  for (uint32_t rows = 0; rows <= 20; ++rows)
    for (int ranks = 1; ranks <= 5; ++ranks) {
      uint32_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const RowSlice s = rank_rows(rows, r, ranks);
        EXPECT_EQ(s.first, next) << rows << " rows, rank " << r << " of " << ranks;
        EXPECT_LE(s.count, max_rank_rows(rows, ranks));
        EXPECT_GE(s.count + 1, max_rank_rows(rows, ranks));  // sizes differ by at most one
        next += s.count;
      }
      EXPECT_EQ(next, rows);
    }
}

TEST(DataParallel, ShiftedStreamDrawsTheOffsetCounters) {
  for (uint64_t stream : {0ull, 7ull, 4096ull * 31 + 2})
    for (uint64_t offset : {1ull, 64ull, 123456789ull})
      for (uint64_t i = 0; i < 50; ++i)
        ASSERT_EQ(uniform_at(99, shift_stream(stream, offset), i),
                  uniform_at(99, stream, i + offset));
}

TEST(DataParallel, DropoutOfASliceEqualsThatSliceOfTheWholeBatch) {
  auto be = make_backend("cpu", 1);
  const uint32_t rows = 10, width = 13, first = 4, count = 5;
  std::vector<float> all(size_t(rows) * width, 1.0f), part(size_t(count) * width, 1.0f);
  LayerContext whole{*be, rows, true, 5, 17};
  LayerContext slice{*be, count, true, 5, 17, first};
  be->dropout(all.data(), all.size(), 0.3f, whole.seed, dropout_stream(whole, 2, width));
  be->dropout(part.data(), part.size(), 0.3f, slice.seed, dropout_stream(slice, 2, width));
  size_t dropped = 0;
  for (size_t i = 0; i < part.size(); ++i) {
    EXPECT_EQ(part[i], all[size_t(first) * width + i]) << i;
    dropped += part[i] == 0.0f;
  }
  EXPECT_GT(dropped, 0u);
  EXPECT_LT(dropped, part.size());
}

TEST(DataParallel, DenoisingDependsOnTheExampleNotItsPlaceInTheBatch) {
  const auto rows = random_rows(3, 12, 40, 9);
  const ExampleSet input = sparse_set("input", 40, rows);
  BoundData bound;
  bound.inputs.push_back({"Input", &input});
  bound.examples = input.examples;
  const BatchLoader loader(bound, {DenoiseSetting{0.4f, 0}}, 11);
  const std::vector<uint32_t> all = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const std::vector<uint32_t> some = {7, 2, 9};  // another order, another batch
  HostBatch a, b;
  loader.assemble(all.data(), uint32_t(all.size()), 6, true, a);
  loader.assemble(some.data(), uint32_t(some.size()), 6, true, b);
  size_t kept = 0;
  for (uint32_t r = 0; r < some.size(); ++r) {
    const SparseBatch& x = a.sparse[0];
    const SparseBatch& y = b.sparse[0];
    const uint32_t e = some[r];
    ASSERT_EQ(y.row_ptr[r + 1] - y.row_ptr[r], x.row_ptr[e + 1] - x.row_ptr[e]) << "example " << e;
    for (uint32_t k = 0; k < y.row_ptr[r + 1] - y.row_ptr[r]; ++k)
      EXPECT_EQ(y.index[y.row_ptr[r] + k], x.index[x.row_ptr[e] + k]);
    kept += y.row_ptr[r + 1] - y.row_ptr[r];
  }
  EXPECT_LT(kept, 3u * 9u);  // something was dropped
  HostBatch c;
  loader.assemble(some.data(), uint32_t(some.size()), 7, true, c);  // another step, other masks
  EXPECT_NE(c.sparse[0].index, b.sparse[0].index);
}

}  // namespace
}  // namespace nn::test
