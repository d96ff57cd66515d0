// The row-sparse optimizer operations (Backend::optimizer_step_rows and optimizer_skip_rows,
// train/row_sparse.h) on every backend: a row update is the dense update of that row, bit for
// bit, and leaves every other row alone; the closed-form catch-up of k skipped steps equals k
// dense steps with a zero gradient to float rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "backend/device_array.h"
#include "backend/math/optimizer_math.h"
#include "backend_test_util.h"
#include "core/random.h"
#include "optimizer_test_util.h"

namespace nn {
namespace {

using test::kAllOptimizers;
using test::random_values;

// Arrays of one parameter and its optimizer state, in the backend's memory.
struct Arrays {
  DeviceArray<float> w, s0, s1;
  Arrays(Backend& be, const std::vector<float>& w0, const std::vector<float>& a,
         const std::vector<float>& b)
      : w(test::to_device(be, w0)), s0(test::to_device(be, a)), s1(test::to_device(be, b)) {}
};

OptimizerParams params_of(OptimizerKind kind, float lambda) {
  OptimizerParams p;
  p.kind = kind;
  p.alpha = 0.05f;
  p.lambda = lambda;
  p.mu = 0.9f;
  p.mu1 = 0.999f;
  p.step = 3;
  return p;
}

class OptimizerRows : public test::BackendTest {};

TEST_P(OptimizerRows, UpdatesTheRowsAsTheDenseStepDoesAndNothingElse) {
  auto be = backend(2);
  // 70 floats a row crosses the CPU loop's 64-float chunks; rows in no particular pattern.
  const uint32_t rows = 13, width = 70;
  const std::vector<uint32_t> touched = {0, 3, 4, 9, 12};
  const size_t n = size_t(rows) * width;
  const auto w0 = random_values(1, n, -1.0f, 1.0f);
  const auto a0 = random_values(2, n, 0.0f, 0.5f);  // non-negative: second moments
  const auto b0 = random_values(3, n, 0.0f, 0.5f);
  const auto compact = random_values(4, touched.size() * width, -0.3f, 0.3f);
  std::vector<float> dense(n, 0.0f);
  for (size_t i = 0; i < touched.size(); ++i)
    for (uint32_t j = 0; j < width; ++j)
      dense[size_t(touched[i]) * width + j] = compact[i * width + j];
  for (const OptimizerKind kind : kAllOptimizers) {
    for (const float lambda : {0.0f, 0.01f}) {
      SCOPED_TRACE(std::string(to_string(kind)) + " lambda " + std::to_string(lambda));
      const OptimizerParams p = params_of(kind, lambda);
      Arrays full(*be, w0, a0, b0), part(*be, w0, a0, b0);
      auto g_dense = test::to_device(*be, dense);
      auto g_rows = test::to_device(*be, compact);
      auto index = test::to_device(*be, touched);
      be->optimizer_step(p, full.w.data(), g_dense.data(), full.s0.data(), full.s1.data(), n);
      be->optimizer_step_rows(p, part.w.data(), g_rows.data(), part.s0.data(), part.s1.data(),
                              width, index.data(), uint32_t(touched.size()));
      const auto fw = full.w.to_host(), pw = part.w.to_host();
      const auto fa = full.s0.to_host(), pa = part.s0.to_host();
      const auto fb = full.s1.to_host(), pb = part.s1.to_host();
      std::vector<bool> is_touched(rows, false);
      for (uint32_t r : touched) is_touched[r] = true;
      // With no decay, SGD's and AdaGrad's update of a zero-gradient row is nothing.
      const bool dense_equal =
          lambda == 0.0f && (kind == OptimizerKind::SGD || kind == OptimizerKind::AdaGrad);
      for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t j = 0; j < width; ++j) {
          const size_t e = size_t(r) * width + j;
          if (is_touched[r] || dense_equal) {
            ASSERT_EQ(pw[e], fw[e]) << "row " << r << " column " << j;
            ASSERT_EQ(pa[e], fa[e]) << "row " << r << " column " << j;
            ASSERT_EQ(pb[e], fb[e]) << "row " << r << " column " << j;
          } else {
            ASSERT_EQ(pw[e], w0[e]) << "untouched row " << r << " changed";
            ASSERT_EQ(pa[e], a0[e]) << "untouched row " << r << " state changed";
            ASSERT_EQ(pb[e], b0[e]) << "untouched row " << r << " state changed";
          }
        }
    }
  }
}

TEST_P(OptimizerRows, CatchUpEqualsZeroGradientSteps) {
  auto be = backend(2);
  const uint32_t rows = 6, width = 19;
  const size_t n = size_t(rows) * width;
  // Row r skipped skipped[r] steps; rows 0..5, of which row 2 skipped none.
  const std::vector<uint32_t> skipped = {1, 3, 0, 17, 60, 250};
  const auto w0 = random_values(5, n, -1.0f, 1.0f);
  const auto a0 = random_values(6, n, -0.2f, 0.2f);  // momentum: signed velocities
  const auto b0 = random_values(7, n, 0.0f, 0.5f);
  for (const OptimizerKind kind : kAllOptimizers) {
    SCOPED_TRACE(to_string(kind));
    auto a_init = a0;
    if (kind == OptimizerKind::RMSProp || kind == OptimizerKind::AdaDelta)
      for (float& x : a_init) x = std::fabs(x);
    OptimizerParams p = params_of(kind, 0.0f);
    Arrays stepped(*be, w0, a_init, b0), caught(*be, w0, a_init, b0);
    // The dense update with a zero gradient, row by row, the row's number of times.
    auto zero = test::to_device(*be, std::vector<float>(width, 0.0f));
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t k = 0; k < skipped[r]; ++k) {
        p.step = 10 + k;
        const size_t at = size_t(r) * width;
        be->optimizer_step(p, stepped.w.data() + at, zero.data(), stepped.s0.data() + at,
                           stepped.s1.data() + at, width);
      }
    // The closed form, for the rows listed in reverse order through `rows`.
    std::vector<uint32_t> order;
    std::vector<float> factors;
    for (uint32_t r = rows; r-- > 0;) {
      order.push_back(r);
      const math::SkipFactors f = math::skip_factors(kind, p.mu, skipped[r]);
      factors.push_back(f.decay);
      factors.push_back(f.w_per_v);
    }
    auto index = test::to_device(*be, order);
    auto f = test::to_device(*be, factors);
    be->optimizer_skip_rows(kind, caught.w.data(), caught.s0.data(), caught.s1.data(), width,
                            index.data(), f.data(), rows);
    const auto sw = stepped.w.to_host(), cw = caught.w.to_host();
    const auto sa = stepped.s0.to_host(), ca = caught.s0.to_host();
    const auto sb = stepped.s1.to_host(), cb = caught.s1.to_host();
    if (kind == OptimizerKind::Adam) {
      // No closed form: the operation leaves Adam alone (Adam rows are updated lazily or
      // densely instead, never caught up).
      EXPECT_EQ(cw, w0);
      continue;
    }
    for (size_t e = 0; e < n; ++e) {
      const double tol_w = 2e-6 * (1.0 + std::fabs(sw[e]));
      ASSERT_NEAR(cw[e], sw[e], tol_w) << "element " << e;
      ASSERT_NEAR(ca[e], sa[e], 2e-6 * (std::fabs(sa[e]) + 1e-30)) << "element " << e;
      ASSERT_NEAR(cb[e], sb[e], 2e-6 * (std::fabs(sb[e]) + 1e-30)) << "element " << e;
    }
  }
}

