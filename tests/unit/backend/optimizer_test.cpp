// optimizer_step for every rule against a scalar double-precision reference over 3 steps, with
// L2 and L1 regularisation, written from the formulas in backend.h / cpu_optimizer.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend_test_util.h"
#include "core/error.h"
#include "core/random.h"

namespace nn {
namespace {

struct State {
  double w, s0 = 0.0, s1 = 0.0;
};

// One update of one parameter with the true gradient g; t is the 1-based step.
void reference_step(const OptimizerParams& p, State& s, double g, uint64_t t) {
  const double sign = s.w > 0 ? 1.0 : (s.w < 0 ? -1.0 : 0.0);
  const double gr = g + p.lambda * s.w + p.lambda1 * sign;
  const double a = p.alpha, mu = p.mu, mu1 = p.mu1;
  switch (p.kind) {
    case OptimizerKind::SGD:
      s.w -= a * gr;
      break;
    case OptimizerKind::Momentum:
      s.s0 = mu * s.s0 - a * gr;
      s.w += s.s0;
      break;
    case OptimizerKind::Nesterov: {
      const double v_old = s.s0;
      s.s0 = mu * s.s0 - a * gr;
      s.w += s.s0 + mu * (s.s0 - v_old);
      break;
    }
    case OptimizerKind::AdaGrad:
      s.s0 += gr * gr;
      s.w -= a * gr / std::sqrt(std::max(1e-9, s.s0));
      break;
    case OptimizerKind::RMSProp:
      s.s0 = mu * s.s0 + (1 - mu) * gr * gr;
      s.w -= a * gr / std::sqrt(std::max(1e-9, s.s0));
      break;
    case OptimizerKind::AdaDelta: {
      s.s0 = mu * s.s0 + (1 - mu) * gr * gr;
      const double d = std::sqrt(std::max(1e-9, s.s1) / std::max(1e-9, s.s0)) * gr;
      s.s1 = mu * s.s1 + (1 - mu) * d * d;
      s.w -= d;
      break;
    }
    case OptimizerKind::Adam: {
      s.s0 = mu * s.s0 + (1 - mu) * gr;
      s.s1 = mu1 * s.s1 + (1 - mu1) * gr * gr;
      const double m_hat = s.s0 / (1 - std::pow(mu, double(t)));
      const double v_hat = s.s1 / (1 - std::pow(mu1, double(t)));
      s.w -= a * m_hat / (std::sqrt(v_hat) + 1e-8);
      break;
    }
  }
}

class Optimizers : public ::testing::TestWithParam<OptimizerKind> {};

TEST_P(Optimizers, ThreeStepsMatchScalarReference) {
  const OptimizerKind kind = GetParam();
  CpuBackend be(2);
  Rng rng(uint64_t(kind) + 40);
  const size_t n = (size_t(1) << 16) + 5;  // parallel path plus a vector tail
  auto w = test::uniform(n, rng, -1, 1);
  w[0] = 0.0f;  // sign(0) = 0 for the L1 term
  std::vector<float> s0(n, 0.0f), s1(n, 0.0f);
  std::vector<State> ref(n);
  for (size_t i = 0; i < n; ++i) ref[i].w = w[i];

  OptimizerParams p;
  p.kind = kind;
  p.alpha = 0.05f;
  p.lambda = 0.01f;
  p.lambda1 = 0.002f;
  p.mu = 0.8f;
  p.mu1 = 0.95f;
  for (uint64_t t = 1; t <= 3; ++t) {
    auto g = test::uniform(n, rng, -0.5, 0.5);
    g[1] = 0.0f;  // a zero gradient exercises the 1e-9 floors
    p.step = t;
    be.optimizer_step(p, w.data(), g.data(), s0.data(), s1.data(), n);
    for (size_t i = 0; i < n; ++i) reference_step(p, ref[i], g[i], t);
  }
  std::vector<double> want_w(n), want_s0(n), want_s1(n);
  for (size_t i = 0; i < n; ++i) {
    want_w[i] = ref[i].w;
    want_s0[i] = ref[i].s0;
    want_s1[i] = ref[i].s1;
  }
  const std::string name = to_string(kind);
  EXPECT_TRUE(test::all_near(w, want_w, 1e-6, 1e-4)) << name;
  const int states = optimizer_state_count(kind);
  if (states >= 1) EXPECT_TRUE(test::all_near(s0, want_s0, 1e-7, 1e-4)) << name;
  if (states >= 2) EXPECT_TRUE(test::all_near(s1, want_s1, 1e-7, 1e-4)) << name;
}

INSTANTIATE_TEST_SUITE_P(All, Optimizers,
                         ::testing::Values(OptimizerKind::SGD, OptimizerKind::Momentum,
                                           OptimizerKind::AdaGrad, OptimizerKind::Nesterov,
                                           OptimizerKind::RMSProp, OptimizerKind::AdaDelta,
                                           OptimizerKind::Adam),
                         [](const ::testing::TestParamInfo<OptimizerKind>& info) {
                           return std::string(to_string(info.param));
                         });

TEST(Optimizers, AdamFirstStepMovesEachWeightByAboutAlpha) {
  // With the correct bias correction (t = 1), m_hat = g and v_hat = g^2, so the first step is
  // alpha * sign(g) (DSSTNE's t = 2 gave a different first step).
  CpuBackend be(1);
  OptimizerParams p;
  p.kind = OptimizerKind::Adam;
  p.alpha = 0.01f;
  p.step = 1;
  std::vector<float> w = {1.0f, 1.0f}, g = {0.3f, -2.0f}, m(2, 0.0f), v(2, 0.0f);
  be.optimizer_step(p, w.data(), g.data(), m.data(), v.data(), 2);
  EXPECT_NEAR(w[0], 1.0f - 0.01f, 1e-6);
  EXPECT_NEAR(w[1], 1.0f + 0.01f, 1e-6);
}

TEST(Optimizers, MissingStateIsAnInternalError) {
  CpuBackend be(1);
  OptimizerParams p;
  p.kind = OptimizerKind::Adam;
  std::vector<float> w(4), g(4), s(4);
  EXPECT_THROW(be.optimizer_step(p, w.data(), g.data(), s.data(), nullptr, 4), InternalError);
  p.kind = OptimizerKind::SGD;
  EXPECT_NO_THROW(be.optimizer_step(p, w.data(), g.data(), nullptr, nullptr, 4));
}

}  // namespace
}  // namespace nn
