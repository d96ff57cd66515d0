// Accuracy of the vectorisable exp/expm1/log/log1p/sigmoid/tanh against the C library, and their
// behaviour at the ends of the float range.
#include "backend/math/fast_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace nn {
namespace {

// Max relative error of f against ref over n points of [lo, hi] (ref computed in double).
template <typename F, typename R>
double max_rel_error(F f, R ref, double lo, double hi, int n) {
  double worst = 0.0;
  for (int i = 0; i <= n; ++i) {
    const float x = static_cast<float>(lo + (hi - lo) * i / n);
    const double want = ref(double(x));
    const double got = f(x);
    if (want == 0.0) continue;
    worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
  }
  return worst;
}

TEST(FastMath, ExpIsAccurateOverTheNormalRange) {
  auto f = [](float x) { return fastmath::exp(x); };
  auto r = [](double x) { return std::exp(x); };
  EXPECT_LT(max_rel_error(f, r, -87.0, 88.0, 200000), 1e-6);
  EXPECT_LT(max_rel_error(f, r, -1.0, 1.0, 20000), 1e-6);
  EXPECT_EQ(fastmath::exp(0.0f), 1.0f);
}

TEST(FastMath, ExpSaturatesWithoutInfOrNan) {
  for (float x : {-1e4f, -100.0f, -88.0f}) EXPECT_EQ(fastmath::exp(x), 0.0f) << x;
  for (float x : {88.5f, 100.0f, 1e4f, std::numeric_limits<float>::max()}) {
    const float y = fastmath::exp(x);
    EXPECT_TRUE(std::isfinite(y)) << x;
    EXPECT_GT(y, 1e38f) << x;
  }
  EXPECT_TRUE(std::isnan(fastmath::exp(std::numeric_limits<float>::quiet_NaN())));
}

TEST(FastMath, Expm1KeepsRelativeAccuracyNearZero) {
  auto f = [](float x) { return fastmath::expm1(x); };
  auto r = [](double x) { return std::expm1(x); };
  EXPECT_LT(max_rel_error(f, r, -1e-3, 1e-3, 20001), 1e-6);
  EXPECT_LT(max_rel_error(f, r, -20.0, 20.0, 100001), 1e-6);
  EXPECT_EQ(fastmath::expm1(-1e4f), -1.0f);
  EXPECT_TRUE(std::isfinite(fastmath::expm1(1e4f)));
}

TEST(FastMath, LogIsAccurateFromTheLogFloorUp) {
  auto f = [](float x) { return fastmath::log(x); };
  auto r = [](double x) { return std::log(x); };
  EXPECT_LT(max_rel_error(f, r, 1e-12, 1e-9, 10000), 1e-6);
  EXPECT_LT(max_rel_error(f, r, 0.5, 2.0, 100000), 2e-6);  // includes x ~ 1 where ln x ~ 0
  EXPECT_LT(max_rel_error(f, r, 2.0, 1e30, 100000), 1e-6);
  // Near 1 the absolute error is what matters.
  for (float x : {0.999999f, 1.0f, 1.000001f})
    EXPECT_NEAR(fastmath::log(x), std::log(double(x)), 1e-7);
  EXPECT_EQ(fastmath::log(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fastmath::log(std::numeric_limits<float>::quiet_NaN())));
}

TEST(FastMath, Log1pIsAccurateForTinyArguments) {
  auto f = [](float x) { return fastmath::log1p(x); };
  auto r = [](double x) { return std::log1p(x); };
  EXPECT_LT(max_rel_error(f, r, 1e-30, 1e-6, 10000), 1e-6);
  EXPECT_LT(max_rel_error(f, r, 1e-6, 1.0, 100000), 1e-6);
  EXPECT_EQ(fastmath::log1p(0.0f), 0.0f);
}

TEST(FastMath, SigmoidAndTanhMatchReferenceAndSaturateCleanly) {
  auto sig = [](float x) { return fastmath::sigmoid(x); };
  auto sig_ref = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  EXPECT_LT(max_rel_error(sig, sig_ref, -80.0, 80.0, 200000), 1e-6);
  auto th = [](float x) { return fastmath::tanh(x); };
  auto th_ref = [](double x) { return std::tanh(x); };
  EXPECT_LT(max_rel_error(th, th_ref, -1e-3, 1e-3, 20000), 1e-6);
  EXPECT_LT(max_rel_error(th, th_ref, -40.0, 40.0, 200000), 1e-6);
  for (float z : {100.0f, 1e4f}) {
    EXPECT_EQ(fastmath::sigmoid(z), 1.0f);
    EXPECT_EQ(fastmath::tanh(z), 1.0f);
    EXPECT_EQ(fastmath::tanh(-z), -1.0f);
    const float s = fastmath::sigmoid(-z);
    EXPECT_TRUE(s >= 0.0f && s < 1e-37f) << s;
  }
}

}  // namespace
}  // namespace nn
