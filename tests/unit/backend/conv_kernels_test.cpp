// Convolution, pooling and LRN kernels of every backend against naive loops in double:
// 1-D, 2-D and 3-D shapes, strides 1-3, padding (including kernels larger than the input),
// 1x1 kernels, several channels, accumulation, and on the CPU both convolution libraries
// (im2col + sgemm and, when built, oneDNN). Also: the CPU backend's results do not depend on
// the thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/conv_test_geometry.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/device_array.h"
#include "backend_test_util.h"
#include "core/error.h"
#include "core/random.h"

namespace nn::test {
namespace {

using Lib = CpuBackend::ConvLibrary;

// Calls f(output offset in plane, input offset in plane or -1 for padding, kernel offset) for
// every output position and kernel offset.
void for_taps(const ConvGeometry& g, const std::function<void(size_t, long, size_t)>& f) {
  for (uint32_t oz = 0; oz < g.out[2]; ++oz)
    for (uint32_t oy = 0; oy < g.out[1]; ++oy)
      for (uint32_t ox = 0; ox < g.out[0]; ++ox)
        for (uint32_t kz = 0; kz < g.kernel[2]; ++kz)
          for (uint32_t ky = 0; ky < g.kernel[1]; ++ky)
            for (uint32_t kx = 0; kx < g.kernel[0]; ++kx) {
              const long iz = long(oz * g.stride[2] + kz) - g.pad[2];
              const long iy = long(oy * g.stride[1] + ky) - g.pad[1];
              const long ix = long(ox * g.stride[0] + kx) - g.pad[0];
              const bool inside = iz >= 0 && iz < long(g.in[2]) && iy >= 0 && iy < long(g.in[1]) &&
                                  ix >= 0 && ix < long(g.in[0]);
              f((size_t(oz) * g.out[1] + oy) * g.out[0] + ox,
                inside ? (iz * long(g.in[1]) + iy) * long(g.in[0]) + ix : -1,
                (size_t(kz) * g.kernel[1] + ky) * g.kernel[0] + kx);
            }
}

struct ConvReference {
  std::vector<double> y, dx, dw, dbias;
};

ConvReference reference(const ConvGeometry& g, uint32_t rows, const std::vector<float>& x,
                        const std::vector<float>& w, const std::vector<float>& bias,
                        const std::vector<float>& dy) {
  ConvReference r;
  r.y.assign(rows * g.out_size(), 0.0);
  r.dx.assign(rows * g.in_size(), 0.0);
  r.dw.assign(g.weight_size(), 0.0);
  r.dbias.assign(g.out_channels, 0.0);
  const size_t kv = g.kernel_volume();
  for (uint32_t b = 0; b < rows; ++b)
    for (uint32_t oc = 0; oc < g.out_channels; ++oc) {
      const size_t yo = b * g.out_size() + oc * g.out_plane();
      for (size_t o = 0; o < g.out_plane(); ++o) {
        r.y[yo + o] += bias[oc];
        r.dbias[oc] += dy[yo + o];
      }
      for (uint32_t ic = 0; ic < g.in_channels; ++ic) {
        const size_t xo = b * g.in_size() + ic * g.in_plane();
        const size_t wo = (size_t(oc) * g.in_channels + ic) * kv;
        for_taps(g, [&](size_t o, long i, size_t k) {
          if (i < 0) return;
          r.y[yo + o] += double(w[wo + k]) * x[xo + i];
          r.dx[xo + i] += double(w[wo + k]) * dy[yo + o];
          r.dw[wo + k] += double(x[xo + i]) * dy[yo + o];
        });
      }
    }
  return r;
}

template <typename V>
void expect_close(const std::vector<float>& got, const V& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i)
    if (!(std::fabs(got[i] - double(want[i])) <= tol * (1.0 + std::fabs(double(want[i]))))) {
      ADD_FAILURE() << what << " [" << i << "]: got " << got[i] << ", want " << want[i];
      ++bad;
    }
}

// Which convolution code `be` runs, for messages.
std::string conv_code(Backend& be) {
  if (auto* cpu = dynamic_cast<CpuBackend*>(&be))
    return cpu->conv_library() == Lib::Dnnl ? " (oneDNN)" : " (im2col+sgemm)";
  return " (" + be.name() + ")";
}

void check_conv(Backend& be, const ConvGeometry& g, uint32_t rows, uint64_t seed) {
  SCOPED_TRACE(describe(g) + " rows " + std::to_string(rows) + conv_code(be));
  Rng rng(seed);
  const auto x = uniform(rows * g.in_size(), rng, -1, 1);
  const auto w = uniform(g.weight_size(), rng, -1, 1);
  const auto bias = uniform(g.out_channels, rng, -1, 1);
  const auto dy = uniform(rows * g.out_size(), rng, -1, 1);
  const ConvReference ref = reference(g, rows, x, w, bias, dy);

  auto d_x = to_device(be, x), d_w = to_device(be, w), d_bias = to_device(be, bias),
       d_dy = to_device(be, dy);
  auto y = to_device(be, std::vector<float>(rows * g.out_size(), 0.0f));
  be.conv_forward(g, rows, d_x.data(), d_w.data(), d_bias.data(), false, y.data());
  expect_close(y.to_host(), ref.y, 1e-4, "y");
  // Accumulating adds the convolution (with its bias) to what is there.
  auto acc = to_device(be, std::vector<float>(y.size(), 0.5f));
  be.conv_forward(g, rows, d_x.data(), d_w.data(), d_bias.data(), true, acc.data());
  std::vector<double> want_acc(ref.y);
  for (auto& v : want_acc) v += 0.5;
  expect_close(acc.to_host(), want_acc, 1e-4, "y accumulated");

  auto dx = to_device(be, std::vector<float>(rows * g.in_size(), 0.25f));  // backward data adds
  be.conv_backward_data(g, rows, d_dy.data(), d_w.data(), dx.data());
  std::vector<double> want_dx(ref.dx);
  for (auto& v : want_dx) v += 0.25;
  expect_close(dx.to_host(), want_dx, 1e-4, "dx");

  const float alpha = 0.5f;
  auto dw = to_device(be, std::vector<float>(g.weight_size(), 9.0f));  // overwritten
  auto db = to_device(be, std::vector<float>(g.out_channels, 9.0f));
  be.conv_backward_filter(g, rows, d_x.data(), d_dy.data(), alpha, dw.data(), db.data());
  std::vector<double> want_dw(ref.dw), want_db(ref.dbias);
  for (auto& v : want_dw) v *= alpha;
  for (auto& v : want_db) v *= alpha;
  expect_close(dw.to_host(), want_dw, 1e-4, "dw");
  expect_close(db.to_host(), want_db, 1e-4, "dbias");
}

std::vector<Lib> libraries() {
  std::vector<Lib> libs{Lib::Gemm};
  if (CpuBackend::has_dnnl()) libs.push_back(Lib::Dnnl);
  return libs;
}

class ConvKernels : public BackendTest {};

TEST_P(ConvKernels, MatchNaiveLoops) {
  const std::vector<ConvGeometry> shapes = {
      // 2-D 'same' (DSSTNE's stride-1 padding kernel/2), the Fashion-MNIST first layer shape.
      conv_geometry(2, {9, 7, 1}, {5, 5, 1}, {1, 1, 1}, {2, 2, 0}, 1, 4),
      conv_geometry(2, {8, 6, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}, 3, 5),
      // Strides 2 and 3, no padding, non-square kernel.
      conv_geometry(2, {11, 9, 1}, {3, 2, 1}, {2, 3, 1}, {0, 0, 0}, 2, 3),
      // Even kernel with DSSTNE's same-size output (the last cuDNN output column dropped).
      conv_geometry(2, {6, 5, 1}, {2, 2, 1}, {1, 1, 1}, {1, 1, 0}, 2, 2, {6, 5, 1}),
      // Kernel larger than the input: DSSTNE pads (kernel - in + 1) / 2, output 1.
      conv_geometry(2, {3, 2, 1}, {5, 5, 1}, {1, 1, 1}, {1, 2, 0}, 2, 3, {1, 1, 1}),
      // 1-D and 3-D.
      conv_geometry(1, {13, 1, 1}, {4, 1, 1}, {2, 1, 1}, {0, 0, 0}, 3, 2),
      conv_geometry(3, {5, 4, 6}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 2, 3),
      conv_geometry(3, {7, 6, 5}, {3, 2, 3}, {2, 2, 2}, {1, 0, 1}, 2, 2),
      // 1x1 (pointwise: no im2col).
      conv_geometry(2, {5, 4, 1}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}, 6, 3),
  };
  // The CPU backend once per convolution library; other backends once.
  for (Lib lib : on_cpu() ? libraries() : std::vector<Lib>{Lib::Gemm}) {
    auto be = backend(2);
    if (on_cpu()) static_cast<CpuBackend&>(*be).set_conv_library(lib);
    uint64_t seed = 100;
    for (const auto& g : shapes) {
      check_conv(*be, g, 3, ++seed);
      check_conv(*be, g, 19, ++seed);  // several weight-gradient slices
    }
  }
}

