// Host tests (HostKernelMath, no GPU needed) of the CUDA top-K's selection (cuda/top_k.cu): the
// per-row radix select of backend/math/top_k_select_math.h run over the kernels' index space
// (top_k_emulation.h) must give the CPU backend's top_k and top_k_filtered bit for bit, on rows
// full of ties (a handful of distinct values, -0 and +0, infinities), NaN, exclusions and
// multipliers, with K from 1 to past the width, and must collect exactly min(K, entries) keys a
// row (what bounds the scratch memory to rows x K keys).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/math/top_k_select_math.h"
#include "backend/top_k_emulation.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// Scores drawn from a few values (so most columns tie with others), with NaN, +-0 and +-inf.
std::vector<float> tied_scores(Rng& rng, size_t n) {
  const float pool[] = {0.25f, 0.5f, -0.5f, 0.0f, -0.0f, 1e-30f, INFINITY, -INFINITY, kNan, 3.0f};
  std::vector<float> x(n);
  for (float& v : x)
    v = rng.uniform() < 0.3 ? float(rng.uniform() * 2 - 1) : pool[rng.below(sizeof pool / 4)];
  return x;
}

// Random sorted filter lists per row (exclusions with duplicates and columns past the width;
// multipliers with 0 and a column listed twice), as CSR.
struct FilterLists {
  std::vector<uint32_t> ex_ptr{0}, ex_index, sc_ptr{0}, sc_index;
  std::vector<float> sc_value;
  FilterLists(Rng& rng, uint32_t rows, uint32_t cols) {
    for (uint32_t r = 0; r < rows; ++r) {
      for (uint32_t c = 0; c < cols + 3; ++c) {
        const double u = rng.uniform();
        if (r == 1 || u < 0.1) ex_index.push_back(c);  // row 1: everything excluded
        if (u < 0.02) ex_index.push_back(c);
        if (u > 0.9) {
          sc_index.push_back(c);
          sc_value.push_back(u > 0.99 ? 0.0f : float(4 * rng.uniform() - 1));
          if (u > 0.985) {
            sc_index.push_back(c);
            sc_value.push_back(-2.0f);
          }
        }
      }
      ex_ptr.push_back(uint32_t(ex_index.size()));
      sc_ptr.push_back(uint32_t(sc_index.size()));
    }
  }
  TopKFilter view(bool exclude, bool scale) const {
    TopKFilter f;
    if (exclude) {
      f.exclude_ptr = ex_ptr.data();
      f.exclude_index = ex_index.data();
    }
    if (scale) {
      f.scale_ptr = sc_ptr.data();
      f.scale_index = sc_index.data();
      f.scale_value = sc_value.data();
    }
    return f;
  }
};

struct Shape {
  uint32_t rows, cols, valid;
};
const Shape kShapes[] = {{1, 1, 1},       {3, 2, 2},       {17, 31, 31}, {9, 300, 257},
                         {4, 1025, 1025}, {2, 5000, 4999}, {40, 97, 0},  {1, 20000, 20000}};

std::vector<uint32_t> ks_for(uint32_t valid) {
  return {1u, 2u, 7u, valid > 1 ? valid - 1 : 1u, valid ? valid : 1u, valid + 5};
}

TEST(HostKernelMath, SelectIndexSpaceCoversEveryColumnOnce) {
  for (uint32_t rows : {1u, 3u, 1000u, 5000u})
    for (uint32_t valid : {1u, 255u, 1024u, 1025u, 100000u, 1000000u}) {
      const uint32_t per_row = math::select_blocks_per_row(rows, valid);
      ASSERT_GE(per_row, 1u);
      EXPECT_LE(uint64_t(rows) * per_row, std::max<uint64_t>(rows, 2 * math::kSelectTargetBlocks));
      std::vector<uint8_t> seen(valid, 0);
      for (uint32_t b = 0; b < per_row; ++b)
        for (uint32_t t = 0; t < math::kSelectThreads; ++t)
          for (uint64_t c = uint64_t(b) * math::kSelectThreads + t; c < valid;
               c += uint64_t(per_row) * math::kSelectThreads)
            ++seen[c];
      for (uint32_t c = 0; c < valid; ++c)
        ASSERT_EQ(seen[c], 1) << rows << "x" << valid << " " << c;
    }
  EXPECT_GT(math::select_blocks_per_row(1, 1000000), 100u);  // one wide row uses many blocks
}

