// Layer-feature kernels of every backend against double-precision references: DeltaNorm (row
// lengths), WeightNorm (column lengths), the sparseness penalty (value and derivative), and the
// sparse products with a transposed weight matrix; the CPU backend's independence of its thread
// count. Batch norm kernels: norm_batch_norm_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/device_array.h"
#include "backend_test_util.h"
#include "core/error.h"
#include "core/random.h"

namespace nn {
namespace {

using test::all_near;
using test::bitwise_equal;
using test::DeviceCsr;
using test::to_device;
using test::uniform;

class NormKernels : public test::BackendTest {};

// clip_row_norms (by_column false) or clip_column_norms of a host matrix on `be`.
std::vector<float> clip(Backend& be, const std::vector<float>& x, uint32_t rows, uint32_t cols,
                        float max, bool by_column) {
  auto d = to_device(be, x);
  if (by_column)
    be.clip_column_norms(d.data(), rows, cols, max);
  else
    be.clip_row_norms(d.data(), rows, cols, max);
  return d.to_host();
}

// sparseness_penalty of host activations on `be`; adds the derivative to *delta when given.
double penalty(Backend& be, const std::vector<float>& a, uint32_t rows, uint32_t cols, float p,
               float beta, std::vector<float>* delta) {
  auto da = to_device(be, a);
  DeviceArray<float> dd;
  if (delta) dd = to_device(be, *delta);
  const double v =
      be.sparseness_penalty(da.data(), rows, cols, p, beta, delta ? dd.data() : nullptr);
  if (delta) *delta = dd.to_host();
  return v;
}

// Rows (or columns, with `by_column`) longer than `max` rescaled to length max.
std::vector<double> clipped(const std::vector<float>& x, uint32_t rows, uint32_t cols, double max,
                            bool by_column) {
  std::vector<double> out(x.begin(), x.end());
  const uint32_t lines = by_column ? cols : rows, len = by_column ? rows : cols;
  for (uint32_t l = 0; l < lines; ++l) {
    auto at = [&](uint32_t k) -> double& {
      return by_column ? out[size_t(k) * cols + l] : out[size_t(l) * cols + k];
    };
    double sq = 0.0;
    for (uint32_t k = 0; k < len; ++k) sq += at(k) * at(k);
    const double norm = std::sqrt(sq);
    if (norm > max)
      for (uint32_t k = 0; k < len; ++k) at(k) *= max / norm;
  }
  return out;
}

TEST_P(NormKernels, ClipRowNormsRescalesOnlyLongRows) {
  auto be = backend(2);
  Rng rng(1);
  for (auto [rows, cols] : {std::pair{12u, 3u}, std::pair{300u, 257u}}) {
    auto x = uniform(size_t(rows) * cols, rng, -1, 1);
    // Row 0 is all zeros (length 0 must stay 0, not NaN); row 1 is tiny (kept as is).
    for (uint32_t c = 0; c < cols; ++c) {
      x[c] = 0.0f;
      x[cols + c] = 1e-3f;
    }
    const double max = std::sqrt(cols / 3.0);  // the expected length: about half are longer
    auto want = clipped(x, rows, cols, max, false);
    const auto got = clip(*be, x, rows, cols, float(max), false);
    EXPECT_TRUE(all_near(got, want, 1e-7, 1e-6)) << rows << "x" << cols;
    int changed = 0;
    for (uint32_t r = 0; r < rows; ++r) {
      double sq = 0.0;
      for (uint32_t c = 0; c < cols; ++c) sq += double(got[r * cols + c]) * got[r * cols + c];
      EXPECT_LE(std::sqrt(sq), max * (1 + 1e-6));
      changed += got[r * cols] != x[r * cols];
    }
    EXPECT_GT(changed, 0);
    EXPECT_LT(changed, int(rows) - 1);
  }
}

TEST_P(NormKernels, ClipColumnNormsRescalesOnlyLongColumns) {
  auto be = backend(2);
  Rng rng(2);
  for (auto [rows, cols] : {std::pair{7u, 4u}, std::pair{129u, 1100u}}) {
    auto w = uniform(size_t(rows) * cols, rng, -1, 1);
    const double max = 0.55 * std::sqrt(double(rows));
    auto want = clipped(w, rows, cols, max, true);
    const auto got = clip(*be, w, rows, cols, float(max), true);
    EXPECT_TRUE(all_near(got, want, 1e-7, 1e-6)) << rows << "x" << cols;
    EXPECT_FALSE(bitwise_equal(got, w));  // some column was long enough to be clipped
  }
  // max_norm 0 means off.
  auto w = uniform(12, rng, -5, 5);
  auto same = to_device(*be, w);
  be->clip_column_norms(same.data(), 3, 4, 0.0f);
  be->clip_row_norms(same.data(), 3, 4, 0.0f);
  EXPECT_TRUE(bitwise_equal(same.to_host(), w));
}

double kl(double p, double rho) {
  return p * std::log(p / rho) + (1 - p) * std::log((1 - p) / (1 - rho));
}

TEST_P(NormKernels, SparsenessPenaltyValueAndDerivative) {
  auto be = backend(2);
  Rng rng(3);
  const uint32_t rows = 37, cols = 700;
  auto a = uniform(size_t(rows) * cols, rng, 0.0, 0.6);
  // Column 0 averages to exactly 0: rho is clamped to 1e-6 there.
  for (uint32_t r = 0; r < rows; ++r) a[r * cols] = 0.0f;
  const double p = double(0.05f), beta = double(0.7f);  // the values the kernel sees
  std::vector<double> rho(cols, 0.0);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c) rho[c] += a[r * cols + c] / double(rows);
  double want_value = 0.0;
  for (auto& v : rho) {
    v = std::min(std::max(v, 1e-6), 1.0 - 1e-6);
    want_value += kl(p, v);
  }
  want_value *= rows * beta;
  auto delta = uniform(a.size(), rng, -1, 1);
  std::vector<double> want_delta(delta.begin(), delta.end());
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c)
      want_delta[r * cols + c] += beta * (-p / rho[c] + (1 - p) / (1 - rho[c]));