// Axes beyond `dims` must be unused (extent 1): a 2-D convolution over several z slices is a 3-D
// one with a z kernel of 1, and a backend that ignored the extra axis would read the wrong data.
TEST_P(ConvKernels, UnusedAxesMustHaveExtentOne) {
  auto be = backend(1);
  ConvGeometry g = conv_geometry(2, {6, 5, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}, 2, 2);
  g.in[2] = g.out[2] = 3;
  const uint32_t rows = 2;
  auto x = to_device(*be, std::vector<float>(rows * g.in_size(), 1.0f));
  auto w = to_device(*be, std::vector<float>(g.weight_size(), 1.0f));
  auto y = to_device(*be, std::vector<float>(rows * g.out_size(), 0.0f));
  EXPECT_THROW(be->conv_forward(g, rows, x.data(), w.data(), nullptr, false, y.data()),
               InternalError);
  EXPECT_THROW(be->conv_backward_data(g, rows, y.data(), w.data(), x.data()), InternalError);
  EXPECT_THROW(be->conv_backward_filter(g, rows, x.data(), y.data(), 1.0f, w.data(), nullptr),
               InternalError);
}

// The CPU backend's thread pool and convolution libraries: not questions for other backends.
TEST(ConvKernels, ResultsDoNotDependOnThreads) {
  const ConvGeometry g = conv_geometry(2, {12, 10, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}, 4, 6);
  const uint32_t rows = 37;
  Rng rng(5);
  const auto x = uniform(rows * g.in_size(), rng, -1, 1);
  const auto w = uniform(g.weight_size(), rng, -1, 1);
  const auto bias = uniform(g.out_channels, rng, -1, 1);
  const auto dy = uniform(rows * g.out_size(), rng, -1, 1);
  for (Lib lib : libraries()) {
    std::vector<std::vector<float>> results;
    for (int threads : {1, 2, 3}) {
      CpuBackend be(threads);
      be.set_conv_library(lib);
      std::vector<float> out(rows * g.out_size()), dx(rows * g.in_size(), 0.0f),
          dw(g.weight_size()), db(g.out_channels);
      be.conv_forward(g, rows, x.data(), w.data(), bias.data(), false, out.data());
      be.conv_backward_data(g, rows, dy.data(), w.data(), dx.data());
      be.conv_backward_filter(g, rows, x.data(), dy.data(), 1.0f, dw.data(), db.data());
      out.insert(out.end(), dx.begin(), dx.end());
      out.insert(out.end(), dw.begin(), dw.end());
      out.insert(out.end(), db.begin(), db.end());
      results.push_back(out);
    }
    EXPECT_EQ(results[0], results[1]);
    EXPECT_EQ(results[0], results[2]);
  }
}

