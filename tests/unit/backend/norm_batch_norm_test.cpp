// Batch normalisation kernels of every backend against a double-precision reference, in
// per-activation mode (spatial = 1) and spatial mode, on the CPU's serial and parallel paths:
// training forward (batch statistics, saved statistics, running averages), inference forward,
// backward (against the analytic formula and against central differences of the training
// forward), and the inference backward.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "backend/device_array.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

using test::all_near;
using test::bitwise_equal;
using test::to_device;
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

// ---- the kernels on a backend, from and to host vectors ----------------------------------------

struct TrainingOut {
  std::vector<float> y, rm, rv, sm, sis;  // output, running mean / var, saved mean / inv std
};

// batch_norm_forward_training from running statistics rm, rv; in place: y aliases x.
TrainingOut forward_training(Backend& be, const Shape& s, const std::vector<float>& x,
                             const std::vector<float>& scale, const std::vector<float>& bias,
                             const std::vector<float>& rm, const std::vector<float>& rv,
                             bool in_place) {
  auto dx = to_device(be, x), dscale = to_device(be, scale), dbias = to_device(be, bias),
       drm = to_device(be, rm), drv = to_device(be, rv);
  DeviceArray<float> dy(be, in_place ? 0 : x.size()), dsm(be, s.channels), dsis(be, s.channels);
  float* y = in_place ? dx.data() : dy.data();
  be.batch_norm_forward_training(params(s), dx.data(), y, dscale.data(), dbias.data(), drm.data(),
                                 drv.data(), dsm.data(), dsis.data());
  return {in_place ? dx.to_host() : dy.to_host(), drm.to_host(), drv.to_host(), dsm.to_host(),
          dsis.to_host()};
}

struct BackwardOut {
  std::vector<float> dx, ds, db;
};

// batch_norm_backward (inference = false: from the saved statistics stat0 = mean, stat1 =
// 1/std) or batch_norm_backward_inference (stat0, stat1 = running mean, running variance);
// in place: dx aliases dy.
BackwardOut backward(Backend& be, const Shape& s, bool inference, const std::vector<float>& x,
                     const std::vector<float>& dy, const std::vector<float>& scale,
                     const std::vector<float>& stat0, const std::vector<float>& stat1, float alpha,
                     bool in_place) {
  auto d_x = to_device(be, x), d_dy = to_device(be, dy), d_scale = to_device(be, scale),
       d_s0 = to_device(be, stat0), d_s1 = to_device(be, stat1);
  DeviceArray<float> d_dx(be, in_place ? 0 : x.size()), d_ds(be, s.channels), d_db(be, s.channels);
  float* dx = in_place ? d_dy.data() : d_dx.data();
  if (inference)
    be.batch_norm_backward_inference(params(s), d_x.data(), d_dy.data(), d_scale.data(),
                                     d_s0.data(), d_s1.data(), alpha, dx, d_ds.data(), d_db.data());
  else
    be.batch_norm_backward(params(s), d_x.data(), d_dy.data(), d_scale.data(), d_s0.data(),
                           d_s1.data(), alpha, dx, d_ds.data(), d_db.data());
  return {in_place ? d_dy.to_host() : d_dx.to_host(), d_ds.to_host(), d_db.to_host()};
}

class BatchNormKernels : public test::BackendTestWith<Shape> {};