  auto before = delta;
  const double v0 = penalty(*be, a, rows, cols, float(p), float(beta), nullptr);
  EXPECT_TRUE(bitwise_equal(delta, before));
  const double v1 = penalty(*be, a, rows, cols, float(p), float(beta), &delta);
  EXPECT_NEAR(v0, want_value, 1e-9 * want_value);
  EXPECT_EQ(v0, v1);
  EXPECT_TRUE(all_near(delta, want_delta, 1e-5, 1e-5));
  EXPECT_EQ(penalty(*be, a, rows, cols, float(p), 0.0f, &delta), 0.0);
}

TEST_P(NormKernels, SparsenessPenaltyIsTheDerivativeOfItsValue) {
  // Central differences of the returned value against the added delta (rho away from the clamp).
  auto be = backend(1);
  Rng rng(4);
  const uint32_t rows = 6, cols = 5;
  auto a = uniform(size_t(rows) * cols, rng, 0.1, 0.9);
  std::vector<float> delta(a.size(), 0.0f);
  penalty(*be, a, rows, cols, 0.2f, 0.5f, &delta);
  for (size_t i = 0; i < a.size(); ++i) {
    auto up = a, down = a;
    up[i] += 1e-3f;
    down[i] -= 1e-3f;
    const double numeric = (penalty(*be, up, rows, cols, 0.2f, 0.5f, nullptr) -
                            penalty(*be, down, rows, cols, 0.2f, 0.5f, nullptr)) /
                           double(up[i] - down[i]);
    EXPECT_NEAR(delta[i], numeric, 1e-3 + 1e-3 * std::fabs(numeric)) << i;
  }
}

