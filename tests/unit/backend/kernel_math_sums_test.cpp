// Host tests (HostKernelMath, no GPU needed) of the arithmetic the CUDA backend's device-resident
// sums use (backend/math/loss_sums.h): math::add_scaled, which sum_doubles_kernel<true> applies
// to a block's total (cuda/backend.cu), and math::fold_loss_sums, which fold_loss_sums_kernel
// runs on one thread. Run over the kernels' index spaces and compared with the CPU backend's
// *_accumulate operations and fold_loss_sums.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/math/loss_sums.h"
#include "backend/math/norm_math.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

// reduce_into (cuda/elementwise.cu): 256 blocks x 256 threads over x grid-stride, each thread
// summing in double, each block's total, the totals summed by one block, then add_scaled. The
// trees' order differs from this host order only in rounding: compared with a tolerance.
template <bool kSquares>
double gpu_style_sum(const std::vector<float>& x) {
  const size_t blocks = 256, threads = 256, stride = blocks * threads;
  std::vector<double> partial(blocks, 0.0);
  for (size_t b = 0; b < blocks; ++b)
    for (size_t t = 0; t < threads; ++t) {
      double acc = 0.0;
      for (size_t i = b * threads + t; i < x.size(); i += stride) {
        const double v = x[i];
        acc += kSquares ? v * v : std::fabs(v);
      }
      partial[b] += acc;
    }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

TEST(HostKernelMath, AccumulatedReductionsMatchTheCpuBackend) {
  CpuBackend cpu(2);
  Rng rng(31);
  for (size_t n : {size_t(1), size_t(255), size_t(70000), size_t(1) << 17}) {
    const std::vector<float> x = test::uniform(n, rng, -3.0, 3.0);
    const double scale = 0.5 * 1e-3f;
    double want[2] = {0.25, -1.0}, got[2] = {0.25, -1.0};
    cpu.sum_squares_accumulate(x.data(), n, scale, &want[0]);
    cpu.sum_abs_accumulate(x.data(), n, 2.0, &want[1]);
    math::add_scaled(&got[0], scale, gpu_style_sum<true>(x));
    math::add_scaled(&got[1], 2.0, gpu_style_sum<false>(x));
    EXPECT_NEAR(got[0], want[0], 1e-12 * std::fabs(want[0])) << n;
    EXPECT_NEAR(got[1], want[1], 1e-12 * std::fabs(want[1])) << n;
  }
}

// sparseness_penalty_accumulate (cuda/norm.cu): one value per unit, summed by one block and added
// with scale rows * beta.
TEST(HostKernelMath, AccumulatedSparsenessPenaltyMatchesTheCpuBackend) {
  CpuBackend cpu(2);
  Rng rng(32);
  const uint32_t rows = 19, cols = 777;
  const float p = 0.05f, beta = 0.3f;
  const std::vector<float> a = test::uniform(size_t(rows) * cols, rng, 0.0, 0.4);
  double want = 1.5, got = 1.5;
  cpu.sparseness_penalty_accumulate(a.data(), rows, cols, p, beta, nullptr, &want);
  double units = 0.0;
  for (uint32_t c = 0; c < cols; ++c) {
    double sum = 0.0;
    for (uint32_t r = 0; r < rows; ++r) sum += a[size_t(r) * cols + c];
    units += math::kl_divergence(p, math::sparseness_rho(sum, rows));
  }
  math::add_scaled(&got, double(rows) * double(beta), units);
  EXPECT_NEAR(got, want, 1e-12 * std::fabs(want));
}

// fold_loss_sums_kernel runs math::fold_loss_sums on one thread: over a sequence of batches with
// NaN and infinite errors it must leave exactly the CPU backend's sums.
TEST(HostKernelMath, FoldLossSumsMatchesTheCpuBackendBitForBit) {
  CpuBackend cpu(2);
  Rng rng(33);
  const double nan = std::numeric_limits<double>::quiet_NaN(),
               inf = std::numeric_limits<double>::infinity();
  double s_cpu[math::kLossSumCount] = {}, s_k[math::kLossSumCount] = {};
  for (uint64_t batch = 1; batch <= 200; ++batch) {
    double data = 100.0 * rng.uniform(), penalty = batch % 3 ? 0.0 : rng.uniform();
    if (batch == 97) data = inf;
    if (batch == 150) penalty = nan;
    s_cpu[math::kLossBatch] = s_k[math::kLossBatch] = data;
    s_cpu[math::kLossPenalty] = s_k[math::kLossPenalty] = penalty;
    cpu.fold_loss_sums(s_cpu, batch);
    math::fold_loss_sums(s_k, batch);
    for (size_t i = 0; i < math::kLossSumCount; ++i)
      ASSERT_TRUE(std::memcmp(&s_cpu[i], &s_k[i], sizeof(double)) == 0) << batch << " slot " << i;
  }
  EXPECT_EQ(s_k[math::kLossFirstBad], 97.0);
  EXPECT_EQ(s_k[math::kLossBadValue], inf);
  EXPECT_TRUE(std::isnan(s_k[math::kLossTotal]));
}

}  // namespace
}  // namespace nn
