// CPU batch normalisation kernels against a double-precision reference, in per-activation mode
// (spatial = 1) and spatial mode, on the serial and the parallel paths: training forward
// (batch statistics, saved statistics, running averages), inference forward, backward (against
// the analytic formula and against central differences of the training forward), and the
// inference backward.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

using test::all_near;
using test::bitwise_equal;
using test::uniform;

struct Shape {
  uint32_t rows, channels, spatial;
};

size_t at(const Shape& s, uint32_t r, uint32_t c, uint32_t i) {
  return (size_t(r) * s.channels + c) * s.spatial + i;
}

struct Stats {
  std::vector<double> mean, var;  // biased variance
};

Stats batch_stats(const Shape& s, const std::vector<float>& x) {
  Stats st{std::vector<double>(s.channels, 0.0), std::vector<double>(s.channels, 0.0)};
  const double n = double(s.rows) * s.spatial;
  for (uint32_t c = 0; c < s.channels; ++c) {
    for (uint32_t r = 0; r < s.rows; ++r)
      for (uint32_t i = 0; i < s.spatial; ++i) st.mean[c] += x[at(s, r, c, i)];
    st.mean[c] /= n;
    for (uint32_t r = 0; r < s.rows; ++r)
      for (uint32_t i = 0; i < s.spatial; ++i) {
        const double d = x[at(s, r, c, i)] - st.mean[c];
        st.var[c] += d * d;
      }
    st.var[c] /= n;
  }
  return st;
}

BatchNormParams params(const Shape& s) {
  BatchNormParams p;
  p.rows = s.rows;
  p.channels = s.channels;
  p.spatial = s.spatial;
  p.epsilon = 1e-5f;
  p.momentum = 0.1f;
  return p;
}

struct Data {
  std::vector<float> x, scale, bias, rmean, rvar;
};

Data make_data(const Shape& s, Rng& rng) {
  Data d;
  d.x = uniform(size_t(s.rows) * s.channels * s.spatial, rng, -2, 3);
  // Channel-dependent offsets, one large (checks the two-pass variance).
  for (uint32_t c = 0; c < s.channels; ++c)
    for (uint32_t r = 0; r < s.rows; ++r)
      for (uint32_t i = 0; i < s.spatial; ++i)
        d.x[at(s, r, c, i)] += c == 1 ? 1000.0f : 0.5f * float(c % 7);
  d.scale = uniform(s.channels, rng, 0.5, 1.5);
  d.bias = uniform(s.channels, rng, -0.5, 0.5);
  d.rmean = uniform(s.channels, rng, -1, 1);
  d.rvar = uniform(s.channels, rng, 0.5, 2);
  return d;
}

class BatchNormKernels : public ::testing::TestWithParam<Shape> {};