TEST_P(BatchNormKernels, TrainingForwardMatchesReference) {
  const Shape s = std::get<1>(GetParam());
  Rng rng(11);
  Data d = make_data(s, rng);
  Stats st = batch_stats(s, d.x);
  const double n = double(s.rows) * s.spatial;
  std::vector<double> want_y(d.x.size()), want_rm(s.channels), want_rv(s.channels),
      want_is(s.channels);
  for (uint32_t c = 0; c < s.channels; ++c) {
    want_is[c] = 1.0 / std::sqrt(st.var[c] + 1e-5);
    want_rm[c] = 0.9 * d.rmean[c] + 0.1 * st.mean[c];
    // The unbiased variance; with one value per channel the biased one, 0 (kernel_params.h).
    const double unbiased = n > 1 ? st.var[c] * n / (n - 1) : st.var[c];
    want_rv[c] = 0.9 * d.rvar[c] + 0.1 * unbiased;
    for (uint32_t r = 0; r < s.rows; ++r)
      for (uint32_t i = 0; i < s.spatial; ++i) {
        const size_t k = at(s, r, c, i);
        want_y[k] = d.scale[c] * (d.x[k] - st.mean[c]) * want_is[c] + d.bias[c];
      }
  }
  const TrainingOut out =
      forward_training(*backend(2), s, d.x, d.scale, d.bias, d.rmean, d.rvar, false);
  const auto &y = out.y, &rm = out.rm, &rv = out.rv, &sm = out.sm, &sis = out.sis;
  // x values near 1000 carry float rounding of ~6e-5 into the normalised values.
  EXPECT_TRUE(all_near(y, want_y, 2e-3, 1e-4));
  EXPECT_TRUE(all_near(sm, st.mean, 1e-6, 1e-6));
  EXPECT_TRUE(all_near(sis, want_is, 1e-6, 1e-4));
  EXPECT_TRUE(all_near(rm, want_rm, 1e-6, 1e-6));
  EXPECT_TRUE(all_near(rv, want_rv, 1e-6, 1e-5));

  // In place (y aliases x) gives the same values; one thread (another backend instance: run to
  // run) gives the same bits.
  const TrainingOut again =
      forward_training(*backend(1), s, d.x, d.scale, d.bias, d.rmean, d.rvar, true);
  EXPECT_TRUE(bitwise_equal(again.y, y));
  EXPECT_TRUE(bitwise_equal(again.rm, rm));
  EXPECT_TRUE(bitwise_equal(again.rv, rv));
}

TEST_P(BatchNormKernels, InferenceUsesRunningStatistics) {
  const Shape s = std::get<1>(GetParam());
  Rng rng(12);
  Data d = make_data(s, rng);
  std::vector<double> want(d.x.size());
  for (uint32_t c = 0; c < s.channels; ++c)
    for (uint32_t r = 0; r < s.rows; ++r)
      for (uint32_t i = 0; i < s.spatial; ++i) {
        const size_t k = at(s, r, c, i);
        want[k] = d.scale[c] * (d.x[k] - d.rmean[c]) / std::sqrt(d.rvar[c] + 1e-5) + d.bias[c];
      }
  auto be = backend(2);
  auto y = to_device(*be, d.x), scale = to_device(*be, d.scale), bias = to_device(*be, d.bias),
       rm = to_device(*be, d.rmean), rv = to_device(*be, d.rvar);
  be->batch_norm_forward_inference(params(s), y.data(), y.data(), scale.data(), bias.data(),
                                   rm.data(), rv.data());
  EXPECT_TRUE(all_near(y.to_host(), want, 1e-3, 1e-5));
}

TEST_P(BatchNormKernels, BackwardMatchesTheAnalyticGradient) {
  const Shape s = std::get<1>(GetParam());
  Rng rng(13);
  Data d = make_data(s, rng);
  auto be = backend(2);
  const TrainingOut fwd = forward_training(*be, s, d.x, d.scale, d.bias, d.rmean, d.rvar, false);
  const auto &sm = fwd.sm, &sis = fwd.sis;
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
  const BackwardOut out = backward(*be, s, false, d.x, dy, d.scale, sm, sis, float(alpha), false);
  EXPECT_TRUE(all_near(out.dx, want_dx, 1e-4, 1e-3));
  EXPECT_TRUE(all_near(out.ds, want_ds, 1e-4, 1e-4));
  EXPECT_TRUE(all_near(out.db, want_db, 1e-5, 1e-5));

  // dx may alias dy; one thread (another backend instance: run to run) gives the same bits.
  const BackwardOut inplace =
      backward(*backend(1), s, false, d.x, dy, d.scale, sm, sis, float(alpha), true);
  EXPECT_TRUE(bitwise_equal(inplace.dx, out.dx));
}

