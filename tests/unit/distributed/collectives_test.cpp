// Every collective of the Communicator seam on the world communicator: with one process (no
// mpirun) these exercise LocalCommunicator; under `mpirun -np 2/3` (CTest label mpi) the MPI
// implementation, with per-rank data whose combined result each rank can compute by itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <thread>
#include <vector>

#include "core/error.h"
#include "distributed/communicator.h"
#include "distributed/process.h"
#include "predict/predictor.h"

namespace nn {
namespace {

std::shared_ptr<Communicator> world() {
  return world_communicator();
}

TEST(Collectives, WorldMatchesLauncher) {
  auto c = world();
  const char* n = std::getenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(c->size(), n ? std::atoi(n) : 1);
  EXPECT_EQ(c->size(), world_size());
  EXPECT_EQ(c->rank(), world_rank());
  EXPECT_EQ(c->memory_space(), MemorySpace::Host);
  EXPECT_TRUE(c->compatible_with(MemorySpace::Host));
  EXPECT_EQ(c->name(), n ? "mpi" : "local");
}

template <typename T>
void check_all_reduce() {
  auto c = world();
  const int p = c->size(), r = c->rank();
  std::vector<T> sum(1000), mx(1000), mn(1000);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] = mx[i] = mn[i] = T(int(i % 7) + r);
  c->all_reduce_sum(sum.data(), sum.size());
  c->all_reduce_max(mx.data(), mx.size());
  c->all_reduce_min(mn.data(), mn.size());
  for (size_t i = 0; i < sum.size(); ++i) {
    EXPECT_EQ(sum[i], T(p * int(i % 7) + p * (p - 1) / 2)) << i;
    EXPECT_EQ(mx[i], T(int(i % 7) + p - 1)) << i;
    EXPECT_EQ(mn[i], T(int(i % 7))) << i;
  }
}

TEST(Collectives, AllReduceFloat) {
  check_all_reduce<float>();
}
TEST(Collectives, AllReduceDouble) {
  check_all_reduce<double>();
}
TEST(Collectives, AllReduceInt32) {
  check_all_reduce<int32_t>();
}
TEST(Collectives, AllReduceInt64) {
  check_all_reduce<int64_t>();
}

TEST(Collectives, ScalarHelpers) {
  auto c = world();
  EXPECT_EQ(c->sum<int64_t>(int64_t(1) << 40), (int64_t(1) << 40) * c->size());
  EXPECT_DOUBLE_EQ(c->max(double(c->rank())), double(c->size() - 1));
  EXPECT_EQ(c->sum<uint64_t>(3), uint64_t(3 * c->size()));
}

TEST(Collectives, AllGatherEqualCounts) {
  auto c = world();
  const int p = c->size(), r = c->rank();
  std::vector<int32_t> mine = {r * 10, r * 10 + 1, r * 10 + 2};
  std::vector<int32_t> all(size_t(p) * 3, -1);
  c->all_gather(mine.data(), 3, all.data());
  for (int q = 0; q < p; ++q)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(all[size_t(q * 3 + j)], q * 10 + j);
}

// Rank q contributes q+1 elements, except rank 1 which contributes none (a rank with an empty
// share must still take part).
std::vector<size_t> uneven_counts(int p) {
  std::vector<size_t> counts(static_cast<size_t>(p));
  for (int q = 0; q < p; ++q) counts[size_t(q)] = q == 1 ? 0 : size_t(q + 1);
  return counts;
}

TEST(Collectives, AllGatherVariableCounts) {
  auto c = world();
  const int p = c->size(), r = c->rank();
  const auto counts = uneven_counts(p);
  std::vector<double> mine(counts[size_t(r)]);
  for (size_t j = 0; j < mine.size(); ++j) mine[j] = r + 0.25 * double(j);
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
  std::vector<double> all(total, -1.0);
  c->all_gather_v(mine.data(), all.data(), counts);
  size_t k = 0;
  for (int q = 0; q < p; ++q)
    for (size_t j = 0; j < counts[size_t(q)]; ++j) EXPECT_DOUBLE_EQ(all[k++], q + 0.25 * double(j));
}

TEST(Collectives, AllGatherInPlace) {
  auto c = world();
  const int p = c->size(), r = c->rank();
  std::vector<float> all(size_t(p) * 2, -1.0f);
  all[size_t(r) * 2] = float(r);
  all[size_t(r) * 2 + 1] = float(r) + 0.5f;
  c->all_gather(all.data() + size_t(r) * 2, 2, all.data());
  for (int q = 0; q < p; ++q) {
    EXPECT_EQ(all[size_t(q) * 2], float(q));
    EXPECT_EQ(all[size_t(q) * 2 + 1], float(q) + 0.5f);
  }
}

TEST(Collectives, ReduceScatterEqualCounts) {
  auto c = world();
  const int p = c->size(), r = c->rank();
  const size_t n = 4;
  std::vector<float> send(size_t(p) * n);
  for (size_t i = 0; i < send.size(); ++i) send[i] = float(i) * float(r + 1);
  std::vector<float> recv(n, -1.0f);
  c->reduce_scatter_sum(send.data(), recv.data(), n);
  const float factor = float(p * (p + 1) / 2);  // sum over ranks of (rank + 1)
  for (size_t j = 0; j < n; ++j) EXPECT_FLOAT_EQ(recv[j], float(size_t(r) * n + j) * factor);
}

TEST(Collectives, ReduceScatterVariableCounts) {
  auto c = world();
  const int p = c->size(), r = c->rank();
  const auto counts = uneven_counts(p);
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
  std::vector<int64_t> send(total);
  for (size_t i = 0; i < total; ++i) send[i] = int64_t(i) + 100 * r;
  std::vector<int64_t> recv(counts[size_t(r)] + 1, -7);  // one guard element past the share
  c->reduce_scatter_sum_v(send.data(), recv.data(), counts);
  size_t offset = 0;
  for (int q = 0; q < r; ++q) offset += counts[size_t(q)];
  for (size_t j = 0; j < counts[size_t(r)]; ++j)
    EXPECT_EQ(recv[j], int64_t(p) * int64_t(offset + j) + 100 * p * (p - 1) / 2);
  EXPECT_EQ(recv.back(), -7);
}

TEST(Collectives, GatherToEachRoot) {
  auto c = world();
  const int p = c->size(), r = c->rank();
  const auto counts = uneven_counts(p);
  const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
  for (int root = 0; root < p; ++root) {
    std::vector<int32_t> mine(counts[size_t(r)], r * 100 + root);
    std::vector<int32_t> all(total, -1);
    c->gather_v(mine.data(), all.data(), counts, root);
    if (r != root) {
      for (int32_t v : all) EXPECT_EQ(v, -1);  // non-roots receive nothing
      continue;
    }
    size_t k = 0;
    for (int q = 0; q < p; ++q)
      for (size_t j = 0; j < counts[size_t(q)]; ++j) EXPECT_EQ(all[k++], q * 100 + root);
  }
  std::vector<double> one = {double(r)};
  std::vector<double> all(static_cast<size_t>(p));
  c->gather(one.data(), 1, all.data(), 0);
  if (r == 0)
    for (int q = 0; q < p; ++q) EXPECT_EQ(all[size_t(q)], double(q));
}

TEST(Collectives, BroadcastFromLastRank) {
  auto c = world();
  const int p = c->size(), r = c->rank();
  std::vector<int64_t> v(5, r == p - 1 ? 42 : 0);
  c->broadcast(v.data(), v.size(), p - 1);
  for (int64_t x : v) EXPECT_EQ(x, 42);
  std::string s = r == 0 ? "from rank zero" : "";
  c->broadcast_string(s, 0);
  EXPECT_EQ(s, "from rank zero");
  float f = r == 0 ? 1.5f : 0.0f;
  c->broadcast_bytes(&f, sizeof f, 0);
  EXPECT_EQ(f, 1.5f);
  c->barrier();
}

TEST(Collectives, SplitIntoSubCommunicators) {
  auto c = world();
  const int p = c->size(), r = c->rank();
  // Even and odd ranks, each group ranked in reverse order of world rank.
  auto sub = c->split(r % 2, p - r);
  ASSERT_NE(sub, nullptr);
  int members = 0, position = 0;
  for (int q = 0; q < p; ++q)
    if (q % 2 == r % 2) {
      ++members;
      if (q > r) ++position;
    }
  EXPECT_EQ(sub->size(), members);
  EXPECT_EQ(sub->rank(), position);
  // A reduction inside the group sees only the group's members.
  int64_t group_sum = sub->sum<int64_t>(r);
  int64_t expected = 0;
  for (int q = 0; q < p; ++q)
    if (q % 2 == r % 2) expected += q;
  EXPECT_EQ(group_sum, expected);
  // Ranks that opt out get no communicator; the others still work together.
  auto only_zero = c->split(r == 0 ? 0 : -1, 0);
  EXPECT_EQ(only_zero == nullptr, r != 0);
  if (only_zero) EXPECT_EQ(only_zero->size(), 1);
}

TEST(Collectives, SplitByHostHoldsEveryRankHere) {
  auto c = world();
  auto host = c->split_by_host();
  EXPECT_EQ(host->size(), c->size());  // every test rank runs on this machine
  EXPECT_EQ(ranks_on_this_host(), c->size());
}

TEST(Collectives, AsynchronousAllReduceOverlapsCompute) {
  auto c = world();
  const int p = c->size(), r = c->rank();
  std::vector<std::vector<float>> buckets(4, std::vector<float>(10000));
  std::vector<std::unique_ptr<PendingOp>> ops;
  for (size_t b = 0; b < buckets.size(); ++b) {
    for (size_t i = 0; i < buckets[b].size(); ++i) buckets[b][i] = float(b + 1) * float(r + 1);
    ops.push_back(c->start_all_reduce_sum(buckets[b].data(), buckets[b].size()));
  }
  // Blocking collectives wait for the asynchronous ones first (ORDER rule in communicator.h).
  for (auto& op : ops) op->wait();
  const float factor = float(p * (p + 1) / 2);
  for (size_t b = 0; b < buckets.size(); ++b)
    for (float v : buckets[b]) ASSERT_FLOAT_EQ(v, float(b + 1) * factor);
  c->barrier();
}

// Model-parallel prediction: every rank holds the top-k of its columns of each row (global
// column indices); rank 0 merges them into the top-k over the whole row. Scores repeat so that
// ties across ranks are broken by the lower index, as in one process.
TEST(Collectives, MergeTopKOfColumnSlices) {
  auto c = world();
  const uint32_t rows = 4, cols = 23, k = 5;
  auto score = [](uint32_t r, uint32_t j) { return float((j * 7 + r * 3) % 11); };
  TopK all, mine, merged;
  std::vector<float> whole(size_t(rows) * cols);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < cols; ++j) whole[size_t(r) * cols + j] = score(r, j);
  top_k_rows(whole.data(), rows, cols, cols, k, nullptr, all, 1);
  const uint32_t first = uint32_t(uint64_t(cols) * c->rank() / c->size());
  const uint32_t last = uint32_t(uint64_t(cols) * (c->rank() + 1) / c->size());
  std::vector<float> part(size_t(rows) * (last - first));
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t j = first; j < last; ++j)
      part[size_t(r) * (last - first) + j - first] = score(r, j);
  top_k_rows(part.data(), rows, last - first, last - first, k, nullptr, mine, 1);
  for (uint32_t& i : mine.index)
    if (i != UINT32_MAX) i += first;
  merge_top_k(*c, mine, rows, k, merged);
  if (c->rank() == 0) {
    EXPECT_EQ(merged.index, all.index);
    EXPECT_EQ(merged.score, all.score);
  }
}

TEST(Collectives, RankPrefixNamesTheRank) {
  if (world_size() == 1)
    EXPECT_EQ(rank_prefix(), "");
  else
    EXPECT_EQ(rank_prefix(), "rank " + std::to_string(world_rank()) + ": ");
}

TEST(LocalCommunicator, CopiesWhereBuffersDiffer) {
  LocalCommunicator c;
  std::vector<float> a = {1, 2, 3}, b(3);
  c.all_gather(a.data(), 3, b.data());
  EXPECT_EQ(a, b);
  std::vector<double> s = {4, 5}, t(2);
  c.reduce_scatter_sum(s.data(), t.data(), 2);
  EXPECT_EQ(s, t);
  std::vector<int32_t> g = {7}, h(1);
  c.gather(g.data(), 1, h.data(), 0);
  EXPECT_EQ(h[0], 7);
  EXPECT_EQ(c.split(-1, 0), nullptr);
  EXPECT_EQ(c.split(3, 0)->size(), 1);
  EXPECT_THROW(c.all_gather_v(a.data(), b.data(), std::vector<size_t>{1, 2}), Error);
}

}  // namespace
}  // namespace nn
