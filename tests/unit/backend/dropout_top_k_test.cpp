// Dropout (counter-based mask: statistics, reproducibility, backward consistency, and a scalar
// re-derivation in double) and top-K selection (order, ties, valid_cols, padding, NaN, against a
// full stable sort), on every backend. The references are written here, not taken from
// backend/math/, so a wrong shared formula fails them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/backend.h"
#include "backend/device_array.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

using test::to_device;

class Dropout : public test::BackendTest {};
class TopK : public test::BackendTest {};

TEST_P(Dropout, MaskFollowsUniformAtAndScalesSurvivors) {
  auto be = backend(2);
  const size_t n = 200003;
  const float p = 0.3f;
  auto dx = to_device(*be, std::vector<float>(n, 2.0f));
  be->dropout(dx.data(), n, p, /*seed=*/42, /*stream=*/7);
  const auto x = dx.to_host();
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

TEST_P(Dropout, BackwardAppliesTheSameMaskAndStreamsDiffer) {
  auto be = backend(2);
  const size_t n = 50000;
  Rng rng(3);
  const auto x0 = test::uniform(n, rng, 0.5, 1.5);
  const auto d0 = test::uniform(n, rng, 0.5, 1.5);
  auto dx = to_device(*be, x0), ddelta = to_device(*be, d0);
  be->dropout(dx.data(), n, 0.5f, 9, 1);
  be->dropout_backward(ddelta.data(), n, 0.5f, 9, 1);
  const auto x = dx.to_host(), delta = ddelta.to_host();
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(x[i] == 0.0f, delta[i] == 0.0f) << i;
    if (x[i] != 0.0f) ASSERT_FLOAT_EQ(delta[i] / d0[i], x[i] / x0[i]) << i;
  }
  // Another stream gives another mask; p = 0 changes nothing.
  auto dy = to_device(*be, x0);
  be->dropout(dy.data(), n, 0.5f, 9, 2);
  const auto y = dy.to_host();
  size_t same = 0;
  for (size_t i = 0; i < n; ++i) same += (y[i] == 0.0f) == (x[i] == 0.0f);
  EXPECT_LT(same, n * 6 / 10);
  auto dz = to_device(*be, x0);
  be->dropout(dz.data(), n, 0.0f, 9, 1);
  EXPECT_TRUE(test::bitwise_equal(dz.to_host(), x0));
}

// Both passes against the contract of backend.h re-derived element by element in double, for
// several p, over the parallel path and a vector tail: element i is dropped when
// uniform_at(seed, stream, i) < p (core/random.h, the generator itself), else scaled by 1 / (1 -
// p).
TEST_P(Dropout, MatchesAScalarReDerivationInDouble) {
  auto be = backend(2);
  Rng rng(21);
  const size_t n = (size_t(1) << 16) + 13;
  const auto x = test::uniform(n, rng, -3, 3);
  for (float p : {0.05f, 0.5f, 0.9f})
    for (bool backward : {false, true}) {
      const uint64_t seed = 1234, stream = backward ? 5 : 4;
      auto d = to_device(*be, x);
      if (backward)
        be->dropout_backward(d.data(), n, p, seed, stream);
      else
        be->dropout(d.data(), n, p, seed, stream);
      std::vector<double> want(n);
      size_t kept = 0;
      for (size_t i = 0; i < n; ++i) {
        const bool drop = double(uniform_at(seed, stream, i)) < double(p);
        want[i] = drop ? 0.0 : double(x[i]) / (1.0 - double(p));
        kept += !drop;
      }
      // Dropped elements must be exactly 0; kept ones carry two float roundings (1 - p, x / keep).
      EXPECT_TRUE(test::all_near(d.to_host(), want, 0.0, 3e-7)) << "p " << p << " " << backward;
      EXPECT_NEAR(double(kept) / n, 1.0 - p, 0.01) << "p " << p;
    }
}

// top_k of a rows x cols matrix on `be`; values and indices back on the host.
struct TopKResult {
  std::vector<float> v;
  std::vector<uint32_t> idx;
};
TopKResult top_k(Backend& be, const std::vector<float>& x, uint32_t rows, uint32_t cols,
                 uint32_t valid, uint32_t k) {
  auto dx = to_device(be, x);
  DeviceArray<float> v(be, size_t(rows) * k);
  DeviceArray<uint32_t> idx(be, size_t(rows) * k);
  be.top_k(dx.data(), rows, cols, valid, k, v.data(), idx.data());
  return {v.to_host(), idx.to_host()};
}

TEST_P(TopK, DescendingWithTiesToTheLowerIndex) {
  auto be = backend(1);
  const std::vector<float> x = {0.5f,  0.9f,  0.5f,  0.1f,  0.9f,  0.7f,  // row 0
                                -1.0f, -2.0f, -3.0f, -4.0f, -5.0f, -6.0f};
  const TopKResult r = top_k(*be, x, 2, 6, 6, 4);
  EXPECT_EQ(r.idx, (std::vector<uint32_t>{1, 4, 5, 0, 0, 1, 2, 3}));
  EXPECT_EQ(r.v, (std::vector<float>{0.9f, 0.9f, 0.7f, 0.5f, -1.0f, -2.0f, -3.0f, -4.0f}));
}

TEST_P(TopK, IgnoresColumnsPastValidColsAndPads) {
  auto be = backend(1);
  const std::vector<float> x = {0.1f, 0.2f, 0.3f, 9.0f, 9.0f};
  const TopKResult r = top_k(*be, x, 1, 5, 3, 5);
  EXPECT_EQ(r.idx[0], 2u);
  EXPECT_EQ(r.idx[1], 1u);
  EXPECT_EQ(r.idx[2], 0u);
  for (int i = 3; i < 5; ++i) {
    EXPECT_EQ(r.idx[i], UINT32_MAX);
    EXPECT_EQ(r.v[i], -std::numeric_limits<float>::infinity());
  }
}

TEST_P(TopK, NanRanksLastAndInfinitiesAreRealScores) {
  auto be = backend(1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {nan, -inf, 1.0f, nan, inf};
  const TopKResult r = top_k(*be, x, 1, 5, 5, 5);
  EXPECT_EQ(r.idx, (std::vector<uint32_t>{4, 2, 1, 0, 3}));
}

TEST_P(TopK, MatchesFullSortOnRandomRows) {
  auto be = backend(2);
  Rng rng(12);
  const uint32_t rows = 64, cols = 2000, valid = 1900, k = 37;
  std::vector<float> x(size_t(rows) * cols);
  for (auto& e : x) e = float(rng.below(500)) * 0.25f;  // many ties
  const TopKResult r = top_k(*be, x, rows, cols, valid, k);
  for (uint32_t row_index = 0; row_index < rows; ++row_index) {
    std::vector<uint32_t> order(valid);
    for (uint32_t c = 0; c < valid; ++c) order[c] = c;
    const float* row = x.data() + size_t(row_index) * cols;
    std::stable_sort(order.begin(), order.end(),
                     [row](uint32_t a, uint32_t b) { return row[a] > row[b]; });
    for (uint32_t i = 0; i < k; ++i) {
      ASSERT_EQ(r.idx[size_t(row_index) * k + i], order[i]) << row_index << " " << i;
      ASSERT_EQ(r.v[size_t(row_index) * k + i], row[order[i]]);
    }
  }
}

NN_INSTANTIATE_ON_BACKENDS(Dropout);
NN_INSTANTIATE_ON_BACKENDS(TopK);

}  // namespace
}  // namespace nn
