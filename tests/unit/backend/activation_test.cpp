// Activations: forward values against double-precision formulas, activation_backward against
// central finite differences of activate (SoftMax through its full Jacobian), and large inputs.
// MaxOut (not elementwise) has its own kernel tests at the end. Every test runs on every backend.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "backend/device_array.h"
#include "backend_test_util.h"
#include "core/error.h"
#include "core/random.h"

namespace nn {
namespace {

using test::all_near;
using test::to_device;
using test::uniform;

const Activation kAll[] = {Activation::Sigmoid,
                           Activation::Tanh,
                           Activation::RectifiedLinear,
                           Activation::Linear,
                           Activation::ParametricRectifiedLinear,
                           Activation::SoftPlus,
                           Activation::SoftSign,
                           Activation::SoftMax,
                           Activation::ReluMax,
                           Activation::LinearMax,
                           Activation::ExponentialLinear,
                           Activation::LeakyRectifiedLinear,
                           Activation::ScaledExponentialLinear};

ActivationParams params(Activation a) {
  ActivationParams p;
  p.kind = a;
  p.slope = 0.2f;
  p.alpha = 1.3f;
  p.lambda = 1.0507f;
  p.max_value = 1.7f;  // ReluMax in [0, 1.7], LinearMax in [-1.7, 1.7]
  return p;
}

// Moves test points off the kinks (0 and the ReluMax/LinearMax bounds), where finite
// differences straddle two slopes.
void away_from_kinks(std::vector<float>& z, const ActivationParams& p) {
  for (auto& v : z)
    for (float kink : {0.0f, p.max_value, -p.max_value})
      if (std::fabs(v - kink) < 0.05f) v += 0.2f;
}

// Reference forward pass in double, row by row.
std::vector<double> reference(const ActivationParams& p, const std::vector<float>& z, uint32_t rows,
                              uint32_t cols) {
  std::vector<double> a(z.size());
  for (uint32_t r = 0; r < rows; ++r) {
    double mx = -INFINITY, sum = 0.0;
    for (uint32_t c = 0; c < cols; ++c) mx = std::max(mx, double(z[size_t(r) * cols + c]));
    for (uint32_t c = 0; c < cols; ++c) sum += std::exp(double(z[size_t(r) * cols + c]) - mx);
    for (uint32_t c = 0; c < cols; ++c) {
      const double x = z[size_t(r) * cols + c];
      double y = 0.0;
      switch (p.kind) {
        case Activation::Sigmoid:
          y = 1.0 / (1.0 + std::exp(-x));
          break;
        case Activation::Tanh:
          y = std::tanh(x);
          break;
        case Activation::Linear:
          y = x;
          break;
        case Activation::LinearMax:
          y = std::min(std::max(x, -double(p.max_value)), double(p.max_value));
          break;
        case Activation::RectifiedLinear:
          y = x > 0 ? x : 0.0;
          break;
        case Activation::ReluMax:
          y = std::min(std::max(x, 0.0), double(p.max_value));
          break;
        case Activation::MaxOut:
          ADD_FAILURE() << "MaxOut is not elementwise";
          break;
        case Activation::LeakyRectifiedLinear:
        case Activation::ParametricRectifiedLinear:
          y = x > 0 ? x : p.slope * x;
          break;
        case Activation::ExponentialLinear:
          y = x > 0 ? x : p.alpha * std::expm1(x);
          break;
        case Activation::ScaledExponentialLinear:
          y = p.lambda * (x > 0 ? x : p.alpha * std::expm1(x));
          break;
        case Activation::SoftPlus:
          y = std::log1p(std::exp(x));
          break;
        case Activation::SoftSign:
          y = x / (1.0 + std::fabs(x));
          break;
        case Activation::SoftMax:
          y = std::exp(x - mx) / sum;
          break;
      }
      a[size_t(r) * cols + c] = y;
    }
  }
  return a;
}

// x = f(x) on `be`, through its memory.
std::vector<float> activated(Backend& be, const ActivationParams& p, const std::vector<float>& z,
                             uint32_t rows, uint32_t cols) {
  auto d = to_device(be, z);
  be.activate(p, d.data(), rows, cols);
  return d.to_host();
}

// delta * f'(z) through a = f(z) on `be`.
std::vector<float> backward(Backend& be, const ActivationParams& p, const std::vector<float>& a,
                            const std::vector<float>& delta, uint32_t rows, uint32_t cols) {
  auto da = to_device(be, a), dd = to_device(be, delta);
  be.activation_backward(p, da.data(), dd.data(), rows, cols);
  return dd.to_host();
}

class Activations : public test::BackendTestWith<Activation> {
 protected:
  ActivationParams param() const { return params(std::get<1>(GetParam())); }
};

TEST_P(Activations, ForwardMatchesReference) {
  const ActivationParams p = param();
  auto be = backend(2);
  Rng rng(7);
  const uint32_t rows = 70, cols = 301;  // parallel path and vector tails
  auto z = uniform(size_t(rows) * cols, rng, -12, 12);
  const auto want = reference(p, z, rows, cols);
  z = activated(*be, p, z, rows, cols);
  EXPECT_TRUE(all_near(z, want, 1e-7, 2e-6)) << to_string(p.kind);
}

TEST_P(Activations, LargeInputsGiveFiniteOutputsAndDerivatives) {
  const ActivationParams p = param();
  auto be = backend(1);
  std::vector<float> z = {-1e4f, -100.0f, -20.0f, 0.0f, 20.0f, 100.0f, 1e4f, 3e38f};
  const auto want = reference(p, z, 1, uint32_t(z.size()));
  z = activated(*be, p, z, 1, uint32_t(z.size()));
  for (size_t i = 0; i < z.size(); ++i) {
    ASSERT_TRUE(std::isfinite(z[i])) << to_string(p.kind) << " input " << i;
    if (std::isfinite(want[i]) && p.kind != Activation::SoftMax)
      EXPECT_NEAR(z[i], want[i], 1e-6 * std::fabs(want[i]) + 1e-30)
          << to_string(p.kind) << " " << i;
  }
  const std::vector<float> d =
      backward(*be, p, z, std::vector<float>(z.size(), 1.0f), 1, uint32_t(z.size()));
  for (size_t i = 0; i < d.size(); ++i)
    EXPECT_TRUE(std::isfinite(d[i])) << to_string(p.kind) << " " << i;
}

// For a random upstream gradient u, activation_backward must give sum_i u_i * da_i/dz_j.
TEST_P(Activations, BackwardMatchesFiniteDifferences) {
  const ActivationParams p = param();
  auto be = backend(1);
  Rng rng(17);
  const uint32_t rows = 3, cols = 7;
  std::vector<float> z = uniform(size_t(rows) * cols, rng, -3, 3);
  away_from_kinks(z, p);
  auto u = uniform(z.size(), rng, -1, 1);
  const auto a = activated(*be, p, z, rows, cols);
  const auto delta = backward(*be, p, a, u, rows, cols);

  const double h = 1e-3;
  std::vector<double> fd(z.size());
  for (size_t j = 0; j < z.size(); ++j) {
    // The objective sum_i u_i a_i(z) in double; only row j / cols changes.
    auto objective = [&](float zj) {
      std::vector<float> zz = z;
      zz[j] = zj;
      const auto ad = reference(p, zz, rows, cols);  // double forward for a clean difference
      double s = 0.0;
      for (size_t i = 0; i < ad.size(); ++i) s += u[i] * ad[i];
      return s;
    };
    const float zp = static_cast<float>(z[j] + h), zm = static_cast<float>(z[j] - h);
    fd[j] = (objective(zp) - objective(zm)) / (double(zp) - double(zm));
  }
  EXPECT_TRUE(all_near(delta, fd, 2e-5, 2e-3)) << to_string(p.kind);
}

// The same check against the backend's own (float) forward pass: a larger step and tolerance,
// because a is rounded to float before the difference is taken.
TEST_P(Activations, BackwardMatchesFiniteDifferencesOfTheBackendForward) {
  const ActivationParams p = param();
  auto be = backend(1);
  Rng rng(27);
  const uint32_t rows = 2, cols = 6;
  std::vector<float> z = uniform(size_t(rows) * cols, rng, -3, 3);
  away_from_kinks(z, p);
  auto u = uniform(z.size(), rng, -1, 1);
  const auto a = activated(*be, p, z, rows, cols);
  const auto delta = backward(*be, p, a, u, rows, cols);
  const float h = 1e-2f;
  std::vector<double> fd(z.size());
  for (size_t j = 0; j < z.size(); ++j) {
    auto objective = [&](float zj) {
      std::vector<float> zz = z;
      zz[j] = zj;
      zz = activated(*be, p, zz, rows, cols);
      double s = 0.0;
      for (size_t i = 0; i < zz.size(); ++i) s += double(u[i]) * zz[i];
      return s;
    };
    const float zp = z[j] + h, zm = z[j] - h;
    fd[j] = (objective(zp) - objective(zm)) / (double(zp) - double(zm));
  }
  EXPECT_TRUE(all_near(delta, fd, 5e-4, 1e-2)) << to_string(p.kind);
}

INSTANTIATE_TEST_SUITE_P(
    All, Activations,
    ::testing::Combine(::testing::ValuesIn(test::backend_names()), ::testing::ValuesIn(kAll)),
    [](const ::testing::TestParamInfo<std::tuple<std::string, Activation>>& info) {
      return std::get<0>(info.param) + "_" + to_string(std::get<1>(info.param));
    });

class ActivationKernels : public test::BackendTest {};

TEST_P(ActivationKernels, SoftMaxRowsSumToOne) {
  auto be = backend(2);
  Rng rng(8);
  const uint32_t rows = 33, cols = 1000;
  auto z = uniform(size_t(rows) * cols, rng, -50, 50);
  z = activated(*be, params(Activation::SoftMax), z, rows, cols);
  for (uint32_t r = 0; r < rows; ++r) {
    double s = 0.0;
    for (uint32_t c = 0; c < cols; ++c) s += z[size_t(r) * cols + c];
    EXPECT_NEAR(s, 1.0, 1e-5) << r;
  }
}

NN_INSTANTIATE_ON_BACKENDS(ActivationKernels);

class MaxOut : public test::BackendTest {};

// MaxOut kernels against a direct loop: groups of k pieces, `inner` values apart.
TEST_P(MaxOut, ForwardTakesTheLargestPieceAndBackwardRoutesToIt) {
  for (uint32_t inner : {1u, 5u}) {
    auto be = backend(2);
    Rng rng(11 + inner);
    const uint32_t k = 3;
    const size_t groups = 4000 / inner;  // large enough for the parallel path
    auto z = uniform(groups * k * inner, rng, -4, 4);
    auto dz_in = to_device(*be, z);
    DeviceArray<float> d_a(*be, groups * inner);
    DeviceArray<uint32_t> d_arg(*be, groups * inner);
    be->maxout_forward(dz_in.data(), groups, k, inner, d_a.data(), d_arg.data());
    const auto a = d_a.to_host();
    const auto arg = d_arg.to_host();
    auto da = uniform(a.size(), rng, -1, 1);
    auto d_da = to_device(*be, da);
    auto d_dz = to_device(*be, std::vector<float>(z.size(), 99.0f));  // overwritten everywhere
    be->maxout_backward(d_da.data(), d_arg.data(), groups, k, inner, d_dz.data());
    const auto dz = d_dz.to_host();
    for (size_t g = 0; g < groups; ++g)
      for (uint32_t s = 0; s < inner; ++s) {
        uint32_t best = 0;
        for (uint32_t i = 1; i < k; ++i)
          if (z[(g * k + i) * inner + s] > z[(g * k + best) * inner + s]) best = i;
        const size_t o = g * inner + s;
        ASSERT_EQ(arg[o], best) << g << " " << s;
        ASSERT_EQ(a[o], z[(g * k + best) * inner + s]);
        for (uint32_t i = 0; i < k; ++i)
          ASSERT_EQ(dz[(g * k + i) * inner + s], i == best ? da[o] : 0.0f) << g << " " << i;
      }
  }
}

TEST_P(MaxOut, TiesGoToTheFirstPieceAndNaNPropagates) {
  auto be = backend(1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Three groups of k = 2: a tie, a NaN second piece, a NaN first piece.
  auto z = to_device(*be, std::vector<float>{1.5f, 1.5f, 0.0f, nan, nan, 7.0f});
  DeviceArray<float> d_a(*be, 3);
  DeviceArray<uint32_t> d_arg(*be, 3);
  be->maxout_forward(z.data(), 3, 2, 1, d_a.data(), d_arg.data());
  const auto a = d_a.to_host();
  const auto arg = d_arg.to_host();
  EXPECT_EQ(a[0], 1.5f);
  EXPECT_EQ(arg[0], 0u);
  EXPECT_TRUE(std::isnan(a[1]));
  EXPECT_EQ(arg[1], 1u);
  EXPECT_TRUE(std::isnan(a[2]));
  EXPECT_EQ(arg[2], 0u);
}

TEST_P(MaxOut, ElementwiseActivateRejectsIt) {
  auto be = backend(1);
  auto z = to_device(*be, std::vector<float>(4, 1.0f));
  EXPECT_THROW(be->activate(params(Activation::MaxOut), z.data(), 1, 4), InternalError);
}

NN_INSTANTIATE_ON_BACKENDS(MaxOut);

}  // namespace
}  // namespace nn
