// Host tests of the CUDA convolution, pooling and batch-norm kernels' arithmetic (no GPU
// needed; they run in CI as HostKernelMath.*). The functions of backend/math/conv_math.h,
// pool_math.h and batch_norm_math.h run here over the kernels' index spaces and are compared
// with CpuBackend:
//  * convolution: the explicit zero padding the CUDA backend uses when cuDNN's output extents
//    differ from DSSTNE's (even kernels at stride 1) - the CPU convolution of the padded input
//    with no padding must equal the CPU convolution of the input (bit for bit forward and for
//    the filter gradient; the data gradient, cropped back, within rounding);
//  * pooling: the per-output forward and the per-input gathering backward, bit for bit,
//    including ties (the first largest input gets the gradient) and windows in the padding;
//  * batch norm: the backward of the inference forward (dx bit for bit, sums within rounding),
//    and training with one value per channel (bit for bit);
//  * LRN outside cuDNN's limits: forward and backward within rounding.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "backend/conv_test_geometry.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/math/batch_norm_math.h"
#include "backend/math/conv_math.h"
#include "backend/math/lrn_math.h"
#include "backend/math/pool_math.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

using test::bitwise_equal;

std::vector<ConvGeometry> conv_shapes() {
  return {
      test::dsstne_geometry(2, {7, 5, 1}, {2, 2, 1}, {1, 1, 1}, 3,
                            4),  // even kernel, stride 1: crop
      test::dsstne_geometry(2, {9, 6, 1}, {4, 2, 1}, {1, 1, 1}, 2, 3),  // even kernels, stride 1
      test::dsstne_geometry(2, {8, 7, 1}, {3, 3, 1}, {1, 1, 1}, 2,
                            5),  // odd kernel: cuDNN's geometry
      test::dsstne_geometry(2, {9, 9, 1}, {3, 3, 1}, {2, 2, 1}, 3, 2),  // stride 2, no pad
      test::dsstne_geometry(2, {10, 7, 1}, {2, 4, 1}, {2, 1, 1}, 1,
                            3),  // mixed: stride 2 on x only
      test::dsstne_geometry(1, {31, 1, 1}, {4, 1, 1}, {1, 1, 1}, 2, 2),  // 1-D even kernel
      test::dsstne_geometry(3, {5, 4, 3}, {2, 3, 2}, {1, 1, 1}, 2, 2),   // 3-D
      test::dsstne_geometry(2, {3, 2, 1}, {5, 4, 1}, {1, 1, 1}, 2,
                            3),  // kernel larger than the input
      test::dsstne_geometry(2, {3, 3, 1}, {5, 5, 1}, {2, 2, 1}, 1, 1),  // ... at stride 2
      test::dsstne_geometry(2, {6, 6, 1}, {1, 1, 1}, {1, 1, 1}, 4, 3),  // 1x1
      test::dsstne_geometry(3, {6, 5, 3}, {2, 3, 1}, {1, 1, 1}, 2,
                            2),  // 2-D kernel over 3 z slices
  };
}

TEST(HostKernelMath, CudnnGeometryMatchesExactlyWhereDsstnesRuleAgrees) {
  // Odd kernels at stride 1 and unpadded strided kernels: cuDNN's own padding does it.
  EXPECT_TRUE(math::cudnn_geometry_matches(
      test::dsstne_geometry(2, {8, 7, 1}, {3, 3, 1}, {1, 1, 1}, 1, 1)));
  EXPECT_TRUE(math::cudnn_geometry_matches(
      test::dsstne_geometry(2, {9, 9, 1}, {3, 3, 1}, {2, 2, 1}, 1, 1)));
  EXPECT_TRUE(math::cudnn_geometry_matches(
      test::dsstne_geometry(2, {6, 6, 1}, {1, 1, 1}, {1, 1, 1}, 1, 1)));
  // Even kernels at stride 1: cuDNN's symmetric padding gives in + 1 outputs, DSSTNE in.
  EXPECT_FALSE(math::cudnn_geometry_matches(
      test::dsstne_geometry(2, {7, 5, 1}, {2, 2, 1}, {1, 1, 1}, 1, 1)));
  EXPECT_FALSE(math::cudnn_geometry_matches(
      test::dsstne_geometry(1, {31, 1, 1}, {4, 1, 1}, {1, 1, 1}, 1, 1)));
  const ConvGeometry g = test::dsstne_geometry(2, {7, 5, 1}, {2, 2, 1}, {1, 1, 1}, 1, 1);
  const math::PadShape s = math::pad_shape_of(g);
  EXPECT_EQ(s.padded[0], 8u);  // one position of padding before the input, none after
  EXPECT_EQ(s.padded[1], 6u);
}

