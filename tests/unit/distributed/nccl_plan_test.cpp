// The NCCL call plans of the variable-count collectives (distributed/nccl_plan.h) run through a
// host simulator of NCCL's semantics over 1 to 5 ranks: the collective calls of every rank must
// match (same kind, root and count, in the same order), every receive must meet a send, and the
// buffers must end up as all-gather, reduce-scatter and gather define, with nothing written
// outside the receiving blocks. This is what the NCCL communicator executes, checked without GPU.
#include "distributed/nccl_plan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace nn {
namespace {

constexpr int64_t kUntouched = -999;

struct Rank {
  std::vector<int64_t> send, recv;
};

bool collective(NcclCall::Kind k) {
  return k == NcclCall::AllGather || k == NcclCall::ReduceScatter || k == NcclCall::Broadcast ||
         k == NcclCall::Reduce;
}

const std::vector<int64_t>& source_of(const Rank& r, const NcclCall& c) {
  return c.from_recv ? r.recv : r.send;
}

// Applies every rank's plan to its buffers as NCCL would (sums for reductions). Buffers are read
// with at(), so an offset outside them fails the test.
void simulate(const std::vector<NcclPlan>& plans, std::vector<Rank>& ranks) {
  const size_t p = ranks.size();
  std::vector<std::vector<NcclCall>> coll(p), p2p(p), copies(p);
  for (size_t q = 0; q < p; ++q) {
    bool seen_copy = false;
    for (const NcclCall& c : plans[q].calls) {
      if (c.kind == NcclCall::Copy) {
        copies[q].push_back(c);
        seen_copy = true;
      } else {
        EXPECT_FALSE(seen_copy) << "rank " << q << ": a NCCL call after a copy";
        (collective(c.kind) ? coll : p2p)[q].push_back(c);
      }
    }
  }
  for (size_t q = 1; q < p; ++q) ASSERT_EQ(coll[q].size(), coll[0].size()) << "rank " << q;
  for (size_t k = 0; k < coll[0].size(); ++k) {
    const NcclCall& c0 = coll[0][k];
    for (size_t q = 1; q < p; ++q) {
      const NcclCall& c = coll[q][k];
      ASSERT_EQ(c.kind, c0.kind) << "call " << k << " rank " << q;
      ASSERT_EQ(c.peer, c0.peer) << "call " << k << " rank " << q;
      ASSERT_EQ(c.count, c0.count) << "call " << k << " rank " << q;
    }
    if (c0.peer >= 0) ASSERT_LT(size_t(c0.peer), p);
    const size_t n = c0.count;
    std::vector<Rank> before = ranks;  // a call reads what was there before it
    switch (c0.kind) {
      case NcclCall::AllGather:
        for (size_t q = 0; q < p; ++q)
          for (size_t i = 0; i < p; ++i)
            for (size_t j = 0; j < n; ++j)
              ranks[q].recv.at(coll[q][k].dst + i * n + j) =
                  source_of(before[i], coll[i][k]).at(coll[i][k].src + j);
        break;
      case NcclCall::ReduceScatter:
        for (size_t q = 0; q < p; ++q)
          for (size_t j = 0; j < n; ++j) {
            int64_t sum = 0;
            for (size_t i = 0; i < p; ++i)
              sum += source_of(before[i], coll[i][k]).at(coll[i][k].src + q * n + j);
            ranks[q].recv.at(coll[q][k].dst + j) = sum;
          }
        break;
      case NcclCall::Broadcast: {
        const size_t root = size_t(c0.peer);
        for (size_t q = 0; q < p; ++q)
          for (size_t j = 0; j < n; ++j)
            ranks[q].recv.at(coll[q][k].dst + j) =
                source_of(before[root], coll[root][k]).at(coll[root][k].src + j);
        break;
      }
      case NcclCall::Reduce: {
        const size_t root = size_t(c0.peer);
        for (size_t j = 0; j < n; ++j) {
          int64_t sum = 0;
          for (size_t i = 0; i < p; ++i)
            sum += source_of(before[i], coll[i][k]).at(coll[i][k].src + j);
          ranks[root].recv.at(coll[root][k].dst + j) = sum;
        }
        break;
      }
      default:
        break;
    }
  }
  // Point to point: each receive takes the first unmatched send of its peer to it.
  std::vector<std::vector<bool>> used(p);
  for (size_t q = 0; q < p; ++q) used[q].assign(p2p[q].size(), false);
  for (size_t q = 0; q < p; ++q)
    for (const NcclCall& c : p2p[q]) {
      if (c.kind != NcclCall::Recv) continue;
      ASSERT_TRUE(c.peer >= 0 && size_t(c.peer) < p && size_t(c.peer) != q);
      const size_t from = size_t(c.peer);
      bool matched = false;
      for (size_t s = 0; s < p2p[from].size() && !matched; ++s) {
        const NcclCall& snd = p2p[from][s];
        if (used[from][s] || snd.kind != NcclCall::Send || size_t(snd.peer) != q) continue;
        ASSERT_EQ(snd.count, c.count) << "send " << from << " -> " << q;
        used[from][s] = matched = true;
        for (size_t j = 0; j < c.count; ++j)
          ranks[q].recv.at(c.dst + j) = source_of(ranks[from], snd).at(snd.src + j);
      }
      ASSERT_TRUE(matched) << "rank " << q << " receives from " << from << " but nothing is sent";
    }
  for (size_t q = 0; q < p; ++q)
    for (size_t s = 0; s < p2p[q].size(); ++s)
      if (p2p[q][s].kind == NcclCall::Send) EXPECT_TRUE(used[q][s]) << "unmatched send of " << q;
  for (size_t q = 0; q < p; ++q)
    for (const NcclCall& c : copies[q]) {
      const std::vector<int64_t> src = source_of(ranks[q], c);
      for (size_t j = 0; j < c.count; ++j) ranks[q].recv.at(c.dst + j) = src.at(c.src + j);
    }
}

std::vector<std::vector<size_t>> count_patterns(int p) {
  std::vector<std::vector<size_t>> out;
  out.push_back(std::vector<size_t>(size_t(p), 5));  // equal
  out.push_back(std::vector<size_t>(size_t(p), 0));  // nothing at all
  std::vector<size_t> uneven(static_cast<size_t>(p));
  std::vector<size_t> one(static_cast<size_t>(p), 0), all_but_first(static_cast<size_t>(p), 3);
  for (int q = 0; q < p; ++q) uneven[size_t(q)] = q == 1 ? 0 : size_t(q + 1);
  one[size_t(p - 1)] = 4;
  all_but_first[0] = 0;
  out.push_back(uneven);
  out.push_back(one);
  out.push_back(all_but_first);
  return out;
}

std::string describe(const std::vector<size_t>& counts) {
  std::string s;
  for (size_t c : counts) s += (s.empty() ? "" : ",") + std::to_string(c);
  return "counts {" + s + "}";
}

int64_t value(size_t rank, size_t i) {
  return int64_t(rank) * 1000 + int64_t(i) + 1;
}

TEST(NcclPlan, AllGatherOfEveryCountPattern) {
  for (int p = 1; p <= 5; ++p)
    for (const auto& counts : count_patterns(p)) {
      const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
      std::vector<Rank> ranks(static_cast<size_t>(p));
      std::vector<NcclPlan> plans;
      std::vector<int64_t> want;
      for (int q = 0; q < p; ++q) {
        for (size_t i = 0; i < counts[size_t(q)]; ++i) {
          ranks[size_t(q)].send.push_back(value(size_t(q), i));
          want.push_back(value(size_t(q), i));
        }
        ranks[size_t(q)].recv.assign(total, kUntouched);
        plans.push_back(plan_all_gather(counts.data(), p, q));
      }
      simulate(plans, ranks);
      for (int q = 0; q < p; ++q)
        EXPECT_EQ(ranks[size_t(q)].recv, want)
            << p << " ranks, " << describe(counts) << ", rank " << q;
    }
}

TEST(NcclPlan, ReduceScatterOfEveryCountPattern) {
  for (int p = 1; p <= 5; ++p)
    for (const auto& counts : count_patterns(p)) {
      const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
      std::vector<Rank> ranks(static_cast<size_t>(p));
      std::vector<NcclPlan> plans;
      for (int q = 0; q < p; ++q) {
        for (size_t i = 0; i < total; ++i) ranks[size_t(q)].send.push_back(value(size_t(q), i));
        ranks[size_t(q)].recv.assign(counts[size_t(q)] + 1, kUntouched);  // one guard element
        plans.push_back(plan_reduce_scatter(counts.data(), p, q));
      }
      simulate(plans, ranks);
      size_t offset = 0;
      for (int q = 0; q < p; ++q) {
        std::vector<int64_t> want(counts[size_t(q)] + 1, kUntouched);
        for (size_t j = 0; j < counts[size_t(q)]; ++j) {
          want[j] = 0;
          for (int i = 0; i < p; ++i) want[j] += value(size_t(i), offset + j);
        }
        EXPECT_EQ(ranks[size_t(q)].recv, want)
            << p << " ranks, " << describe(counts) << ", rank " << q;
        offset += counts[size_t(q)];
      }
    }
}

TEST(NcclPlan, GatherOfEveryCountPatternToEveryRoot) {
  for (int p = 1; p <= 5; ++p)
    for (const auto& counts : count_patterns(p))
      for (int root = 0; root < p; ++root) {
        const size_t total = std::accumulate(counts.begin(), counts.end(), size_t(0));
        std::vector<Rank> ranks(static_cast<size_t>(p));
        std::vector<NcclPlan> plans;
        std::vector<int64_t> want;
        for (int q = 0; q < p; ++q) {
          for (size_t i = 0; i < counts[size_t(q)]; ++i) {
            ranks[size_t(q)].send.push_back(value(size_t(q), i));
            want.push_back(value(size_t(q), i));
          }
          ranks[size_t(q)].recv.assign(total, kUntouched);  // only the root's may change
          plans.push_back(plan_gather(counts.data(), p, q, root));
        }
        simulate(plans, ranks);
        for (int q = 0; q < p; ++q)
          EXPECT_EQ(ranks[size_t(q)].recv,
                    q == root ? want : std::vector<int64_t>(total, kUntouched))
              << p << " ranks, " << describe(counts) << ", root " << root << ", rank " << q;
      }
}

TEST(NcclPlan, EqualCountsUseTheDirectCollectives) {
  const std::vector<size_t> counts(4, 7);
  const NcclPlan g = plan_all_gather(counts.data(), 4, 2);
  ASSERT_EQ(g.calls.size(), 1u);
  EXPECT_EQ(g.calls[0].kind, NcclCall::AllGather);
  EXPECT_FALSE(g.grouped);
  const NcclPlan r = plan_reduce_scatter(counts.data(), 4, 1);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].kind, NcclCall::ReduceScatter);
  // Unequal counts: one grouped broadcast per rank with something to send.
  const std::vector<size_t> uneven = {2, 0, 3};
  const NcclPlan v = plan_all_gather(uneven.data(), 3, 0);
  EXPECT_TRUE(v.grouped);
  EXPECT_EQ(v.calls.size(), 2u);
}

}  // namespace
}  // namespace nn