TEST(ConvKernels, NoDnnlMeansGemmOnly) {
  CpuBackend be(1);
  if (CpuBackend::has_dnnl()) {
    EXPECT_EQ(be.conv_library(), Lib::Dnnl);
  } else {
    EXPECT_EQ(be.conv_library(), Lib::Gemm);
    EXPECT_THROW(be.set_conv_library(Lib::Dnnl), ConfigError);
  }
}

// ---- pooling ---------------------------------------------------------------------------------

struct PoolReference {
  std::vector<double> y, dx;
};

PoolReference pool_reference(const PoolParams& p, uint32_t rows, const std::vector<float>& x,
                             const std::vector<float>& dy) {
  const ConvGeometry& g = p.geometry;
  PoolReference r;
  r.y.assign(rows * g.out_size(), 0.0);
  r.dx.assign(rows * g.in_size(), 0.0);
  ConvGeometry one = g;  // taps of one channel
  for (uint32_t q = 0; q < rows * g.in_channels; ++q) {
    const size_t xo = q * g.in_plane(), yo = q * g.out_plane();
    std::vector<double> best(g.out_plane(), -INFINITY), count(g.out_plane(), 0.0),
        sum(g.out_plane(), 0.0);
    std::vector<long> arg(g.out_plane(), -1);
    for_taps(one, [&](size_t o, long i, size_t) {
      if (i < 0) return;
      count[o] += 1;
      sum[o] += x[xo + i];
      if (arg[o] < 0 || x[xo + i] > best[o]) best[o] = x[xo + i], arg[o] = i;
    });
    for (size_t o = 0; o < g.out_plane(); ++o) {
      if (count[o] == 0) continue;
      if (p.function == PoolingFunction::Max) {
        r.y[yo + o] = best[o];
        r.dx[xo + arg[o]] += dy[yo + o];
      } else {
        r.y[yo + o] = sum[o] / count[o];
      }
    }
    if (p.function == PoolingFunction::Average)
      for_taps(one, [&](size_t o, long i, size_t) {
        if (i >= 0) r.dx[xo + i] += dy[yo + o] / count[o];
      });
  }
  return r;
}