// The padded batch as the CUDA pad kernel writes it, and the padded geometry cuDNN then runs.
std::vector<float> pad_on_host(const math::PadShape& s, uint64_t planes,
                               const std::vector<float>& x) {
  std::vector<float> padded(planes * math::padded_plane(s));
  for (uint64_t i = 0; i < padded.size(); ++i) {
    const int64_t from = math::padded_source(s, i);
    padded[i] = from < 0 ? 0.0f : x[size_t(from)];
  }
  return padded;
}

ConvGeometry padded_geometry(const ConvGeometry& g, const math::PadShape& s) {
  ConvGeometry p = g;
  for (int d = 0; d < 3; ++d) {
    p.in[d] = s.padded[d];
    p.pad[d] = 0;
  }
  return p;
}

TEST(HostKernelMath, ExplicitConvPaddingMatchesCpuConvolution) {
  CpuBackend cpu(2);
  cpu.set_conv_library(CpuBackend::ConvLibrary::Gemm);  // one implementation for both runs
  Rng rng(77);
  for (const ConvGeometry& g : conv_shapes()) {
    SCOPED_TRACE(test::describe(g));
    const math::PadShape s = math::pad_shape_of(g);
    const ConvGeometry gp = padded_geometry(g, s);
    ASSERT_TRUE(math::cudnn_geometry_matches(gp));  // what cuDNN will run: no padding
    for (uint32_t rows : {1u, 3u}) {
      const std::vector<float> x = test::uniform(rows * g.in_size(), rng, -1.0, 1.0);
      const std::vector<float> w = test::uniform(g.weight_size(), rng, -1.0, 1.0);
      const std::vector<float> bias = test::uniform(g.out_channels, rng, -1.0, 1.0);
      const std::vector<float> dy = test::uniform(rows * g.out_size(), rng, -1.0, 1.0);
      const std::vector<float> padded = pad_on_host(s, uint64_t(rows) * g.in_channels, x);

      std::vector<float> y(rows * g.out_size()), yp(y.size());
      cpu.conv_forward(g, rows, x.data(), w.data(), bias.data(), false, y.data());
      cpu.conv_forward(gp, rows, padded.data(), w.data(), bias.data(), false, yp.data());
      EXPECT_TRUE(bitwise_equal(yp, y));

      std::vector<float> dw(g.weight_size()), db(g.out_channels), dwp(dw.size()), dbp(db.size());
      cpu.conv_backward_filter(g, rows, x.data(), dy.data(), 0.5f, dw.data(), db.data());
      cpu.conv_backward_filter(gp, rows, padded.data(), dy.data(), 0.5f, dwp.data(), dbp.data());
      EXPECT_TRUE(bitwise_equal(dwp, dw));
      EXPECT_TRUE(bitwise_equal(dbp, db));

      // Data gradient: the padded one, then the crop the CUDA kernel adds into dx.
      const std::vector<float> dx0 = test::uniform(rows * g.in_size(), rng, -1.0, 1.0);
      std::vector<float> dx = dx0, dxp(padded.size(), 0.0f), cropped = dx0;
      cpu.conv_backward_data(g, rows, dy.data(), w.data(), dx.data());
      cpu.conv_backward_data(gp, rows, dy.data(), w.data(), dxp.data());
      for (uint64_t i = 0; i < cropped.size(); ++i) {
        const int64_t from = math::padded_target(s, i);
        if (from >= 0) cropped[i] += dxp[size_t(from)];
      }
      EXPECT_TRUE(test::all_near(cropped, std::vector<double>(dx.begin(), dx.end()), 1e-6, 1e-6));
      // Padding the cropped positions back must reproduce every padded interior element.
      for (uint64_t i = 0; i < dxp.size(); ++i) {
        const int64_t from = math::padded_source(s, i);
        if (from >= 0) ASSERT_EQ(math::padded_target(s, uint64_t(from)), int64_t(i));
      }
    }
  }
}