TEST_P(OptimizerRows, CatchUpOverEveryRowWithoutAnIndex) {
  auto be = backend(1);
  const uint32_t rows = 3, width = 4;
  std::vector<float> w(rows * width, 1.0f), v(rows * width, 0.5f);
  std::vector<float> factors;
  for (uint32_t r = 0; r < rows; ++r) {
    const math::SkipFactors f = math::skip_factors(OptimizerKind::Momentum, 0.5f, r);
    factors.push_back(f.decay);
    factors.push_back(f.w_per_v);
  }
  auto dw = test::to_device(*be, w), dv = test::to_device(*be, v);
  auto f = test::to_device(*be, factors);
  be->optimizer_skip_rows(OptimizerKind::Momentum, dw.data(), dv.data(), nullptr, width, nullptr,
                          f.data(), rows);
  const auto hw = dw.to_host(), hv = dv.to_host();
  // Row r skipped r steps: v halves each step and w gains each step's v.
  const float want_w[] = {1.0f, 1.25f, 1.375f}, want_v[] = {0.5f, 0.25f, 0.125f};
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < width; ++j) {
      EXPECT_FLOAT_EQ(hw[r * width + j], want_w[r]) << r;
      EXPECT_FLOAT_EQ(hv[r * width + j], want_v[r]) << r;
    }
}

NN_INSTANTIATE_ON_BACKENDS(OptimizerRows);

}  // namespace
}  // namespace nn