void check_pool(Backend& be, const PoolParams& p, uint32_t rows, uint64_t seed, bool ties) {
  SCOPED_TRACE(std::string(to_string(p.function)) + " " + describe(p.geometry));
  const ConvGeometry& g = p.geometry;
  Rng rng(seed);
  auto x = uniform(rows * g.in_size(), rng, -1, 1);
  if (ties)  // few distinct values: the first maximum in a window gets the gradient
    for (auto& v : x) v = std::round(v * 2.0f);
  const auto dy = uniform(rows * g.out_size(), rng, -1, 1);
  const PoolReference ref = pool_reference(p, rows, x, dy);
  auto d_x = to_device(be, x), d_dy = to_device(be, dy);
  auto y = to_device(be, std::vector<float>(rows * g.out_size(), 0.0f));
  be.pool_forward(p, rows, d_x.data(), false, y.data());
  expect_close(y.to_host(), ref.y, 1e-5, "y");
  auto acc = to_device(be, std::vector<float>(y.size(), -2.0f));
  be.pool_forward(p, rows, d_x.data(), true, acc.data());
  std::vector<double> want(ref.y);
  for (auto& v : want) v -= 2.0;
  expect_close(acc.to_host(), want, 1e-5, "y accumulated");
  auto dx = to_device(be, std::vector<float>(rows * g.in_size(), 1.0f));
  be.pool_backward(p, rows, d_x.data(), d_dy.data(), dx.data());
  std::vector<double> want_dx(ref.dx);
  for (auto& v : want_dx) v += 1.0;
  expect_close(dx.to_host(), want_dx, 1e-5, "dx");
}

class PoolKernels : public BackendTest {};

