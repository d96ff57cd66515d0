// Variational layer kernels of every backend: the counter-based normal noise (moments, tails,
// determinism, independence of the stream), the sample against a reference in double built from
// the same draws, the backward pass against central differences of a reference loss in double
// (data term through the sample plus beta x KL), the KL sum, and the CPU backend's independence
// of its thread count. cos_2pi, the one new elementary function, against std::cos.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/device_array.h"
#include "backend/math/variational_math.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn::test {
namespace {

constexpr uint64_t kSeed = 99, kStream = 1234;

TEST(VariationalMath, Cos2PiMatchesTheLibraryCosine) {
  double worst = 0;
  for (int i = 0; i < 100000; ++i) {
    const float u = float(i) / 100000.0f;
    worst = std::max(worst, std::fabs(double(math::cos_2pi(u)) - std::cos(2 * M_PI * double(u))));
  }
  EXPECT_LT(worst, 5e-7);
  EXPECT_EQ(math::cos_2pi(0.0f), 1.0f);
  EXPECT_EQ(math::cos_2pi(0.5f), -1.0f);
}

TEST(VariationalMath, NoiseIsStandardNormal) {
  const int n = 400000;
  double sum = 0, sq = 0, fourth = 0, largest = 0;
  int within_one = 0;
  for (int i = 0; i < n; ++i) {
    const double x = math::gaussian_at(kSeed, kStream, uint64_t(i));
    sum += x;
    sq += x * x;
    fourth += x * x * x * x;
    within_one += std::fabs(x) < 1.0;
    largest = std::max(largest, std::fabs(x));
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.01);
  EXPECT_NEAR(fourth / n, 3.0, 0.06);  // kurtosis of a normal distribution
  EXPECT_NEAR(double(within_one) / n, 0.6827, 0.005);
  EXPECT_LT(largest, 5.8);  // sqrt(2 ln 2^24): the largest draw 24-bit uniforms can give
  EXPECT_GT(largest, 4.0);
  // Another stream or seed draws other numbers; the same counter draws the same number.
  EXPECT_NE(math::gaussian_at(kSeed, kStream, 7), math::gaussian_at(kSeed, kStream + 1, 7));
  EXPECT_NE(math::gaussian_at(kSeed, kStream, 7), math::gaussian_at(kSeed + 1, kStream, 7));
  EXPECT_EQ(math::gaussian_at(kSeed, kStream, 7), math::gaussian_at(kSeed, kStream, 7));
}

// A [rows][2n] block of means in [-1, 1] and log-variances in [-3, 1].
std::vector<float> moments(uint32_t rows, uint32_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> q(size_t(rows) * 2 * n);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < n; ++j) {
      q[size_t(r) * 2 * n + j] = float(-1 + 2 * rng.uniform());
      q[size_t(r) * 2 * n + n + j] = float(-3 + 4 * rng.uniform());
    }
  return q;
}

// The reference loss in double: sum over units of g * a + beta * KL, where a is the sample (or
// the mean) drawn with the kernel's noise.
double reference_loss(const std::vector<double>& q, const std::vector<float>& g, uint32_t rows,
                      uint32_t n, bool sample, double beta) {
  double loss = 0;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < n; ++j) {
      const double mean = q[size_t(r) * 2 * n + j], lv = q[size_t(r) * 2 * n + n + j];
      const double noise = sample ? math::gaussian_at(kSeed, kStream, uint64_t(r) * n + j) : 0.0;
      loss += g[size_t(r) * n + j] * (mean + noise * std::exp(lv / 2));
      loss += beta * 0.5 * (mean * mean + std::exp(lv) - lv - 1);
    }
  return loss;
}

class VariationalKernels : public BackendTest {};

