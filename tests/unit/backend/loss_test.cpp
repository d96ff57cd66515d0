// Losses and output deltas for every ErrorFunction x Activation pair, with dense targets, sparse
// Boolean targets, weighted sparse analog targets (with duplicated indices and an empty row) and
// SparseIgnoreZero:
//  * the summed error against a double-precision evaluation of the formulas;
//  * output_delta against central finite differences of the backend's loss w.r.t. z (perturb z,
//    re-activate, recompute the loss), at points away from the kinks of L1/Hinge/L2Hinge/ReLU
//    and the margins of the marginal cross-entropies;
//  * loss_and_delta identical to loss + output_delta.
// Rules that are not gradients (SMCE on SoftMax, DeltaBoost) get golden tests of their own.
// Every test runs on every backend.
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

using test::all_near;
using test::Csr;
using test::DeviceTargets;
using test::Targets;
using test::to_device;

const auto& kFunctions = test::kAllErrorFunctions;

const Activation kActivations[] = {Activation::Sigmoid,
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

bool is_log_loss(ErrorFunction f) {
  return f == ErrorFunction::CrossEntropy || f == ErrorFunction::ScaledMarginalCrossEntropy ||
         f == ErrorFunction::DataScaledMarginalCrossEntropy;
}

LossParams make_params(ErrorFunction f, Activation a) {
  LossParams p;
  p.function = f;
  p.activation.kind = a;
  p.activation.slope = 0.2f;
  p.activation.alpha = 1.3f;
  p.activation.lambda = 1.0507f;
  p.activation.max_value = 0.6f;  // some ReluMax / LinearMax units saturate
  // Margins inside (0, 1) so that both active and inactive units occur.
  p.smce_one_target = 0.7f;
  p.smce_zero_target = 0.3f;
  p.smce_one_scale = 1.5f;
  p.smce_zero_scale = 0.75f;
  return p;
}

// Double-precision activation of one element (SoftMax handled per row by the caller).
double act_ref(const ActivationParams& p, double x) {
  switch (p.kind) {
    case Activation::Sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Activation::Tanh:
      return std::tanh(x);
    case Activation::RectifiedLinear:
      return x > 0 ? x : 0.0;
    case Activation::ReluMax:
      return std::min(std::max(x, 0.0), double(p.max_value));
    case Activation::LinearMax:
      return std::min(std::max(x, -double(p.max_value)), double(p.max_value));
    case Activation::LeakyRectifiedLinear:
    case Activation::ParametricRectifiedLinear:
      return x > 0 ? x : p.slope * x;
    case Activation::ExponentialLinear:
      return x > 0 ? x : p.alpha * std::expm1(x);
    case Activation::ScaledExponentialLinear:
      return p.lambda * (x > 0 ? x : p.alpha * std::expm1(x));
    case Activation::SoftPlus:
      return std::log1p(std::exp(x));
    case Activation::SoftSign:
      return x / (1.0 + std::fabs(x));
    default:
      return x;
  }
}

// z with f(z) = a, for a in (0, 1) (not used for SoftMax).
double act_inverse(const ActivationParams& p, double a) {
  switch (p.kind) {
    case Activation::Sigmoid:
      return std::log(a / (1.0 - a));
    case Activation::Tanh:
      return std::atanh(a);
    case Activation::SoftPlus:
      return std::log(std::expm1(a));
    case Activation::SoftSign:
      return a / (1.0 - a);
    case Activation::ScaledExponentialLinear:
      return a / p.lambda;
    default:
      return a;
  }
}

// Error of one unit in double, straight from the formulas (DSSTNE's kLoss.cu, with our
// generalisation of the marginal cross-entropies to analog targets).
double error_ref(const LossParams& p, double a, double t, double w) {
  const bool softmax = p.activation.kind == Activation::SoftMax;
  const double s1 = p.smce_one_scale, s0 = p.smce_zero_scale;
  const double one = p.smce_one_target, zero = p.smce_zero_target;
  auto ln = [](double x) { return std::log(std::max(x, 1e-12)); };
  switch (p.function) {
    case ErrorFunction::L1:
      return w * std::fabs(a - t);
    case ErrorFunction::L2:
      return 0.5 * w * (a - t) * (a - t);
    case ErrorFunction::L2Hinge: {
      double d = a - std::fabs(t);
      d = t > 0 ? std::min(d, 0.0) : std::max(d, 0.0);
      return 0.5 * w * d * d;
    }
    case ErrorFunction::Hinge:
      return w * std::max(0.0, 1.0 - t * a);
    case ErrorFunction::CrossEntropy:
      if (softmax) return -w * t * ln(a);
      return w * (-t * ln(a) - (1.0 - t) * ln(1.0 - a));
    case ErrorFunction::ScaledMarginalCrossEntropy:
      if (softmax) return t > 0 && a < one ? -w * s1 * t * ln(a) : 0.0;
      if (t > 0) return a < one ? w * (-t * s1 * ln(a) - (1.0 - t) * s0 * ln(1.0 - a)) : 0.0;
      return a > zero ? -w * s0 * ln(1.0 - a) : 0.0;
    case ErrorFunction::DataScaledMarginalCrossEntropy:
      if (t > 0) return a < one ? -w * s1 * t * ln(a) : 0.0;
      return a > zero ? -w * s0 * ln(1.0 - a) : 0.0;
  }
  return 0.0;
}

// Points where the loss has a kink or a jump, to keep finite differences away from.
bool near_kink(const LossParams& p, double z, double a, double t) {
  const double m = 0.025;
  if (std::fabs(z) < 0.05) return true;  // ReLU/leaky/ELU kinks at z = 0
  if ((p.activation.kind == Activation::ReluMax || p.activation.kind == Activation::LinearMax) &&
      std::fabs(std::fabs(z) - p.activation.max_value) < 0.05)
    return true;  // the bounds
  switch (p.function) {
    case ErrorFunction::L1:
      return std::fabs(a - t) < m;
    case ErrorFunction::Hinge:
      return std::fabs(1.0 - t * a) < m;
    case ErrorFunction::L2Hinge:
      return std::fabs(a - std::fabs(t)) < m;
    case ErrorFunction::ScaledMarginalCrossEntropy:
    case ErrorFunction::DataScaledMarginalCrossEntropy:
      return std::fabs(a - p.smce_one_target) < m || std::fabs(a - p.smce_zero_target) < m;
    default:
      return false;
  }
}

struct Problem {
  uint32_t rows = 4, cols = 6;
  std::vector<float> z;
  std::vector<float> dense_t;  // dense targets (Targets::Dense)
  std::vector<float> weights;  // dense targets' row weights
  Csr sparse;
  TargetView view;
  std::vector<double> t;     // effective target per unit (densified, normalised where multinomial)
  std::vector<bool> counts;  // unit contributes to the error
  std::vector<double> w;     // example weight per row
};

Problem make_problem(const LossParams& p, Targets mode, uint64_t seed) {
  Rng rng(seed);
  Problem pr;
  const uint32_t rows = pr.rows, cols = pr.cols;
  const size_t n = size_t(rows) * cols;
  const bool softmax = p.activation.kind == Activation::SoftMax;
  const ErrorFunction f = p.function;

  // Targets.
  pr.view.sparse = mode != Targets::Dense;
  pr.t.assign(n, 0.0);
  pr.counts.assign(n, true);
  pr.w.assign(rows, 1.0);
  if (mode == Targets::Dense) {
    pr.dense_t.resize(n);
    for (auto& v : pr.dense_t) {
      const double u = rng.uniform();
      if (f == ErrorFunction::Hinge)
        v = u < 0.5 ? -1.0f : 1.0f;
      else if (f == ErrorFunction::DataScaledMarginalCrossEntropy || f == ErrorFunction::L1 ||
               f == ErrorFunction::L2 || (f == ErrorFunction::CrossEntropy && !softmax))
        v = u < 0.4 ? 0.0f : (u < 0.7 ? 1.0f : float(0.3 + 0.6 * rng.uniform()));
      else
        v = u < 0.6 ? 0.0f : 1.0f;
    }
    pr.weights = test::uniform(rows, rng, 0.5, 2.0);
    pr.view.dense = pr.dense_t.data();
    pr.view.row_weight = pr.weights.data();
    for (size_t i = 0; i < n; ++i) pr.t[i] = pr.dense_t[i];
    for (uint32_t r = 0; r < rows; ++r) pr.w[r] = pr.weights[r];
  } else {
    const bool analog = mode == Targets::SparseAnalogWeighted;
    pr.sparse = test::random_csr(rows, cols, 3, rng, analog, analog, /*duplicates=*/true,
                                 /*empty_row=*/2);
    pr.view.sp = pr.sparse.view();
    pr.view.ignore_zero = mode == Targets::SparseIgnoreZero;
    pr.t = pr.sparse.dense_targets();
    for (uint32_t r = 0; r < rows; ++r) pr.w[r] = pr.sparse.weight(r);
    if (pr.view.ignore_zero) pr.counts = pr.sparse.stored();
    if (softmax &&
        (f == ErrorFunction::CrossEntropy || f == ErrorFunction::ScaledMarginalCrossEntropy)) {
      for (uint32_t r = 0; r < rows; ++r) {  // multinomial targets
        double s = 0.0;
        for (uint32_t c = 0; c < cols; ++c) s += pr.t[size_t(r) * cols + c];
        if (s > 0)
          for (uint32_t c = 0; c < cols; ++c) pr.t[size_t(r) * cols + c] /= s;
      }
    }
  }

  // Pre-activations: activations inside (0.1, 0.9) for the log-losses; otherwise also the
  // negative branch. Resampled until no unit sits near a kink.
  pr.z.resize(n);
  for (uint32_t r = 0; r < rows; ++r) {
    for (int attempt = 0;; ++attempt) {
      EXPECT_LT(attempt, 1000) << "could not place z away from kinks";
      if (attempt >= 1000) break;
      for (uint32_t c = 0; c < cols; ++c) {
        double z;
        if (softmax)
          z = -2.0 + 4.0 * rng.uniform();
        else if (!is_log_loss(f) && rng.uniform() < 0.35)
          z = -1.5 + 1.4 * rng.uniform();
        else
          z = act_inverse(p.activation, 0.1 + 0.8 * rng.uniform());
        pr.z[size_t(r) * cols + c] = static_cast<float>(z);
      }
      double mx = -INFINITY, sum = 0.0;
      for (uint32_t c = 0; c < cols; ++c) mx = std::max(mx, double(pr.z[size_t(r) * cols + c]));
      for (uint32_t c = 0; c < cols; ++c) sum += std::exp(pr.z[size_t(r) * cols + c] - mx);
      bool ok = true;
      for (uint32_t c = 0; c < cols && ok; ++c) {
        const size_t i = size_t(r) * cols + c;
        const double a = softmax ? std::exp(pr.z[i] - mx) / sum : act_ref(p.activation, pr.z[i]);
        ok = !(softmax ? near_kink(p, 1.0, a, pr.t[i]) : near_kink(p, pr.z[i], a, pr.t[i]));
      }
      if (ok) break;
    }
  }
  return pr;
}

double reference_loss(const LossParams& p, const Problem& pr, const std::vector<float>& a) {
  double sum = 0.0;
  for (uint32_t r = 0; r < pr.rows; ++r)
    for (uint32_t c = 0; c < pr.cols; ++c) {
      const size_t i = size_t(r) * pr.cols + c;
      if (pr.counts[i]) sum += error_ref(p, a[i], pr.t[i], pr.w[r]);
    }
  return sum;
}

std::string describe(ErrorFunction f, Activation a, Targets m) {
  static const char* modes[] = {"dense", "sparse", "sparse analog weighted", "sparse ignore-zero"};
  return std::string(to_string(f)) + " + " + to_string(a) + ", " + modes[int(m)] + " targets";
}

// Activations f(z) of a rows x cols batch in be's memory.
DeviceArray<float> activated(Backend& be, const ActivationParams& p, const std::vector<float>& z,
                             uint32_t rows, uint32_t cols) {
  auto a = to_device(be, z);
  be.activate(p, a.data(), rows, cols);
  return a;
}

using Combo = std::tuple<std::string, ErrorFunction, Activation, Targets>;

class LossCombos : public test::BackendTestBase<Combo> {};

std::string combo_name(const ::testing::TestParamInfo<Combo>& info) {
  static const char* modes[] = {"Dense", "Sparse", "SparseAnalogWeighted", "IgnoreZero"};
  return std::get<0>(info.param) + "_" + to_string(std::get<1>(info.param)) + "_" +
         to_string(std::get<2>(info.param)) + "_" + modes[int(std::get<3>(info.param))];
}

TEST_P(LossCombos, ErrorMatchesFormulas) {
  const auto [on_backend, f, act, mode] = GetParam();
  const LossParams p = make_params(f, act);
  Problem pr = make_problem(p, mode, 100 + uint64_t(f) * 31 + uint64_t(act) * 7 + int(mode));
  auto be = backend(1);
  const DeviceTargets t(*be, pr.view, pr.rows, pr.cols);
  const auto da = activated(*be, p.activation, pr.z, pr.rows, pr.cols);
  const double want = reference_loss(p, pr, da.to_host());
  const double got = be->loss(p, da.data(), t.view(), pr.rows, pr.cols);
  EXPECT_NEAR(got, want, 1e-5 * std::fabs(want) + 1e-6) << describe(f, act, mode);
}

TEST_P(LossCombos, DeltaMatchesFiniteDifferencesOfTheLoss) {
  const auto [on_backend, f, act, mode] = GetParam();
  if (f == ErrorFunction::ScaledMarginalCrossEntropy && act == Activation::SoftMax)
    GTEST_SKIP() << "SMCE on SoftMax follows DSSTNE's delta rule, not a gradient (golden test)";
  const LossParams p = make_params(f, act);
  Problem pr = make_problem(p, mode, 200 + uint64_t(f) * 31 + uint64_t(act) * 7 + int(mode));
  auto be = backend(1);
  const DeviceTargets t(*be, pr.view, pr.rows, pr.cols);
  auto loss_at = [&](const std::vector<float>& z) {
    const auto a = activated(*be, p.activation, z, pr.rows, pr.cols);
    return be->loss(p, a.data(), t.view(), pr.rows, pr.cols);
  };
  const auto a = activated(*be, p.activation, pr.z, pr.rows, pr.cols);
  auto d_delta = to_device(*be, std::vector<float>(a.size(), NAN));
  be->output_delta(p, a.data(), t.view(), pr.rows, pr.cols, d_delta.data());
  const auto delta = d_delta.to_host();

  const float h = 1e-2f;
  std::vector<double> fd(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<float> zp = pr.z, zm = pr.z;
    zp[i] += h;
    zm[i] -= h;
    fd[i] = (loss_at(zp) - loss_at(zm)) / (double(zp[i]) - double(zm[i]));
  }
  EXPECT_TRUE(all_near(delta, fd, 2e-3, 1e-2)) << describe(f, act, mode);
}

TEST_P(LossCombos, LossAndDeltaIsLossPlusOutputDelta) {
  const auto [on_backend, f, act, mode] = GetParam();
  const LossParams p = make_params(f, act);
  Problem pr = make_problem(p, mode, 300 + uint64_t(f) * 31 + uint64_t(act) * 7 + int(mode));
  auto be = backend(2);
  const DeviceTargets t(*be, pr.view, pr.rows, pr.cols);
  const auto a = activated(*be, p.activation, pr.z, pr.rows, pr.cols);
  auto d1 = to_device(*be, std::vector<float>(a.size(), NAN)), d2 = to_device(*be, d1.to_host());
  const double both = be->loss_and_delta(p, a.data(), t.view(), pr.rows, pr.cols, d1.data());
  be->output_delta(p, a.data(), t.view(), pr.rows, pr.cols, d2.data());
  // The error-only kernel is a separate instantiation; the compiler may contract its
  // multiply-adds differently, so the sums agree to float rounding, not bit for bit.
  const double alone = be->loss(p, a.data(), t.view(), pr.rows, pr.cols);
  EXPECT_NEAR(both, alone, 1e-6 * std::fabs(alone)) << describe(f, act, mode);
  EXPECT_TRUE(test::bitwise_equal(d1.to_host(), d2.to_host())) << describe(f, act, mode);
}

INSTANTIATE_TEST_SUITE_P(
    All, LossCombos,
    ::testing::Combine(::testing::ValuesIn(test::backend_names()), ::testing::ValuesIn(kFunctions),
                       ::testing::ValuesIn(kActivations),
                       ::testing::Values(Targets::Dense, Targets::SparseBoolean,
                                         Targets::SparseAnalogWeighted, Targets::SparseIgnoreZero)),
    combo_name);

// ---- golden tests of rules that are not gradients ----------------------------------------------

class LossRules : public test::BackendTest {};

// loss_and_delta on `be` for host activations and host targets: the summed error, and the
// delta in d.
double loss_and_delta(Backend& be, const LossParams& p, const std::vector<float>& a,
                      const TargetView& host_t, uint32_t rows, uint32_t cols,
                      std::vector<float>& d) {
  const DeviceTargets t(be, host_t, rows, cols);
  auto da = to_device(be, a);
  DeviceArray<float> dd(be, size_t(rows) * cols);
  const double e = be.loss_and_delta(p, da.data(), t.view(), rows, cols, dd.data());
  d = dd.to_host();
  return e;
}

TEST_P(LossRules, SmceOnSoftMaxFollowsTheReferenceRule) {
  const LossParams p = make_params(ErrorFunction::ScaledMarginalCrossEntropy, Activation::SoftMax);
  auto be = backend(1);
  // One row, a = (0.05, 0.5, 0.35, 0.1); positive units 1 (a < oneTarget) and 3 (a < oneTarget).
  std::vector<float> a = {0.05f, 0.5f, 0.35f, 0.1f};
  std::vector<float> t = {0.0f, 1.0f, 0.0f, 1.0f}, w = {2.0f};
  TargetView dense;
  dense.dense = t.data();
  dense.row_weight = w.data();
  std::vector<float> d(4);
  const double e = loss_and_delta(*be, p, a, dense, 1, 4, d);
  // Zero units: zeroScale*a above zeroTarget (unit 2), else 0; positive: oneScale*(a - t).
  const double s1 = p.smce_one_scale, s0 = p.smce_zero_scale;
  EXPECT_TRUE(
      all_near(d, {0.0, 2 * s1 * (0.5 - 1), 2 * s0 * 0.35, 2 * s1 * (0.1 - 1)}, 1e-6, 1e-6));
  EXPECT_NEAR(e, -2 * s1 * (std::log(0.5) + std::log(0.1)), 1e-5);

  // Sparse: the same with multinomial targets 1/2 each (Boolean entries 1 and 3).
  Csr sp;
  sp.cols = 4;
  sp.add_row({3, 1});
  TargetView sparse;
  sparse.sparse = true;
  sparse.sp = sp.view();
  const double es = loss_and_delta(*be, p, a, sparse, 1, 4, d);
  EXPECT_TRUE(all_near(d, {0.0, s1 * (0.5 - 0.5), s0 * 0.35, s1 * (0.1 - 0.5)}, 1e-6, 1e-6));
  EXPECT_NEAR(es, -s1 * 0.5 * (std::log(0.5) + std::log(0.1)), 1e-5);
  // SparseIgnoreZero: unstored units get no delta.
  sparse.ignore_zero = true;
  {
    const DeviceTargets dt(*be, sparse, 1, 4);
    auto da = to_device(*be, a), dd = to_device(*be, d);
    be->output_delta(p, da.data(), dt.view(), 1, 4, dd.data());
    d = dd.to_host();
  }
  EXPECT_EQ(d[2], 0.0f);
  EXPECT_EQ(d[0], 0.0f);
}

TEST_P(LossRules, DeltaBoostScalesSigmoidSparseDeltasOnly) {
  auto be = backend(1);
  Rng rng(5);
  Csr sp = test::random_csr(3, 8, 3, rng, false, false, false);
  TargetView tv;
  tv.sparse = true;
  tv.sp = sp.view();
  const auto stored = sp.stored();
  auto a = test::uniform(24, rng, 0.1, 0.9);
  for (ErrorFunction f : {ErrorFunction::L2, ErrorFunction::CrossEntropy}) {
    for (Activation act : {Activation::Sigmoid, Activation::Tanh}) {
      LossParams p = make_params(f, act);
      std::vector<float> plain(24), boosted(24);
      const double e0 = loss_and_delta(*be, p, a, tv, 3, 8, plain);
      p.delta_boost_one = 3.0f;
      p.delta_boost_zero = 0.5f;
      const double e1 = loss_and_delta(*be, p, a, tv, 3, 8, boosted);
      EXPECT_EQ(e0, e1) << "errors are not boosted";
      for (size_t i = 0; i < 24; ++i) {
        const float k = act != Activation::Sigmoid ? 1.0f : (stored[i] ? 3.0f : 0.5f);
        EXPECT_FLOAT_EQ(boosted[i], k * plain[i])
            << to_string(f) << " " << to_string(act) << " " << i;
      }
    }
  }
}

TEST_P(LossRules, HingeIsZeroBeyondTheMargin) {
  auto be = backend(1);
  const LossParams p = make_params(ErrorFunction::Hinge, Activation::Linear);
  std::vector<float> a = {1.5f, 0.5f, -2.0f}, t = {1.0f, -1.0f, -1.0f}, d(3);
  TargetView tv;
  tv.dense = t.data();
  const double e = loss_and_delta(*be, p, a, tv, 1, 3, d);
  EXPECT_NEAR(e, 1.5, 1e-6);  // only the middle unit is inside the margin
  EXPECT_EQ(d, (std::vector<float>{0.0f, 1.0f, 0.0f}));
}

TEST_P(LossRules, CrossEntropyOnSigmoidIsAMinusT) {
  auto be = backend(2);
  const LossParams p = make_params(ErrorFunction::CrossEntropy, Activation::Sigmoid);
  // Sparse Boolean targets with a duplicate: t = 1 once.
  Csr sp;
  sp.cols = 5;
  sp.add_row({4, 1, 4});
  TargetView tv;
  tv.sparse = true;
  tv.sp = sp.view();
  std::vector<float> a = {0.1f, 0.2f, 0.3f, 0.4f, 0.999999f}, d(5);
  const double e = loss_and_delta(*be, p, a, tv, 1, 5, d);
  EXPECT_TRUE(all_near(d, {0.1, 0.2 - 1, 0.3, 0.4, 0.999999 - 1}, 1e-7, 1e-6));
  const double want =
      -std::log(0.9) - std::log(0.2) - std::log(0.7) - std::log(0.6) - std::log(double(0.999999f));
  EXPECT_NEAR(e, want, 1e-5);
}

TEST_P(LossRules, RawSoftMaxTargetsAreTheMultinomialLogLikelihood) {
  // SoftMaxTargets Raw (Mult-DAE/Mult-VAE): sparse targets as stored, e = -sum_i x_i ln a_i and
  // delta = a * sum(x) - x; the default divides each row's targets by their sum.
  auto be = backend(2);
  LossParams p = make_params(ErrorFunction::CrossEntropy, Activation::SoftMax);
  Csr sp;
  sp.cols = 4;
  sp.add_row({1, 3});
  sp.add_row({0, 2, 3});
  TargetView tv;
  tv.sparse = true;
  tv.sp = sp.view();
  const std::vector<float> a = {0.1f, 0.4f, 0.2f, 0.3f, 0.25f, 0.25f, 0.4f, 0.1f};
  std::vector<float> d(8);
  p.raw_softmax_targets = true;
  const double raw = loss_and_delta(*be, p, a, tv, 2, 4, d);
  EXPECT_NEAR(raw, -std::log(0.4) - std::log(0.3) - std::log(0.25) - std::log(0.4) - std::log(0.1),
              1e-5);
  EXPECT_TRUE(
      all_near(d, {0.2, 0.8 - 1, 0.4, 0.6 - 1, 0.75 - 1, 0.75, 1.2 - 1, 0.3 - 1}, 1e-6, 1e-6));
  {
    const DeviceTargets t(*be, tv, 2, 4);
    auto da = to_device(*be, a);
    EXPECT_NEAR(be->loss(p, da.data(), t.view(), 2, 4), raw, 1e-6 * raw);
  }
  p.raw_softmax_targets = false;
  const double normalised = loss_and_delta(*be, p, a, tv, 2, 4, d);
  EXPECT_NEAR(
      normalised,
      -(std::log(0.4) + std::log(0.3)) / 2 - (std::log(0.25) + std::log(0.4) + std::log(0.1)) / 3,
      1e-5);
  EXPECT_TRUE(all_near(
      d, {0.1, 0.4 - 0.5, 0.2, 0.3 - 0.5, 0.25 - 1.0 / 3, 0.25, 0.4 - 1.0 / 3, 0.1 - 1.0 / 3}, 1e-6,
      1e-6));
}

TEST_P(LossRules, SaturatedOutputsGiveFiniteErrorsAndDeltas) {
  auto be = backend(1);
  std::vector<float> a = {0.0f, 1.0f, 0.0f, 1.0f}, t = {1.0f, 0.0f, 0.0f, 1.0f}, d(4);
  TargetView tv;
  tv.dense = t.data();
  for (ErrorFunction f : kFunctions)
    for (Activation act : kActivations) {
      const LossParams p = make_params(f, act);
      const double e = loss_and_delta(*be, p, a, tv, 1, 4, d);
      EXPECT_TRUE(std::isfinite(e)) << to_string(f) << " " << to_string(act);
      for (float v : d) EXPECT_TRUE(std::isfinite(v)) << to_string(f) << " " << to_string(act);
    }
}

TEST_P(LossRules, OutOfRangeSparseTargetIsADataError) {
  auto be = backend(1);
  Csr sp;
  sp.cols = 4;
  sp.add_row({0});
  sp.add_row({7});
  TargetView tv;
  tv.sparse = true;
  tv.sp = sp.view();
  std::vector<float> a(8, 0.5f), d(8);
  try {
    // The returned error waits for the backend, so an asynchronous backend reports it here too.
    loss_and_delta(*be, make_params(ErrorFunction::L2, Activation::Sigmoid), a, tv, 2, 4, d);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("row 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("index 7"), std::string::npos) << msg;
  }
}

NN_INSTANTIATE_ON_BACKENDS(LossRules);

}  // namespace
}  // namespace nn