// Pass arithmetic on hand-made histograms.
TEST(HostKernelMath, SelectStepFixesTheDigitOfTheKthLargestKey) {
  std::vector<uint32_t> hist(math::kSelectBins, 0);
  hist[200] = 3;
  hist[100] = 5;
  hist[7] = 10;
  math::RadixSelect s = math::select_start(6, 100);
  math::select_step(s, hist.data(), 56);  // 3 above digit 100, need 3 of its 5
  EXPECT_EQ(s.prefix, 100ull << 56);
  EXPECT_EQ(s.need, 3u);
  EXPECT_EQ(s.done, 0u);
  s = math::select_start(8, 100);
  math::select_step(s, hist.data(), 56);  // digit 100 exactly completes 8: done
  EXPECT_EQ(s.prefix, 100ull << 56);
  EXPECT_EQ(s.done, 1u);
  s = math::select_start(30, 100);
  math::select_step(s, hist.data(), 56);  // only 18 entries: take all
  EXPECT_EQ(s.done, 1u);
  EXPECT_EQ(s.prefix, 0ull);
  EXPECT_TRUE(math::select_takes(1ull, s));
  EXPECT_FALSE(math::select_takes(0ull, s));  // key 0 is never an entry
  EXPECT_TRUE(math::select_start(5, 5).done);
  EXPECT_FALSE(math::select_counts(0ull, math::RadixSelect{}, 56));
  EXPECT_TRUE(math::select_counts(5ull << 40, math::RadixSelect{}, 56));
  math::RadixSelect p;
  p.prefix = 0xab00000000000000ull;
  EXPECT_TRUE(math::select_counts(0xab12000000000000ull, p, 48));
  EXPECT_FALSE(math::select_counts(0xac12000000000000ull, p, 48));
}

TEST(HostKernelMath, TopKSelectionGivesTheCpuBackendsTopK) {
  CpuBackend cpu(2);
  Rng rng(51);
  int cases = 0;
  for (const Shape s : kShapes) {
    std::vector<float> x = tied_scores(rng, size_t(s.rows) * s.cols);
    if (s.rows > 2)
      for (uint32_t c = 0; c < s.cols; ++c) {
        x[c] = 0.5f;                   // row 0: every column ties
        x[size_t(s.cols) + c] = kNan;  // row 1: every column NaN
      }
    for (uint32_t k : ks_for(s.valid)) {
      std::vector<float> want_v(size_t(s.rows) * k), got_v;
      std::vector<uint32_t> want_i(size_t(s.rows) * k), got_i;
      cpu.top_k(x.data(), s.rows, s.cols, s.valid, k, want_v.data(), want_i.data());
      test::SelectStats stats;
      test::emulate_top_k(x, s.rows, s.cols, s.valid, k, got_v, got_i, &stats);
      EXPECT_EQ(got_i, want_i) << s.rows << "x" << s.cols << " valid " << s.valid << " k " << k;
      EXPECT_TRUE(test::bitwise_equal(got_v, want_v))
          << s.rows << "x" << s.cols << " valid " << s.valid << " k " << k;
      EXPECT_TRUE(stats.exact) << s.rows << "x" << s.cols << " k " << k;
      EXPECT_LE(stats.most_passes, math::kSelectPasses);
      ++cases;
    }
  }
  EXPECT_EQ(cases, 8 * 6);
}

TEST(HostKernelMath, FilteredTopKSelectionGivesTheCpuBackendsResult) {
  CpuBackend cpu(2);
  Rng rng(52);
  for (const Shape s : kShapes) {
    const std::vector<float> x = tied_scores(rng, size_t(s.rows) * s.cols);
    const FilterLists lists(rng, s.rows, s.cols);
    for (int parts = 0; parts < 4; ++parts) {  // none, exclusions, multipliers, both
      const TopKFilter f = lists.view(parts & 1, parts & 2);
      for (uint32_t k : ks_for(s.valid)) {
        std::vector<float> want_v(size_t(s.rows) * k), got_v;
        std::vector<uint32_t> want_i(size_t(s.rows) * k), got_i;
        cpu.top_k_filtered(x.data(), s.rows, s.cols, s.valid, k, f, want_v.data(), want_i.data());
        test::SelectStats stats;
        test::emulate_top_k_filtered(x, s.rows, s.cols, s.valid, k, f, got_v, got_i, &stats);
        const std::string what = std::to_string(s.rows) + "x" + std::to_string(s.cols) + " valid " +
                                 std::to_string(s.valid) + " k " + std::to_string(k) + " parts " +
                                 std::to_string(parts);
        EXPECT_EQ(got_i, want_i) << what;
        EXPECT_TRUE(test::bitwise_equal(got_v, want_v)) << what;
        EXPECT_TRUE(stats.exact) << what;
      }
    }
  }
}

// Distinct values: the select usually decides within the value's 4 bytes (4 passes), every
// tie of value and column is decided by the 8th pass at the latest.
TEST(HostKernelMath, TopKSelectionPassCounts) {
  Rng rng(53);
  const uint32_t cols = 4096;
  std::vector<float> distinct = test::uniform(cols, rng, -1, 1), ties(cols, 0.25f);
  std::vector<float> v;
  std::vector<uint32_t> i;
  test::SelectStats d, t;
  test::emulate_top_k(distinct, 1, cols, cols, 10, v, i, &d);
  test::emulate_top_k(ties, 1, cols, cols, 10, v, i, &t);
  EXPECT_LE(d.most_passes, 4);
  EXPECT_GT(t.most_passes, 4);
  EXPECT_LE(t.most_passes, math::kSelectPasses);
  for (uint32_t q = 0; q < 10; ++q) EXPECT_EQ(i[q], q);  // ties to the lower column
}

}  // namespace
}  // namespace nn
