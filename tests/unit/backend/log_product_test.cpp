// The CPU loss kernels' sum of logs as the log of a product (backend/cpu/log_product.h): the sum
// over factors across double's range, NaN and +inf kept, the zero-target factors of each log-loss
// form against loss_sweep_unit's per-unit error, and the CPU backend's sparse CrossEntropy sweep
// on a catalog-wide row against an exact evaluation (closer than a fast log per unit could get).
#include "backend/cpu/log_product.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/math/loss_row_math.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

// Feeds factors to the lanes as the sweep does: element i into lane i % kChunk.
double sum_of_logs(const std::vector<float>& factors) {
  cpu::LogProductLanes lanes;
  for (size_t b = 0; b < factors.size(); b += cpu::kChunk) {
    for (size_t j = b; j < std::min(factors.size(), b + cpu::kChunk); ++j)
      lanes.lanes()[j - b] *= double(factors[j]);
    lanes.end_chunk();
  }
  return lanes.sum_of_logs();
}

TEST(LogProduct, SumsLogsAcrossTheWholeFactorRange) {
  // Runs of the extreme factors (1e-12 is floor_log's clamp, FLT_MAX the largest float) in one
  // lane: without the renormalisation 64 of either would leave double's range.
  std::vector<float> f;
  for (int i = 0; i < 9000; ++i) {
    const int kind = i % 7;
    f.push_back(kind == 0   ? 1e-12f
                : kind == 1 ? FLT_MAX
                : kind == 2 ? 1.0f - 1e-7f
                : kind == 3 ? 0.5f
                            : 1.0f / float(1 + i % 97));
  }
  long double want = 0;
  for (float v : f) want += std::log(static_cast<long double>(v));
  EXPECT_NEAR(sum_of_logs(f), double(want), 1e-13 * std::fabs(double(want)));
}

TEST(LogProduct, NanAndInfinityAreKept) {
  std::vector<float> f(1000, 0.25f);
  f[300] = INFINITY;
  EXPECT_EQ(sum_of_logs(f), INFINITY);
  f[700] = NAN;
  EXPECT_TRUE(std::isnan(sum_of_logs(f)));
}

// A unit with target 0: -w * scale * ln(factor) is the error loss_sweep_unit gives.
template <math::Form F>
void expect_factor_matches_the_unit_error(const char* name) {
  math::LossRowConsts o;
  o.c.zero_target = 0.1f;
  o.c.zero_scale = 0.7f;
  const float w = 1.5f;
  for (float a : {-3.0f, 0.0f, 0.05f, 0.1f, 0.2f, 0.5f, 0.9f, 0.999999f, 1.0f, 1.5f}) {
    float d;
    const float e = math::loss_sweep_unit<F, math::DerivKind::Sigmoid>(o, a, 0.0f, w, true, d);
    const double from_factor =
        -double(w) * math::zero_log_scale<F>(o) * std::log(double(math::zero_log_factor<F>(o, a)));
    EXPECT_NEAR(from_factor, e, 1e-6 * (1.0 + std::fabs(e))) << name << " a = " << a;
  }
}

TEST(LogProduct, ZeroTargetFactorsGiveTheUnitErrors) {
  expect_factor_matches_the_unit_error<math::Form::CrossEntropy>("CrossEntropy");
  expect_factor_matches_the_unit_error<math::Form::Smce>("ScaledMarginalCrossEntropy");
  expect_factor_matches_the_unit_error<math::Form::Dsmce>("DataScaledMarginalCrossEntropy");
}

TEST(LogProduct, SparseCrossEntropyOverACatalogIsExact) {
  // 3 rows of 20,000 sigmoid outputs, a few stored targets each (one duplicated), weighted rows:
  // the CPU's error against a long double evaluation, to 1e-12. A fast log per unit in the
  // sweep (within ~3e-7 of the true one) lands about 1e-9 away on rows like these.
  const uint32_t rows = 3, cols = 20000;
  Rng rng(11);
  std::vector<float> a(size_t(rows) * cols);
  for (float& v : a) v = 1.0f / (1.0f + std::exp(-(rng.uniform() * 10.0f - 8.0f)));
  a[5] = 1.0f;  // a unit at the clamp: ln(1e-12)
  test::Csr sp;
  sp.cols = cols;
  sp.add_row({3, 700, 700, 19999});
  sp.add_row({});
  sp.add_row({0, 12345});
  const std::vector<float> weight = {1.0f, 2.0f, 0.5f};
  TargetView tv;
  tv.sparse = true;
  tv.sp = sp.view();
  tv.row_weight = weight.data();
  LossParams p;
  p.function = ErrorFunction::CrossEntropy;
  p.activation.kind = Activation::Sigmoid;

  // The CPU sweeps every unit with t = 0, then patches each stored unit: its t = 0 error out,
  // its error in, each by a fast log per unit in float. The reference takes the patches from
  // math::loss_patch_unit as they are and the sweep exactly, so only the sweep is under test.
  const math::LossRowConsts consts = math::loss_row_consts(p, tv);
  long double want = 0;
  for (uint32_t r = 0; r < rows; ++r) {
    std::vector<bool> stored(cols, false);
    for (uint32_t e = sp.row_ptr[r]; e < sp.row_ptr[r + 1]; ++e) stored[sp.index[e]] = true;
    long double row = 0;
    for (uint32_t j = 0; j < cols; ++j) {
      const float x = a[size_t(r) * cols + j];
      row -= std::log(static_cast<long double>(std::max(1.0f - x, 1e-12f)));  // 1 - a in float
      if (stored[j]) {
        float e, e0, d;
        math::loss_patch_unit<math::Form::CrossEntropy, math::DerivKind::Sigmoid>(
            consts, x, 1.0f, weight[r], e, e0, d);
        want += static_cast<long double>(e) - e0;
      }
    }
    want += weight[r] * row;
  }
  CpuBackend cpu(2);
  std::vector<float> delta(a.size());
  const double got = cpu.loss_and_delta(p, a.data(), tv, rows, cols, delta.data());
  EXPECT_NEAR(got, double(want), 1e-12 * std::fabs(double(want)));
  // The deltas are untouched by how the error is summed: w * (a - t).
  EXPECT_FLOAT_EQ(delta[7], a[7]);
  EXPECT_FLOAT_EQ(delta[cols + 7], 2.0f * a[cols + 7]);
  EXPECT_FLOAT_EQ(delta[700], a[700] - 1.0f);
}

}  // namespace
}  // namespace nn