TEST_P(BatchNormKernels, TrainingForwardMatchesReference) {
  const Shape s = GetParam();
  Rng rng(11);
  Data d = make_data(s, rng);
  Stats st = batch_stats(s, d.x);
  const double n = double(s.rows) * s.spatial;
  std::vector<double> want_y(d.x.size()), want_rm(s.channels), want_rv(s.channels),
      want_is(s.channels);
  for (uint32_t c = 0; c < s.channels; ++c) {
    want_is[c] = 1.0 / std::sqrt(st.var[c] + 1e-5);
    want_rm[c] = 0.9 * d.rmean[c] + 0.1 * st.mean[c];
    want_rv[c] = 0.9 * d.rvar[c] + 0.1 * st.var[c] * n / (n - 1);
    for (uint32_t r = 0; r < s.rows; ++r)
      for (uint32_t i = 0; i < s.spatial; ++i) {
        const size_t k = at(s, r, c, i);
        want_y[k] = d.scale[c] * (d.x[k] - st.mean[c]) * want_is[c] + d.bias[c];
      }
  }
  CpuBackend be(2);
  std::vector<float> y(d.x.size()), sm(s.channels), sis(s.channels);
  auto rm = d.rmean, rv = d.rvar;
  be.batch_norm_forward_training(params(s), d.x.data(), y.data(), d.scale.data(), d.bias.data(),
                                 rm.data(), rv.data(), sm.data(), sis.data());
  // x values near 1000 carry float rounding of ~6e-5 into the normalised values.
  EXPECT_TRUE(all_near(y, want_y, 2e-3, 1e-4));
  EXPECT_TRUE(all_near(sm, st.mean, 1e-6, 1e-6));
  EXPECT_TRUE(all_near(sis, want_is, 1e-6, 1e-4));
  EXPECT_TRUE(all_near(rm, want_rm, 1e-6, 1e-6));
  EXPECT_TRUE(all_near(rv, want_rv, 1e-6, 1e-5));

  // In place (y aliases x) gives the same values; one thread gives the same bits.
  auto inplace = d.x;
  auto rm2 = d.rmean, rv2 = d.rvar;
  CpuBackend one(1);
  one.batch_norm_forward_training(params(s), inplace.data(), inplace.data(), d.scale.data(),
                                  d.bias.data(), rm2.data(), rv2.data(), sm.data(), sis.data());
  EXPECT_TRUE(bitwise_equal(inplace, y));
  EXPECT_TRUE(bitwise_equal(rm2, rm));
  EXPECT_TRUE(bitwise_equal(rv2, rv));
}

TEST_P(BatchNormKernels, InferenceUsesRunningStatistics) {
  const Shape s = GetParam();
  Rng rng(12);
  Data d = make_data(s, rng);
  std::vector<double> want(d.x.size());
  for (uint32_t c = 0; c < s.channels; ++c)
    for (uint32_t r = 0; r < s.rows; ++r)
      for (uint32_t i = 0; i < s.spatial; ++i) {
        const size_t k = at(s, r, c, i);
        want[k] = d.scale[c] * (d.x[k] - d.rmean[c]) / std::sqrt(d.rvar[c] + 1e-5) + d.bias[c];
      }
  CpuBackend be(2);
  auto y = d.x;
  be.batch_norm_forward_inference(params(s), y.data(), y.data(), d.scale.data(), d.bias.data(),
                                  d.rmean.data(), d.rvar.data());
  EXPECT_TRUE(all_near(y, want, 1e-3, 1e-5));
}

TEST_P(BatchNormKernels, BackwardMatchesTheAnalyticGradient) {
  const Shape s = GetParam();
  Rng rng(13);
  Data d = make_data(s, rng);
  CpuBackend be(2);
  std::vector<float> y(d.x.size()), sm(s.channels), sis(s.channels);
  be.batch_norm_forward_training(params(s), d.x.data(), y.data(), d.scale.data(), d.bias.data(),
                                 d.rmean.data(), d.rvar.data(), sm.data(), sis.data());
  auto dy = uniform(d.x.size(), rng, -1, 1);
  Stats st = batch_stats(s, d.x);
  const double n = double(s.rows) * s.spatial, alpha = 0.125;
  std::vector<double> want_dx(d.x.size()), want_ds(s.channels, 0.0), want_db(s.channels, 0.0);
  for (uint32_t c = 0; c < s.channels; ++c) {
    const double is = 1.0 / std::sqrt(st.var[c] + 1e-5);
    double sdy = 0.0, sdyx = 0.0;
    for (uint32_t r = 0; r < s.rows; ++r)
      for (uint32_t i = 0; i < s.spatial; ++i) {
        const size_t k = at(s, r, c, i);
        sdy += dy[k];
        sdyx += dy[k] * (d.x[k] - st.mean[c]) * is;
      }
    want_ds[c] = alpha * sdyx;
    want_db[c] = alpha * sdy;
    for (uint32_t r = 0; r < s.rows; ++r)
      for (uint32_t i = 0; i < s.spatial; ++i) {
        const size_t k = at(s, r, c, i);
        const double xh = (d.x[k] - st.mean[c]) * is;
        want_dx[k] = d.scale[c] * is * (dy[k] - sdy / n - xh * sdyx / n);
      }
  }
  std::vector<float> dx(d.x.size()), ds(s.channels), db(s.channels);
  be.batch_norm_backward(params(s), d.x.data(), dy.data(), d.scale.data(), sm.data(), sis.data(),
                         float(alpha), dx.data(), ds.data(), db.data());
  EXPECT_TRUE(all_near(dx, want_dx, 1e-4, 1e-3));
  EXPECT_TRUE(all_near(ds, want_ds, 1e-4, 1e-4));
  EXPECT_TRUE(all_near(db, want_db, 1e-5, 1e-5));

  // dx may alias dy; one thread gives the same bits.
  auto inplace = dy;
  CpuBackend one(1);
  one.batch_norm_backward(params(s), d.x.data(), inplace.data(), d.scale.data(), sm.data(),
                          sis.data(), float(alpha), inplace.data(), ds.data(), db.data());
  EXPECT_TRUE(bitwise_equal(inplace, dx));
}