TEST_P(VariationalKernels, ForwardSamplesOrPassesTheMean) {
  auto be = backend(2);
  const uint32_t rows = 37, n = 23;
  const auto q = moments(rows, n, 3);
  const auto d_q = to_device(*be, q);
  auto d_a = to_device(*be, std::vector<float>(size_t(rows) * n, -7.0f));
  be->variational_forward(d_q.data(), rows, n, /*sample=*/false, kSeed, kStream, d_a.data());
  const auto mean_only = d_a.to_host();
  be->variational_forward(d_q.data(), rows, n, /*sample=*/true, kSeed, kStream, d_a.data());
  const auto sampled = d_a.to_host();
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < n; ++j) {
      const double mean = q[size_t(r) * 2 * n + j], lv = q[size_t(r) * 2 * n + n + j];
      const double noise = math::gaussian_at(kSeed, kStream, uint64_t(r) * n + j);
      EXPECT_EQ(mean_only[size_t(r) * n + j], float(mean));
      EXPECT_NEAR(sampled[size_t(r) * n + j], mean + noise * std::exp(lv / 2), 2e-6)
          << r << "," << j;
    }
}

TEST_P(VariationalKernels, BackwardIsTheGradientOfTheDataAndKlTerms) {
  auto be = backend(2);
  const uint32_t rows = 5, n = 7;
  const float beta = 0.3f;
  const auto q = moments(rows, n, 5);
  Rng rng(8);
  const auto g = uniform(size_t(rows) * n, rng, -1, 1);  // dE/da
  for (bool sample : {true, false}) {
    SCOPED_TRACE(sample ? "sampling" : "mean");
    const auto d_q = to_device(*be, q), d_g = to_device(*be, g);
    auto d_dq = to_device(*be, std::vector<float>(q.size(), 99.0f));  // overwritten
    be->variational_backward(d_q.data(), d_g.data(), rows, n, sample, beta, kSeed, kStream,
                             d_dq.data());
    const auto dq = d_dq.to_host();
    std::vector<double> x(q.begin(), q.end());
    for (size_t i = 0; i < x.size(); ++i) {
      const double orig = x[i], h = 1e-5;
      x[i] = orig + h;
      const double up = reference_loss(x, g, rows, n, sample, beta);
      x[i] = orig - h;
      const double down = reference_loss(x, g, rows, n, sample, beta);
      x[i] = orig;
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(dq[i], numeric, 1e-5 + 1e-5 * std::fabs(numeric)) << i;
    }
  }
}

TEST_P(VariationalKernels, KlIsAddedIntoTheSum) {
  auto be = backend(2);
  const uint32_t rows = 300, n = 50;
  const auto q = moments(rows, n, 11);
  double want = 0;
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < n; ++j) {
      const double mean = q[size_t(r) * 2 * n + j], lv = q[size_t(r) * 2 * n + n + j];
      want += 0.5 * (mean * mean + std::exp(lv) - lv - 1);
    }
  const auto d_q = to_device(*be, q);
  DeviceArray<double> sum;
  sum.assign(*be, std::vector<double>{2.5});
  be->variational_kl_accumulate(d_q.data(), rows, n, 0.25f, sum.data());
  EXPECT_NEAR(sum.to_host()[0], 2.5 + 0.25 * want, 1e-6 * want);
  be->variational_kl_accumulate(d_q.data(), 0, n, 0.25f, sum.data());  // nothing to add
  EXPECT_NEAR(sum.to_host()[0], 2.5 + 0.25 * want, 1e-6 * want);
}

NN_INSTANTIATE_ON_BACKENDS(VariationalKernels);

TEST(VariationalKernelsThreads, ResultsDoNotDependOnTheThreadCount) {
  const uint32_t rows = 200, n = 300;  // above the size that is split over the pool
  const auto q = moments(rows, n, 17);
  Rng rng(4);
  const auto g = uniform(size_t(rows) * n, rng, -1, 1);
  std::vector<std::vector<float>> as, dqs;
  std::vector<double> kls;
  for (int threads : {1, 2, 3}) {
    CpuBackend be(threads);
    std::vector<float> a(size_t(rows) * n), dq(q.size());
    be.variational_forward(q.data(), rows, n, true, kSeed, kStream, a.data());
    be.variational_backward(q.data(), g.data(), rows, n, true, 0.5f, kSeed, kStream, dq.data());
    double kl = 0;
    be.variational_kl_accumulate(q.data(), rows, n, 1.0f, &kl);
    as.push_back(a);
    dqs.push_back(dq);
    kls.push_back(kl);
  }
  for (int k : {1, 2}) {
    EXPECT_EQ(as[0], as[k]);
    EXPECT_EQ(dqs[0], dqs[k]);
    EXPECT_EQ(kls[0], kls[k]);
  }
}

}  // namespace
}  // namespace nn::test
