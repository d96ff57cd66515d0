// optimizer_step for every rule against a scalar double-precision reference over 3 steps, with
// L2 and L1 regularisation, written from the formulas in backend.h / cpu/optimizer.cpp, on
// every backend.
#include <gtest/gtest.h>

#include <cmath>
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

using test::to_device;

class Optimizers : public test::BackendTestWith<OptimizerKind> {};

TEST_P(Optimizers, ThreeStepsMatchScalarReference) {
  const OptimizerKind kind = std::get<1>(GetParam());
  auto be = backend(2);
  Rng rng(uint64_t(kind) + 40);
  const size_t n = (size_t(1) << 16) + 5;  // parallel path plus a vector tail
  auto w = test::uniform(n, rng, -1, 1);
  w[0] = 0.0f;  // sign(0) = 0 for the L1 term
  auto dw = to_device(*be, w), ds0 = to_device(*be, std::vector<float>(n, 0.0f)),
       ds1 = to_device(*be, std::vector<float>(n, 0.0f));
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
    auto dg = to_device(*be, g);
    be->optimizer_step(p, dw.data(), dg.data(), ds0.data(), ds1.data(), n);
    for (size_t i = 0; i < n; ++i) reference_step(p, ref[i], g[i], t);
  }
  std::vector<double> want_w(n), want_s0(n), want_s1(n);
  for (size_t i = 0; i < n; ++i) {
    want_w[i] = ref[i].w;
    want_s0[i] = ref[i].s0;
    want_s1[i] = ref[i].s1;
  }
  const std::string name = to_string(kind);
  w = dw.to_host();
  const auto s0 = ds0.to_host(), s1 = ds1.to_host();
  EXPECT_TRUE(test::all_near(w, want_w, 1e-6, 1e-4)) << name;
  const int states = optimizer_state_count(kind);
  if (states >= 1) EXPECT_TRUE(test::all_near(s0, want_s0, 1e-7, 1e-4)) << name;
  if (states >= 2) EXPECT_TRUE(test::all_near(s1, want_s1, 1e-7, 1e-4)) << name;
}

INSTANTIATE_TEST_SUITE_P(
    All, Optimizers,
    ::testing::Combine(::testing::ValuesIn(test::backend_names()),
                       ::testing::Values(OptimizerKind::SGD, OptimizerKind::Momentum,
                                         OptimizerKind::AdaGrad, OptimizerKind::Nesterov,
                                         OptimizerKind::RMSProp, OptimizerKind::AdaDelta,
                                         OptimizerKind::Adam)),
    [](const ::testing::TestParamInfo<std::tuple<std::string, OptimizerKind>>& info) {
      return std::get<0>(info.param) + "_" + to_string(std::get<1>(info.param));
    });

class OptimizerRules : public test::BackendTest {};

TEST_P(OptimizerRules, AdamFirstStepMovesEachWeightByAboutAlpha) {
  // With the correct bias correction (t = 1), m_hat = g and v_hat = g^2, so the first step is
  // alpha * sign(g) (DSSTNE's t = 2 gave a different first step).
  auto be = backend(1);
  OptimizerParams p;
  p.kind = OptimizerKind::Adam;
  p.alpha = 0.01f;
  p.step = 1;
  auto dw = to_device(*be, std::vector<float>{1.0f, 1.0f});
  auto dg = to_device(*be, std::vector<float>{0.3f, -2.0f});
  auto m = to_device(*be, std::vector<float>(2, 0.0f)),
       v = to_device(*be, std::vector<float>(2, 0.0f));
  be->optimizer_step(p, dw.data(), dg.data(), m.data(), v.data(), 2);
  const auto w = dw.to_host();
  EXPECT_NEAR(w[0], 1.0f - 0.01f, 1e-6);
  EXPECT_NEAR(w[1], 1.0f + 0.01f, 1e-6);
}

TEST_P(OptimizerRules, MissingStateIsAnInternalError) {
  auto be = backend(1);
  OptimizerParams p;
  p.kind = OptimizerKind::Adam;
  auto w = to_device(*be, std::vector<float>(4)), g = to_device(*be, std::vector<float>(4)),
       s = to_device(*be, std::vector<float>(4));
  EXPECT_THROW(be->optimizer_step(p, w.data(), g.data(), s.data(), nullptr, 4), InternalError);
  p.kind = OptimizerKind::SGD;
  EXPECT_NO_THROW({
    be->optimizer_step(p, w.data(), g.data(), nullptr, nullptr, 4);
    be->synchronize();
  });
}

NN_INSTANTIATE_ON_BACKENDS(OptimizerRules);

}  // namespace
}  // namespace nn