std::vector<PoolParams> pool_shapes() {
  auto make = [](std::array<uint32_t, 3> in, std::array<uint32_t, 3> kernel,
                 std::array<uint32_t, 3> stride, std::array<uint32_t, 3> pad, uint32_t dims,
                 uint32_t channels) {
    PoolParams p;
    ConvGeometry& g = p.geometry;
    g.dims = dims;
    g.in_channels = g.out_channels = channels;
    g.in = in;
    g.kernel = kernel;
    g.stride = stride;
    g.pad = pad;
    for (int d = 0; d < 3; ++d) {
      const int64_t span = int64_t(in[d]) + 2 * pad[d] - kernel[d];
      g.out[d] = uint32_t(span < 0 ? 1 : span / stride[d] + 1);
    }
    return p;
  };
  std::vector<PoolParams> v = {
      make({8, 6, 1}, {2, 2, 1}, {2, 2, 1}, {0, 0, 0}, 2, 3),   // the CPU's 2x2 fast path
      make({9, 7, 1}, {3, 3, 1}, {2, 2, 1}, {1, 1, 0}, 2, 2),   // overlapping, padded
      make({7, 5, 1}, {2, 2, 1}, {1, 1, 1}, {1, 1, 0}, 2, 2),   // even window, stride 1
      make({5, 4, 3}, {2, 3, 2}, {2, 1, 1}, {0, 1, 1}, 3, 2),   // 3-D
      make({33, 1, 1}, {4, 1, 1}, {3, 1, 1}, {2, 0, 0}, 1, 2),  // 1-D
      make({3, 3, 1}, {2, 2, 1}, {1, 1, 1}, {2, 2, 0}, 2, 1),   // windows in the padding only
  };
  // DSSTNE's even-window rule: out = in at stride 1 (pad kernel / 2).
  PoolParams d = make({6, 5, 1}, {2, 2, 1}, {1, 1, 1}, {1, 1, 0}, 2, 2);
  d.geometry.out = {6, 5, 1};
  v.push_back(d);
  return v;
}

TEST(HostKernelMath, PoolingMatchesCpuBitForBit) {
  CpuBackend cpu(2);
  Rng rng(5);
  for (PoolParams p : pool_shapes()) {
    for (PoolingFunction f : {PoolingFunction::Max, PoolingFunction::Average}) {
      for (bool ties : {false, true}) {
        p.function = f;
        const ConvGeometry& g = p.geometry;
        SCOPED_TRACE(test::describe(g) + " " + to_string(f) + (ties ? " ties" : ""));
        const uint32_t rows = 2;
        const uint64_t planes = uint64_t(rows) * g.in_channels;
        std::vector<float> x = test::uniform(planes * g.in_plane(), rng, -2.0, 2.0);
        if (ties)  // few distinct values, none zero: many windows have tied maxima
          for (float& v : x) v = float(1 + int(3.0f * (v + 2.0f) / 4.0f));
        const std::vector<float> dy = test::uniform(planes * g.out_plane(), rng, -1.0, 1.0);
        const std::vector<float> base = test::uniform(planes * g.out_plane(), rng, -1.0, 1.0);
        const std::vector<float> dx0 = test::uniform(planes * g.in_plane(), rng, -1.0, 1.0);
        const math::PoolShape s = math::pool_shape_of(p);
        for (bool accumulate : {false, true}) {
          std::vector<float> y = base, want = base;
          cpu.pool_forward(p, rows, x.data(), accumulate, want.data());
          for (uint64_t i = 0; i < y.size(); ++i) {  // the kernel's index space
            const uint64_t q = i / g.out_plane();
            const float v =
                math::pool_forward_at(s, x.data() + q * g.in_plane(), i % g.out_plane());
            y[i] = accumulate ? y[i] + v : v;
          }
          EXPECT_TRUE(bitwise_equal(y, want)) << "accumulate " << accumulate;
        }
        std::vector<float> dx = dx0, want = dx0;
        cpu.pool_backward(p, rows, x.data(), dy.data(), want.data());
        for (uint64_t i = 0; i < dx.size(); ++i) {
          const uint64_t q = i / g.in_plane();
          dx[i] = math::pool_backward_at(s, x.data() + q * g.in_plane(),
                                         dy.data() + q * g.out_plane(), i % g.in_plane(), dx[i]);
        }
        EXPECT_TRUE(bitwise_equal(dx, want));
      }
    }
  }
}