TEST_P(NormKernels, SparseProductsWithTransposedWeights) {
  Rng rng(5);
  for (bool big : {false, true}) {
    const uint32_t rows = big ? 64 : 5, cols = big ? 300 : 9, n_out = big ? 96 : 4;
    test::Csr x = test::random_csr(rows, cols, big ? 40 : 4, rng, /*analog=*/true,
                                   /*weighted=*/true, /*duplicates=*/true, /*empty_row=*/2);
    auto dense = x.dense_input();
    auto w = uniform(size_t(n_out) * cols, rng, -1, 1);  // [n_out][cols]
    auto z = uniform(size_t(rows) * n_out, rng, -1, 1);
    std::vector<double> want_z(z.begin(), z.end());
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t o = 0; o < n_out; ++o)
        for (uint32_t i = 0; i < cols; ++i)
          want_z[r * n_out + o] += dense[r * cols + i] * w[size_t(o) * cols + i];
    auto delta = uniform(size_t(rows) * n_out, rng, -1, 1);
    auto g = uniform(w.size(), rng, -1, 1);
    std::vector<double> want_g(g.begin(), g.end());
    const double alpha = 0.25;
    for (uint32_t o = 0; o < n_out; ++o)
      for (uint32_t i = 0; i < cols; ++i)
        for (uint32_t r = 0; r < rows; ++r)
          want_g[size_t(o) * cols + i] += alpha * dense[r * cols + i] * delta[r * n_out + o];

    // Two backends (on the CPU, with 1 and 2 threads): the results must have the same bits.
    std::vector<float> zs[2], gs[2];
    for (int threads : {1, 2}) {
      auto be = backend(threads);
      const DeviceCsr dxs(*be, x);
      auto dw = to_device(*be, w), dz = to_device(*be, z), dd = to_device(*be, delta),
           dg = to_device(*be, g);
      be->sparse_matmul_transposed(dxs.view(), dw.data(), n_out, dz.data());
      be->sparse_weight_gradient_transposed(dxs.view(), dd.data(), n_out, float(alpha), dg.data());
      zs[threads - 1] = dz.to_host();
      gs[threads - 1] = dg.to_host();
    }
    EXPECT_TRUE(all_near(zs[0], want_z, 1e-5, 1e-5));
    EXPECT_TRUE(all_near(gs[0], want_g, 1e-5, 1e-5));
    EXPECT_TRUE(bitwise_equal(zs[0], zs[1]));  // thread count does not change the result
    EXPECT_TRUE(bitwise_equal(gs[0], gs[1]));
  }
}

TEST_P(NormKernels, TransposedSparseIndexOutOfRangeIsADataError) {
  auto be = backend(1);
  test::Csr x;
  x.cols = 4;
  x.add_row({1, 4});
  const DeviceCsr dxs(*be, x);
  auto w = to_device(*be, std::vector<float>(8, 0.0f)),
       z = to_device(*be, std::vector<float>(2, 0.0f));
  try {
    be->sparse_matmul_transposed(dxs.view(), w.data(), 2, z.data());
    be->synchronize();  // an asynchronous backend reports it when it next waits
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("index 4 is outside the 4 inputs"), std::string::npos)
        << e.what();
  }
}

// The CPU backend's thread pool: not a question for other backends.
TEST(NormKernels, ResultsDoNotDependOnTheThreadCount) {
  Rng rng(6);
  const uint32_t rows = 300, cols = 1500;
  auto x = uniform(size_t(rows) * cols, rng, -1, 1);
  CpuBackend one(1), two(2);
  auto r1 = x, r2 = x, c1 = x, c2 = x;
  one.clip_row_norms(r1.data(), rows, cols, 10.0f);
  two.clip_row_norms(r2.data(), rows, cols, 10.0f);
  one.clip_column_norms(c1.data(), rows, cols, 5.0f);
  two.clip_column_norms(c2.data(), rows, cols, 5.0f);
  EXPECT_TRUE(bitwise_equal(r1, r2));
  EXPECT_TRUE(bitwise_equal(c1, c2));
  std::vector<float> d1(x.size(), 0.0f), d2(x.size(), 0.0f);
  auto a = uniform(x.size(), rng, 0, 1);
  EXPECT_EQ(one.sparseness_penalty(a.data(), rows, cols, 0.1f, 1.0f, d1.data()),
            two.sparseness_penalty(a.data(), rows, cols, 0.1f, 1.0f, d2.data()));
  EXPECT_TRUE(bitwise_equal(d1, d2));
}

NN_INSTANTIATE_ON_BACKENDS(NormKernels);

}  // namespace
}  // namespace nn