TEST_P(BatchNormKernels, InferenceBackwardTreatsTheStatisticsAsConstants) {
  const Shape s = GetParam();
  Rng rng(15);
  Data d = make_data(s, rng);
  auto dy = uniform(d.x.size(), rng, -1, 1);
  const double alpha = 0.5;
  std::vector<double> want_dx(d.x.size()), want_ds(s.channels, 0.0), want_db(s.channels, 0.0);
  for (uint32_t c = 0; c < s.channels; ++c) {
    const double is = 1.0 / std::sqrt(double(d.rvar[c]) + 1e-5);
    for (uint32_t r = 0; r < s.rows; ++r)
      for (uint32_t i = 0; i < s.spatial; ++i) {
        const size_t k = at(s, r, c, i);
        want_dx[k] = dy[k] * d.scale[c] * is;
        want_ds[c] += alpha * dy[k] * (d.x[k] - d.rmean[c]) * is;
        want_db[c] += alpha * dy[k];
      }
  }
  CpuBackend be(2);
  std::vector<float> dx(d.x.size()), ds(s.channels), db(s.channels);
  be.batch_norm_backward_inference(params(s), d.x.data(), dy.data(), d.scale.data(), d.rmean.data(),
                                   d.rvar.data(), float(alpha), dx.data(), ds.data(), db.data());
  EXPECT_TRUE(all_near(dx, want_dx, 1e-5, 1e-5));
  EXPECT_TRUE(all_near(ds, want_ds, 1e-3, 1e-4));  // x near 1000 in one channel
  EXPECT_TRUE(all_near(db, want_db, 1e-5, 1e-5));
  auto inplace = dy;  // dx may alias dy
  be.batch_norm_backward_inference(params(s), d.x.data(), inplace.data(), d.scale.data(),
                                   d.rmean.data(), d.rvar.data(), float(alpha), inplace.data(),
                                   ds.data(), db.data());
  EXPECT_TRUE(bitwise_equal(inplace, dx));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BatchNormKernels,
    ::testing::Values(Shape{6, 5, 1},       // per-activation, serial
                      Shape{130, 300, 1},   // per-activation, parallel, two channel blocks
                      Shape{4, 3, 50},      // spatial, serial
                      Shape{8, 20, 1024}),  // spatial, parallel
    [](const auto& info) {
      return "r" + std::to_string(info.param.rows) + "c" + std::to_string(info.param.channels) +
             "s" + std::to_string(info.param.spatial);
    });