TEST_P(PoolKernels, MaxAndAverageMatchNaiveLoops) {
  const std::vector<ConvGeometry> shapes = {
      // 2x2 windows, stride 2 (the vectorised path), also over the z slices of a volume.
      conv_geometry(2, {8, 6, 1}, {2, 2, 1}, {2, 2, 1}, {0, 0, 0}, 3, 3),
      conv_geometry(2, {7, 7, 1}, {2, 2, 1}, {2, 2, 1}, {0, 0, 0}, 2, 2),  // odd size: last row cut
      conv_geometry(3, {6, 4, 3}, {2, 2, 1}, {2, 2, 1}, {0, 0, 0}, 2, 2),
      conv_geometry(2, {40, 30, 1}, {2, 2, 1}, {2, 2, 1}, {0, 0, 0}, 16, 16),  // split over threads
      conv_geometry(2, {6, 5, 1}, {3, 3, 1}, {1, 1, 1}, {1, 1, 0}, 2, 2),  // DSSTNE stride-1 'same'
      conv_geometry(2, {9, 8, 1}, {3, 3, 1}, {2, 2, 1}, {1, 1, 0}, 1, 1),  // overlapping, padded
      conv_geometry(2, {4, 4, 1}, {4, 4, 1}, {4, 4, 1}, {0, 0, 0}, 5, 5),  // global pooling
      conv_geometry(1, {10, 1, 1}, {3, 1, 1}, {2, 1, 1}, {1, 0, 0}, 2, 2),
      conv_geometry(3, {6, 5, 4}, {2, 2, 2}, {2, 2, 2}, {0, 0, 0}, 2, 2),
      conv_geometry(3, {4, 4, 4}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, 1, 1),
  };
  auto be = backend(2);
  uint64_t seed = 7;
  for (const auto& g : shapes)
    for (PoolingFunction f : {PoolingFunction::Max, PoolingFunction::Average}) {
      check_pool(*be, {g, f}, 4, ++seed, false);
      check_pool(*be, {g, f}, 3, ++seed, true);
    }
}

TEST_P(PoolKernels, WindowEntirelyInPaddingGivesZero) {
  // Output 3 along x reads inputs 4..5 of a 4-wide input: nothing inside.
  ConvGeometry g = conv_geometry(1, {4, 1, 1}, {2, 1, 1}, {2, 1, 1}, {0, 0, 0}, 1, 1, {3, 1, 1});
  auto be = backend(1);
  const auto x = to_device(*be, std::vector<float>{-3, -1, -2, -4});
  for (PoolingFunction f : {PoolingFunction::Max, PoolingFunction::Average}) {
    auto d_y = to_device(*be, std::vector<float>(3, 7.0f));
    be->pool_forward({g, f}, 1, x.data(), false, d_y.data());
    const auto y = d_y.to_host();
    EXPECT_EQ(y[2], 0.0f) << to_string(f);
    EXPECT_EQ(y[0], f == PoolingFunction::Max ? -1.0f : -2.0f);
    auto d_dx = to_device(*be, std::vector<float>(4, 0.0f));
    const auto d_dy = to_device(*be, std::vector<float>{1, 1, 5});
    be->pool_backward({g, f}, 1, x.data(), d_dy.data(), d_dx.data());
    const auto dx = d_dx.to_host();
    EXPECT_FLOAT_EQ(dx[0] + dx[1] + dx[2] + dx[3], 2.0f) << "dy of the empty window is lost";
  }
}

// ---- LRN -------------------------------------------------------------------------------------

