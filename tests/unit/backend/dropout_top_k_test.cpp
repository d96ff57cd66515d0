// Dropout (counter-based mask: statistics, reproducibility, backward consistency) and top-K
// selection (order, ties, valid_cols, padding, NaN).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

TEST(Dropout, MaskFollowsUniformAtAndScalesSurvivors) {
  CpuBackend be(2);
  const size_t n = 200003;
  const float p = 0.3f;
  std::vector<float> x(n, 2.0f);
  be.dropout(x.data(), n, p, /*seed=*/42, /*stream=*/7);
  size_t dropped = 0;
  for (size_t i = 0; i < n; ++i) {
    const bool want_drop = uniform_at(42, 7, i) < p;
    ASSERT_EQ(x[i] == 0.0f, want_drop) << i;
    if (want_drop)
      ++dropped;
    else
      ASSERT_FLOAT_EQ(x[i], 2.0f / 0.7f) << i;
  }
  // Binomial(n, 0.3): standard deviation ~205; allow 5 sigma.
  EXPECT_NEAR(double(dropped), 0.3 * n, 5 * std::sqrt(n * 0.3 * 0.7));
}

TEST(Dropout, BackwardAppliesTheSameMaskAndStreamsDiffer) {
  CpuBackend be(2);
  const size_t n = 50000;
  Rng rng(3);
  auto x = test::uniform(n, rng, 0.5, 1.5);
  auto delta = test::uniform(n, rng, 0.5, 1.5);
  auto x0 = x, d0 = delta;
  be.dropout(x.data(), n, 0.5f, 9, 1);
  be.dropout_backward(delta.data(), n, 0.5f, 9, 1);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(x[i] == 0.0f, delta[i] == 0.0f) << i;
    if (x[i] != 0.0f) ASSERT_FLOAT_EQ(delta[i] / d0[i], x[i] / x0[i]) << i;
  }
  // Another stream gives another mask; p = 0 changes nothing.
  auto y = x0;
  be.dropout(y.data(), n, 0.5f, 9, 2);
  size_t same = 0;
  for (size_t i = 0; i < n; ++i) same += (y[i] == 0.0f) == (x[i] == 0.0f);
  EXPECT_LT(same, n * 6 / 10);
  auto z = x0;
  be.dropout(z.data(), n, 0.0f, 9, 1);
  EXPECT_TRUE(test::bitwise_equal(z, x0));
}

TEST(TopK, DescendingWithTiesToTheLowerIndex) {
  CpuBackend be(1);
  const std::vector<float> x = {0.5f,  0.9f,  0.5f,  0.1f,  0.9f,  0.7f,  // row 0
                                -1.0f, -2.0f, -3.0f, -4.0f, -5.0f, -6.0f};
  std::vector<float> v(2 * 4);
  std::vector<uint32_t> idx(2 * 4);
  be.top_k(x.data(), 2, 6, 6, 4, v.data(), idx.data());
  EXPECT_EQ(idx, (std::vector<uint32_t>{1, 4, 5, 0, 0, 1, 2, 3}));
  EXPECT_EQ(v, (std::vector<float>{0.9f, 0.9f, 0.7f, 0.5f, -1.0f, -2.0f, -3.0f, -4.0f}));
}

TEST(TopK, IgnoresColumnsPastValidColsAndPads) {
  CpuBackend be(1);
  const std::vector<float> x = {0.1f, 0.2f, 0.3f, 9.0f, 9.0f};
  std::vector<float> v(5);
  std::vector<uint32_t> idx(5);
  be.top_k(x.data(), 1, 5, 3, 5, v.data(), idx.data());
  EXPECT_EQ(idx[0], 2u);
  EXPECT_EQ(idx[1], 1u);
  EXPECT_EQ(idx[2], 0u);
  for (int i = 3; i < 5; ++i) {
    EXPECT_EQ(idx[i], UINT32_MAX);
    EXPECT_EQ(v[i], -std::numeric_limits<float>::infinity());
  }
}

TEST(TopK, NanRanksLastAndInfinitiesAreRealScores) {
  CpuBackend be(1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {nan, -inf, 1.0f, nan, inf};
  std::vector<float> v(5);
  std::vector<uint32_t> idx(5);
  be.top_k(x.data(), 1, 5, 5, 5, v.data(), idx.data());
  EXPECT_EQ(idx, (std::vector<uint32_t>{4, 2, 1, 0, 3}));
}

TEST(TopK, MatchesFullSortOnRandomRows) {
  CpuBackend be(2);
  Rng rng(12);
  const uint32_t rows = 64, cols = 2000, valid = 1900, k = 37;
  std::vector<float> x(size_t(rows) * cols);
  for (auto& e : x) e = float(rng.below(500)) * 0.25f;  // many ties
  std::vector<float> v(size_t(rows) * k);
  std::vector<uint32_t> idx(size_t(rows) * k);
  be.top_k(x.data(), rows, cols, valid, k, v.data(), idx.data());
  for (uint32_t r = 0; r < rows; ++r) {
    std::vector<uint32_t> order(valid);
    for (uint32_t c = 0; c < valid; ++c) order[c] = c;
    const float* row = x.data() + size_t(r) * cols;
    std::stable_sort(order.begin(), order.end(),
                     [row](uint32_t a, uint32_t b) { return row[a] > row[b]; });
    for (uint32_t i = 0; i < k; ++i) {
      ASSERT_EQ(idx[size_t(r) * k + i], order[i]) << r << " " << i;
      ASSERT_EQ(v[size_t(r) * k + i], row[order[i]]);
    }
  }
}

}  // namespace
}  // namespace nn