TEST(BatchNormKernelsGradient, BackwardIsTheDerivativeOfTheTrainingForward) {
  // L = sum(w * y) through the training forward (batch statistics depend on x); central
  // differences in double-rounded float must match backward's dx, dscale and dbias.
  const Shape s{5, 3, 4};
  Rng rng(14);
  Data d = make_data(s, rng);
  for (auto& v : d.x) v = std::fmod(v, 10.0f);  // keep the values small for finite differences
  auto w = uniform(d.x.size(), rng, -1, 1);
  CpuBackend be(1);
  auto loss = [&](const std::vector<float>& x, const std::vector<float>& scale,
                  const std::vector<float>& bias) {
    std::vector<float> y(x.size()), sm(s.channels), sis(s.channels);
    auto rm = d.rmean, rv = d.rvar;
    be.batch_norm_forward_training(params(s), x.data(), y.data(), scale.data(), bias.data(),
                                   rm.data(), rv.data(), sm.data(), sis.data());
    double l = 0.0;
    for (size_t i = 0; i < y.size(); ++i) l += double(w[i]) * y[i];
    return l;
  };
  std::vector<float> y(d.x.size()), sm(s.channels), sis(s.channels);
  auto rm = d.rmean, rv = d.rvar;
  be.batch_norm_forward_training(params(s), d.x.data(), y.data(), d.scale.data(), d.bias.data(),
                                 rm.data(), rv.data(), sm.data(), sis.data());
  std::vector<float> dx(d.x.size()), ds(s.channels), db(s.channels);
  be.batch_norm_backward(params(s), d.x.data(), w.data(), d.scale.data(), sm.data(), sis.data(),
                         1.0f, dx.data(), ds.data(), db.data());
  const float eps = 1e-2f;
  auto central = [&](std::vector<float>& v, size_t i, auto&& f) {
    const float orig = v[i];
    v[i] = orig + eps;
    const double up = f();
    v[i] = orig - eps;
    const double down = f();
    v[i] = orig;
    return (up - down) / (2.0 * eps);
  };
  auto f = [&] { return loss(d.x, d.scale, d.bias); };
  for (size_t i = 0; i < d.x.size(); ++i)
    EXPECT_NEAR(dx[i], central(d.x, i, f), 2e-3) << "dx[" << i << "]";
  for (uint32_t c = 0; c < s.channels; ++c) {
    EXPECT_NEAR(ds[c], central(d.scale, c, f), 2e-3) << "dscale[" << c << "]";
    EXPECT_NEAR(db[c], central(d.bias, c, f), 2e-3) << "dbias[" << c << "]";
  }
}

TEST(BatchNormKernelsGradient, ConstantChannelNormalisesToTheBias) {
  // Zero variance: x_hat = 0 (eps keeps it finite) and y = bias; dx still sums to 0 over the
  // channel, as it does for every channel (moving all x together changes nothing).
  const Shape s{4, 2, 1};
  std::vector<float> x = {3, 1, 3, 2, 3, 3, 3, 4}, y(8), scale = {2, 2}, bias = {0.5f, -1};
  std::vector<float> rm = {0, 0}, rv = {1, 1}, sm(2), sis(2);
  CpuBackend be(1);
  be.batch_norm_forward_training(params(s), x.data(), y.data(), scale.data(), bias.data(),
                                 rm.data(), rv.data(), sm.data(), sis.data());
  for (int r = 0; r < 4; ++r) EXPECT_FLOAT_EQ(y[r * 2], 0.5f);
  std::vector<float> dy = {1, 2, -3, 4, 5, -6, 7, 8}, dx(8), ds(2), db(2);
  be.batch_norm_backward(params(s), x.data(), dy.data(), scale.data(), sm.data(), sis.data(), 1.0f,
                         dx.data(), ds.data(), db.data());
  for (int c = 0; c < 2; ++c) {
    double sum = 0.0, mag = 0.0;
    for (int r = 0; r < 4; ++r) {
      sum += dx[r * 2 + c];
      mag += std::fabs(dx[r * 2 + c]);
    }
    EXPECT_GT(mag, 1.0);
    EXPECT_NEAR(sum, 0.0, 1e-6 * mag);
  }
  EXPECT_FLOAT_EQ(db[0], 1 - 3 + 5 + 7);
  EXPECT_NEAR(rv[0], 0.9f, 1e-7f);  // unbiased variance 0 pulled in with momentum 0.1
}

}  // namespace
}  // namespace nn