std::vector<double> lrn_reference(const LrnParams& p, uint32_t rows, const std::vector<float>& x,
                                  const std::vector<float>* dy, bool want_dx) {
  // y by the formula; dx by central differences of sum(dy * y) in double.
  auto forward = [&](const std::vector<double>& in) {
    std::vector<double> out(in.size());
    const long lo = (p.n - 1) / 2, hi = p.n / 2;
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < p.channels; ++c)
        for (uint64_t i = 0; i < p.plane; ++i) {
          double s = 0;
          for (long j = long(c) - lo; j <= long(c) + hi; ++j)
            if (j >= 0 && j < long(p.channels)) {
              const double v = in[(r * p.channels + j) * p.plane + i];
              s += v * v;
            }
          const size_t at = (r * p.channels + c) * p.plane + i;
          out[at] = in[at] * std::pow(p.k + p.alpha / p.n * s, -double(p.beta));
        }
    return out;
  };
  std::vector<double> xd(x.begin(), x.end());
  if (!want_dx) return forward(xd);
  std::vector<double> dx(x.size());
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    auto up = xd, down = xd;
    up[i] += h;
    down[i] -= h;
    const auto yu = forward(up), yd = forward(down);
    double d = 0;
    for (size_t j = 0; j < x.size(); ++j) d += (*dy)[j] * (yu[j] - yd[j]);
    dx[i] = d / (2 * h);
  }
  return dx;
}

NN_INSTANTIATE_ON_BACKENDS(ConvKernels);
NN_INSTANTIATE_ON_BACKENDS(PoolKernels);

class LrnKernels : public BackendTest {};

TEST_P(LrnKernels, MatchFormulaAndItsDerivative) {
  auto be = backend(2);
  struct Case {
    uint32_t channels;
    uint64_t plane;
    uint32_t n;
    float k, alpha, beta;
  };
  // Large alpha so the normalisation matters; even and odd n; fewer channels than n.
  // The last two are outside cuDNN's limits (n > 16; beta < 0.01), so the CUDA backend runs its
  // own kernels for them (math/lrn_math.h) instead of cuDNN's.
  for (const Case& c : {Case{7, 5, 5, 2.0f, 0.5f, 0.75f}, Case{6, 3, 4, 1.0f, 1.5f, 0.6f},
                        Case{3, 4, 5, 1.5f, 2.0f, 1.0f}, Case{5, 300, 3, 2.0f, 0.8f, 0.75f},
                        Case{20, 3, 17, 1.0f, 2.5f, 0.75f}, Case{5, 4, 3, 2.0f, 0.8f, 0.005f}}) {
    LrnParams p;
    p.channels = c.channels;
    p.plane = c.plane;
    p.n = c.n;
    p.k = c.k;
    p.alpha = c.alpha;
    p.beta = c.beta;
    SCOPED_TRACE("channels " + std::to_string(c.channels) + " n " + std::to_string(c.n));
    const uint32_t rows = c.plane > 100 ? 1 : 3;
    Rng rng(c.channels * 31 + c.n);
    const auto x = uniform(rows * c.channels * c.plane, rng, -2, 2);
    const auto dy = uniform(x.size(), rng, -1, 1);
    const auto d_x = to_device(*be, x), d_dy = to_device(*be, dy);
    auto y = to_device(*be, std::vector<float>(x.size(), 0.0f));
    be->lrn_forward(p, rows, d_x.data(), false, y.data());
    expect_close(y.to_host(), lrn_reference(p, rows, x, nullptr, false), 1e-5, "y");
    auto acc = to_device(*be, std::vector<float>(x.size(), 1.0f));
    be->lrn_forward(p, rows, d_x.data(), true, acc.data());
    auto want = lrn_reference(p, rows, x, nullptr, false);
    for (auto& v : want) v += 1.0;
    expect_close(acc.to_host(), want, 1e-5, "y accumulated");
    if (c.plane > 100) continue;  // the finite-difference reference is quadratic
    auto dx = to_device(*be, std::vector<float>(x.size(), -0.5f));
    be->lrn_backward(p, rows, d_x.data(), d_dy.data(), dx.data());
    auto want_dx = lrn_reference(p, rows, x, &dy, true);
    for (auto& v : want_dx) v -= 0.5;
    expect_close(dx.to_host(), want_dx, 1e-4, "dx");
  }
}

NN_INSTANTIATE_ON_BACKENDS(LrnKernels);

}  // namespace
}  // namespace nn::test
