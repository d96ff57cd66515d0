// Streaming training input: the block shuffle (one window = the in-memory shuffle), ranged
// reads of a dataset file (the same examples as a whole read), and the stream's epochs (every
// example exactly once, split between ranks as the global order says, reading only the rows a
// rank takes).
#include "train/example_stream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "data/block_order.h"
#include "data/data_test_util.h"
#include "distributed/row_split.h"
#include "io/example_file.h"
#include "io/netcdf_dataset.h"

namespace nn {
namespace {

using test::TempDir;

TEST(BlockOrder, OneWindowIsTheInMemoryShuffle) {
  BlockLayout layout;
  layout.examples = 1000;
  layout.chunk = 64;
  layout.window_chunks = 16;  // 1024 >= 1000: one window
  ASSERT_EQ(layout.windows(), 1u);
  Rng a(42), b(42);
  const std::vector<uint64_t> perm = chunk_permutation(layout, a.state(), true);
  std::vector<uint32_t> streamed = window_examples(layout, perm, 0);
  shuffle_in_place(streamed.data(), streamed.size(), a);
  std::vector<uint32_t> in_memory(1000);
  std::iota(in_memory.begin(), in_memory.end(), 0u);
  shuffle_in_place(in_memory.data(), in_memory.size(), b);
  EXPECT_EQ(streamed, in_memory);
  EXPECT_EQ(a.state(), b.state());
}

TEST(BlockOrder, WindowsCoverEveryExampleOnceAndDependOnTheSeed) {
  BlockLayout layout;
  layout.examples = 1003;  // a short last chunk
  layout.chunk = 10;
  layout.window_chunks = 7;
  auto epoch = [&](uint64_t seed) {
    std::vector<uint32_t> order;
    const std::vector<uint64_t> perm = chunk_permutation(layout, seed, true);
    for (uint64_t w = 0; w < layout.windows(); ++w) {
      const std::vector<uint32_t> ids = window_examples(layout, perm, w);
      EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
      order.insert(order.end(), ids.begin(), ids.end());
    }
    return order;
  };
  std::vector<uint32_t> all = epoch(1);
  EXPECT_EQ(epoch(1), all);
  EXPECT_NE(epoch(2), all);
  std::sort(all.begin(), all.end());
  std::vector<uint32_t> expected(1003);
  std::iota(expected.begin(), expected.end(), 0u);
  EXPECT_EQ(all, expected);
}

// 200 examples: a sparse input whose example e holds items {e % 50, 50 + e % 7} with values e,
// and a dense weighted target whose value is e.
void write_files(const TempDir& dir) {
  std::vector<std::vector<uint32_t>> rows;
  std::vector<std::vector<float>> values;
  std::vector<float> dense;
  for (uint32_t e = 0; e < 200; ++e) {
    rows.push_back({e % 50, 50 + e % 7});
    values.push_back({float(e), float(e) + 0.5f});
    dense.push_back(float(e));
  }
  write_datasets(dir.file("in.nc"), {test::make_sparse("in", 60, rows, values)});
  ExampleSet out = test::make_dense("out", DataType::Float, 1, 200, dense);
  out.attributes |= attr::Weighted;
  for (uint32_t e = 0; e < 200; ++e) out.example_weight.push_back(1.0f + float(e) / 1000);
  write_datasets(dir.file("out.nc"), {out});
}

TEST(ExampleFile, RangesReadTheSameExamplesAsAWholeRead) {
  TempDir dir;
  write_files(dir);
  const ExampleSet whole = read_datasets(dir.file("in.nc"))[0];
  ExampleFile file(dir.file("in.nc"));
  ASSERT_EQ(file.datasets(), 1u);
  EXPECT_EQ(file.header(0).examples, 200u);
  EXPECT_TRUE(file.header(0).sparse_index.empty());  // a header holds no arrays
  const std::vector<uint64_t> ids = {0, 1, 2, 7, 100, 101, 199};
  ExampleReadStats stats;
  const ExampleSet part = file.read(0, ids, &stats);
  ASSERT_EQ(part.examples, ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const uint64_t e = ids[i];
    ASSERT_EQ(part.sparse_end[i] - part.sparse_start[i],
              whole.sparse_end[e] - whole.sparse_start[e]);
    for (uint64_t k = 0; k < part.sparse_end[i] - part.sparse_start[i]; ++k) {
      EXPECT_EQ(part.sparse_index[part.sparse_start[i] + k],
                whole.sparse_index[whole.sparse_start[e] + k]);
      EXPECT_EQ(part.sparse_value[part.sparse_start[i] + k],
                whole.sparse_value[whole.sparse_start[e] + k]);
    }
  }
  // Four runs of consecutive examples, each: start, end, index, values.
  EXPECT_EQ(stats.examples, ids.size());
  EXPECT_EQ(stats.ranges, 4u * 4u);
  EXPECT_EQ(stats.bytes, ids.size() * (16 + 2 * 4 + 2 * 4));
}

// The stream over the files of write_files(), bound to an input and an output layer.
struct Streamed {
  StreamedFiles files;
  BoundData shell;
  std::unique_ptr<ExampleStream> stream;
  Streamed(const TempDir& dir, uint32_t minibatch, uint64_t chunk, uint64_t window_chunks) {
    files = open_streamed_files({dir.file("in.nc"), dir.file("out.nc")});
    shell.inputs.push_back({"Input", &files.headers[0]});
    shell.outputs.push_back({"Output", &files.headers[1]});
    shell.examples = 200;
    StreamSettings settings;
    settings.chunk = chunk;
    settings.window_chunks = window_chunks;
    stream = std::make_unique<ExampleStream>(sources_for(shell, files), shell, minibatch, settings);
  }
};

// Every global minibatch of an epoch as the examples (the target's values) each rank gets.
std::vector<std::vector<uint32_t>> epoch_rows(Streamed& s, uint32_t minibatch, int rank, int ranks,
                                              uint64_t seed, uint64_t* examples_read = nullptr) {
  const BatchLoader loader(s.shell, {}, 3);
  s.stream->begin(Rng(seed), true, 0, loader, rank, ranks, false);
  std::vector<std::vector<uint32_t>> batches;
  for (uint64_t b = 0; b * minibatch < 200; ++b) {
    const HostBatch hb = s.stream->assemble(b, b + 1);
    std::vector<uint32_t> ids;
    for (uint32_t r = 0; r < hb.rows; ++r) {
      ids.push_back(uint32_t(hb.dense[1][r]));
      // The input row belongs to the same example.
      EXPECT_EQ(hb.sparse[0].index[hb.sparse[0].row_ptr[r]], ids.back() % 50);
      EXPECT_FLOAT_EQ(hb.weights[1][r], 1.0f + float(ids.back()) / 1000);
    }
    batches.push_back(ids);
  }
  s.stream->end();
  if (examples_read) *examples_read = s.stream->stats().read.examples;
  return batches;
}

TEST(ExampleStream, EveryExampleOncePerEpochWithSmallWindows) {
  TempDir dir;
  write_files(dir);
  Streamed s(dir, 16, 8, 3);  // windows of 24 examples (3 chunks), 9 windows
  EXPECT_EQ(s.stream->layout().windows(), 9u);
  uint64_t read = 0;
  const auto batches = epoch_rows(s, 16, 0, 1, 5, &read);
  std::vector<uint32_t> seen;
  for (const auto& b : batches) seen.insert(seen.end(), b.begin(), b.end());
  std::vector<uint32_t> expected(200);
  std::iota(expected.begin(), expected.end(), 0u);
  EXPECT_NE(seen, expected);  // shuffled
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(read, 200u);
  // The same seed, the same order; another seed, another.
  EXPECT_EQ(epoch_rows(s, 16, 0, 1, 5), batches);
  EXPECT_NE(epoch_rows(s, 16, 0, 1, 6), batches);
}

TEST(ExampleStream, RanksTakeTheirRowsOfTheGlobalOrderAndReadOnlyThose) {
  TempDir dir;
  write_files(dir);
  const uint32_t minibatch = 14;
  Streamed one(dir, minibatch, 8, 3);
  const auto global = epoch_rows(one, minibatch, 0, 1, 9);
  for (int ranks : {2, 3}) {
    std::vector<std::vector<std::vector<uint32_t>>> per_rank;
    uint64_t total_read = 0;
    for (int rank = 0; rank < ranks; ++rank) {
      Streamed s(dir, minibatch, 8, 3);
      uint64_t read = 0;
      per_rank.push_back(epoch_rows(s, minibatch, rank, ranks, 9, &read));
      total_read += read;
      EXPECT_LT(read, 200u / ranks + 200u / minibatch + 1) << "rank " << rank << " of " << ranks;
    }
    EXPECT_EQ(total_read, 200u);  // each example read by exactly one rank
    for (size_t b = 0; b < global.size(); ++b) {
      std::vector<uint32_t> joined;
      for (int rank = 0; rank < ranks; ++rank) {
        const RowSlice slice = rank_rows(uint32_t(global[b].size()), rank, ranks);
        ASSERT_EQ(per_rank[rank][b].size(), slice.count);
        joined.insert(joined.end(), per_rank[rank][b].begin(), per_rank[rank][b].end());
      }
      EXPECT_EQ(joined, global[b]) << "batch " << b << ", " << ranks << " ranks";
    }
  }
}

TEST(ExampleStream, ResumedEpochContinuesTheSameOrder) {
  TempDir dir;
  write_files(dir);
  Streamed s(dir, 16, 8, 3);
  const auto full = epoch_rows(s, 16, 0, 1, 5);
  const BatchLoader loader(s.shell, {}, 3);
  s.stream->begin(Rng(5), true, 7, loader, 0, 1, false);  // from minibatch 7 on
  for (uint64_t b = 7; b < full.size(); ++b) {
    const HostBatch hb = s.stream->assemble(b, b + 1);
    ASSERT_EQ(hb.rows, full[b].size());
    for (uint32_t r = 0; r < hb.rows; ++r) EXPECT_EQ(uint32_t(hb.dense[1][r]), full[b][r]);
  }
  s.stream->end();
  EXPECT_LT(s.stream->stats().read.examples, 200u - 6 * 16);  // skipped windows are not read
}

}  // namespace
}  // namespace nn