TEST(HostKernelMath, BatchNormInferenceBackwardMatchesCpu) {
  CpuBackend cpu(2);
  Rng rng(9);
  for (uint32_t spatial : {1u, 7u, 64u}) {
    for (uint32_t channels : {1u, 5u, 33u}) {
      BatchNormParams p;
      p.rows = 13;
      p.channels = channels;
      p.spatial = spatial;
      p.epsilon = 1e-3f;
      SCOPED_TRACE(std::to_string(channels) + " channels x " + std::to_string(spatial));
      const size_t n = size_t(p.rows) * channels * spatial;
      const std::vector<float> x = test::uniform(n, rng, -2.0, 3.0),
                               dy = test::uniform(n, rng, -1.0, 1.0),
                               scale = test::uniform(channels, rng, 0.5, 1.5),
                               mean = test::uniform(channels, rng, -0.5, 0.5),
                               var = test::uniform(channels, rng, 0.2, 2.0);
      std::vector<float> dx(n), dscale(channels), dbias(channels);
      cpu.batch_norm_backward_inference(p, x.data(), dy.data(), scale.data(), mean.data(),
                                        var.data(), 0.25f, dx.data(), dscale.data(), dbias.data());
      // The kernel's arithmetic: one block per channel; its sums run in another fixed order.
      std::vector<float> gx(n), gs(channels), gb(channels);
      const size_t stride = size_t(channels) * spatial;
      for (uint32_t c = 0; c < channels; ++c) {
        const math::BnChannel ch = math::bn_inference_channel(scale[c], mean[c], var[c], p.epsilon);
        double s0 = 0.0, s1 = 0.0;
        for (uint64_t k = 0; k < uint64_t(p.rows) * spatial; ++k) {
          const size_t at = (k / spatial) * stride + size_t(c) * spatial + k % spatial;
          s0 += dy[at];
          s1 += math::bn_dy_xhat(x[at], dy[at], ch.mean, ch.inv_std);
          gx[at] = math::bn_inference_dx(ch.gain, dy[at]);
        }
        gs[c] = float(0.25 * s1);
        gb[c] = float(0.25 * s0);
      }
      EXPECT_TRUE(bitwise_equal(gx, dx));
      EXPECT_TRUE(
          test::all_near(gs, std::vector<double>(dscale.begin(), dscale.end()), 1e-5, 1e-5));
      EXPECT_TRUE(test::all_near(gb, std::vector<double>(dbias.begin(), dbias.end()), 1e-5, 1e-5));
    }
  }
}