TEST_P(BatchNormKernels, InferenceBackwardTreatsTheStatisticsAsConstants) {
  const Shape s = std::get<1>(GetParam());
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
  auto be = backend(2);
  const BackwardOut out =
      backward(*be, s, true, d.x, dy, d.scale, d.rmean, d.rvar, float(alpha), false);
  EXPECT_TRUE(all_near(out.dx, want_dx, 1e-5, 1e-5));
  EXPECT_TRUE(all_near(out.ds, want_ds, 1e-3, 1e-4));  // x near 1000 in one channel
  EXPECT_TRUE(all_near(out.db, want_db, 1e-5, 1e-5));
  const BackwardOut inplace =  // dx may alias dy
      backward(*be, s, true, d.x, dy, d.scale, d.rmean, d.rvar, float(alpha), true);
  EXPECT_TRUE(bitwise_equal(inplace.dx, out.dx));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BatchNormKernels,
    ::testing::Combine(::testing::ValuesIn(test::backend_names()),
                       ::testing::Values(Shape{6, 5, 1},      // per-activation, serial
                                         Shape{130, 300, 1},  // per-activation, parallel, two
                                                              // channel blocks
                                         Shape{4, 3, 50},     // spatial, serial
                                         Shape{8, 20, 1024},  // spatial, parallel
                                         Shape{1, 7, 1})),    // one value per channel (CUDA:
                                                              // own kernels, not cuDNN)
    [](const auto& info) {
      const Shape& s = std::get<1>(info.param);
      return std::get<0>(info.param) + "_r" + std::to_string(s.rows) + "c" +
             std::to_string(s.channels) + "s" + std::to_string(s.spatial);
    });

class BatchNormKernelsGradient : public test::BackendTest {};

TEST_P(BatchNormKernelsGradient, BackwardIsTheDerivativeOfTheTrainingForward) {
  // L = sum(w * y) through the training forward (batch statistics depend on x); central
  // differences in double-rounded float must match backward's dx, dscale and dbias.
  const Shape s{5, 3, 4};
  Rng rng(14);
  Data d = make_data(s, rng);
  for (auto& v : d.x) v = std::fmod(v, 10.0f);  // keep the values small for finite differences
  auto w = uniform(d.x.size(), rng, -1, 1);
  auto be = backend(1);
  auto loss = [&](const std::vector<float>& x, const std::vector<float>& scale,
                  const std::vector<float>& bias) {
    const std::vector<float> y = forward_training(*be, s, x, scale, bias, d.rmean, d.rvar, false).y;
    double l = 0.0;
    for (size_t i = 0; i < y.size(); ++i) l += double(w[i]) * y[i];
    return l;
  };
  const TrainingOut fwd = forward_training(*be, s, d.x, d.scale, d.bias, d.rmean, d.rvar, false);
  const BackwardOut grad = backward(*be, s, false, d.x, w, d.scale, fwd.sm, fwd.sis, 1.0f, false);
  const auto &dx = grad.dx, &ds = grad.ds, &db = grad.db;
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

TEST_P(BatchNormKernelsGradient, ConstantChannelNormalisesToTheBias) {
  // Zero variance: x_hat = 0 (eps keeps it finite) and y = bias; dx still sums to 0 over the
  // channel, as it does for every channel (moving all x together changes nothing).
  const Shape s{4, 2, 1};
  const std::vector<float> x = {3, 1, 3, 2, 3, 3, 3, 4}, scale = {2, 2}, bias = {0.5f, -1};
  auto be = backend(1);
  const TrainingOut fwd = forward_training(*be, s, x, scale, bias, {0, 0}, {1, 1}, false);
  const auto &y = fwd.y, &rv = fwd.rv;
  for (int r = 0; r < 4; ++r) EXPECT_FLOAT_EQ(y[r * 2], 0.5f);
  const std::vector<float> dy = {1, 2, -3, 4, 5, -6, 7, 8};
  const BackwardOut grad = backward(*be, s, false, x, dy, scale, fwd.sm, fwd.sis, 1.0f, false);
  const auto &dx = grad.dx, &db = grad.db;
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

NN_INSTANTIATE_ON_BACKENDS(BatchNormKernelsGradient);

}  // namespace
}  // namespace nn