TEST(HostKernelMath, LrnFallbackMatchesCpu) {
  CpuBackend cpu(2);
  Rng rng(12);
  struct Case {
    uint32_t channels, n;
    uint64_t plane;
    float k, beta;
  };
  const Case cases[] = {{37, 17, 31, 2.0f, 0.75f},  // n above cuDNN's 16
                        {5, 32, 7, 1.0f, 0.75f},    // window wider than the channels
                        {16, 5, 49, 1e-6f, 0.75f},  // k below cuDNN's 1e-5
                        {9, 4, 13, 2.0f, 0.005f},   // beta below cuDNN's 0.01
                        {1, 1, 100, 1.0f, 0.5f}};
  for (const Case& c : cases) {
    LrnParams p;
    p.channels = c.channels;
    p.n = c.n;
    p.plane = c.plane;
    p.k = c.k;
    p.alpha = 0.3f;
    p.beta = c.beta;
    SCOPED_TRACE(std::to_string(c.channels) + " channels, n " + std::to_string(c.n));
    const uint32_t rows = 3;
    const size_t total = size_t(rows) * c.channels * c.plane;
    const std::vector<float> x = test::uniform(total, rng, 0.1, 2.0),  // no zero s when k ~ 0
        dy = test::uniform(total, rng, -1.0, 1.0), base = test::uniform(total, rng, -1.0, 1.0);
    const math::LrnShape s = math::lrn_shape_of(p);
    for (bool accumulate : {false, true}) {
      std::vector<float> want = base, got = base;
      cpu.lrn_forward(p, rows, x.data(), accumulate, want.data());
      for (uint64_t i = 0; i < total; ++i) {
        const float v = math::lrn_value(s, x[i], math::lrn_scale(s, x.data(), i));
        got[i] = accumulate ? got[i] + v : v;
      }
      EXPECT_TRUE(test::all_near(got, std::vector<double>(want.begin(), want.end()), 1e-6, 1e-5));
    }
    std::vector<float> want = base, got = base, f(total), t(total);
    cpu.lrn_backward(p, rows, x.data(), dy.data(), want.data());
    for (uint64_t i = 0; i < total; ++i)
      math::lrn_terms(s, x[i], dy[i], math::lrn_scale(s, x.data(), i), f[i], t[i]);
    for (uint64_t i = 0; i < total; ++i)
      got[i] = math::lrn_dx(s, x.data(), dy.data(), f.data(), t.data(), i, got[i]);
    EXPECT_TRUE(test::all_near(got, std::vector<double>(want.begin(), want.end()), 1e-6, 1e-5));
  }
}

TEST(HostKernelMath, BatchNormWithOneValuePerChannelMatchesCpu) {
  // rows x spatial = 1: the CUDA backend's own kernels instead of cuDNN (whose running variance
  // would divide by n - 1 = 0).
  CpuBackend cpu(1);
  Rng rng(10);
  BatchNormParams p;
  p.rows = 1;
  p.channels = 37;
  p.spatial = 1;
  p.epsilon = 1e-5f;
  p.momentum = 0.1f;
  const uint32_t C = p.channels;
  const std::vector<float> x = test::uniform(C, rng, -2.0, 2.0), dy = test::uniform(C, rng, -1, 1),
                           scale = test::uniform(C, rng, 0.5, 1.5),
                           bias = test::uniform(C, rng, -1.0, 1.0),
                           rmean = test::uniform(C, rng, -0.5, 0.5),
                           rvar = test::uniform(C, rng, 0.5, 2.0);
  std::vector<float> y(C), rm = rmean, rv = rvar, sm(C), si(C);
  cpu.batch_norm_forward_training(p, x.data(), y.data(), scale.data(), bias.data(), rm.data(),
                                  rv.data(), sm.data(), si.data());
  std::vector<float> gy(C), grm(C), grv(C), gsm(C), gsi(C);
  for (uint32_t c = 0; c < C; ++c) {
    const math::BnSingle r =
        math::bn_single_forward(x[c], scale[c], bias[c], rmean[c], rvar[c], p.epsilon, p.momentum);
    gy[c] = r.y;
    gsm[c] = r.save_mean;
    gsi[c] = r.save_inv_std;
    grm[c] = r.running_mean;
    grv[c] = r.running_var;
  }
  EXPECT_TRUE(bitwise_equal(gy, y));
  EXPECT_TRUE(bitwise_equal(gsm, sm));
  EXPECT_TRUE(bitwise_equal(gsi, si));
  EXPECT_TRUE(bitwise_equal(grm, rm));
  EXPECT_TRUE(bitwise_equal(grv, rv));

  std::vector<float> dx(C), ds(C), db(C);
  cpu.batch_norm_backward(p, x.data(), dy.data(), scale.data(), sm.data(), si.data(), 0.5f,
                          dx.data(), ds.data(), db.data());
  std::vector<float> gdx(C), gds(C), gdb(C);
  for (uint32_t c = 0; c < C; ++c) {
    const math::BnSingleGrad r =
        math::bn_single_backward(x[c], dy[c], scale[c], sm[c], si[c], 0.5f);
    gdx[c] = r.dx;
    gds[c] = r.dscale;
    gdb[c] = r.dbias;
  }
  EXPECT_TRUE(bitwise_equal(gdx, dx));
  EXPECT_TRUE(bitwise_equal(gds, ds));
  EXPECT_TRUE(bitwise_equal(gdb, db));
}

}  // namespace
}  // namespace nn
