// DotProduct and Cosine similarity kernels of every backend: forward against naive loops in
// double (strided output columns), backward against central differences of that naive score,
// accumulation into existing deltas, null and aliased gradient arrays, the zero-vector guard of
// Cosine, the check on the pooling function, and the CPU backend's independence of its thread
// count.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/device_array.h"
#include "backend_test_util.h"
#include "core/error.h"
#include "core/random.h"

namespace nn::test {
namespace {

// The score of one row pair, in double, straight from the definition.
double naive_score(PoolingFunction f, const double* a, const double* b, uint32_t cols) {
  double dot = 0, aa = 0, bb = 0;
  for (uint32_t c = 0; c < cols; ++c) {
    dot += a[c] * b[c];
    aa += a[c] * a[c];
    bb += b[c] * b[c];
  }
  if (f == PoolingFunction::DotProduct) return dot;
  const double eps = Backend::kCosineEpsilon;
  return dot / (std::max(std::sqrt(aa), eps) * std::max(std::sqrt(bb), eps));
}

// d(score)/d(x) for one row by central differences of naive_score (x is a or b).
std::vector<double> numeric_gradient(PoolingFunction f, std::vector<double> a,
                                     std::vector<double> b, bool wrt_a) {
  const uint32_t cols = uint32_t(a.size());
  std::vector<double> g(cols);
  std::vector<double>& x = wrt_a ? a : b;
  const double h = 1e-6;
  for (uint32_t c = 0; c < cols; ++c) {
    const double orig = x[c];
    x[c] = orig + h;
    const double up = naive_score(f, a.data(), b.data(), cols);
    x[c] = orig - h;
    const double down = naive_score(f, a.data(), b.data(), cols);
    x[c] = orig;
    g[c] = (up - down) / (2 * h);
  }
  return g;
}

std::vector<double> row(const std::vector<float>& m, uint32_t r, uint32_t cols) {
  return std::vector<double>(m.begin() + size_t(r) * cols, m.begin() + size_t(r + 1) * cols);
}

// similarity_backward on `be` from host arrays; da / db (in and out) may be null or the same.
void backward(Backend& be, PoolingFunction f, uint32_t rows, uint32_t cols,
              const std::vector<float>& a, const std::vector<float>& b,
              const std::vector<float>& dy, uint32_t stride, std::vector<float>* da,
              std::vector<float>* db) {
  const auto d_a = to_device(be, a), d_b = to_device(be, b), d_dy = to_device(be, dy);
  DeviceArray<float> d_da, d_db;
  if (da) d_da = to_device(be, *da);
  if (db && db != da) d_db = to_device(be, *db);
  float* pa = da ? d_da.data() : nullptr;
  float* pb = db == da ? pa : (db ? d_db.data() : nullptr);
  // a == b as host vectors means one source scored against itself: pass one array twice.
  const float* b_ptr = &a == &b ? d_a.data() : d_b.data();
  be.similarity_backward(f, rows, cols, d_a.data(), b_ptr, d_dy.data(), stride, pa, pb);
  if (da) *da = d_da.to_host();
  if (db && db != da) *db = d_db.to_host();
}

class SimilarityKernels : public BackendTestWith<PoolingFunction> {};

TEST_P(SimilarityKernels, ForwardMatchesNaiveLoopsIntoAStridedColumn) {
  const PoolingFunction f = std::get<1>(GetParam());
  auto be = backend(2);
  Rng rng(11);
  const uint32_t rows = 9, cols = 37, stride = 3, column = 1;
  const auto a = uniform(size_t(rows) * cols, rng, -1, 1);
  const auto b = uniform(size_t(rows) * cols, rng, -2, 1);
  const auto d_a = to_device(*be, a), d_b = to_device(*be, b);
  auto d_y = to_device(*be, std::vector<float>(size_t(rows) * stride, 7.0f));
  be->similarity_forward(f, rows, cols, d_a.data(), d_b.data(), d_y.data() + column, stride);
  const auto y = d_y.to_host();
  for (uint32_t r = 0; r < rows; ++r) {
    const double want = naive_score(f, row(a, r, cols).data(), row(b, r, cols).data(), cols);
    EXPECT_NEAR(y[r * stride + column], want, 1e-5 * (1 + std::fabs(want))) << "row " << r;
    // The other columns are not touched.
    EXPECT_EQ(y[r * stride + 0], 7.0f);
    EXPECT_EQ(y[r * stride + 2], 7.0f);
  }
}

TEST_P(SimilarityKernels, BackwardMatchesCentralDifferencesAndAccumulates) {
  const PoolingFunction f = std::get<1>(GetParam());
  auto be = backend(2);
  Rng rng(12);
  const uint32_t rows = 5, cols = 13, stride = 2;
  const auto a = uniform(size_t(rows) * cols, rng, -1, 1);
  const auto b = uniform(size_t(rows) * cols, rng, -1, 1);
  const auto dy = uniform(size_t(rows) * stride, rng, -2, 2);
  const auto da0 = uniform(a.size(), rng, -1, 1), db0 = uniform(b.size(), rng, -1, 1);
  std::vector<float> da = da0, db = db0;
  backward(*be, f, rows, cols, a, b, dy, stride, &da, &db);
  for (uint32_t r = 0; r < rows; ++r) {
    const auto ga = numeric_gradient(f, row(a, r, cols), row(b, r, cols), true);
    const auto gb = numeric_gradient(f, row(a, r, cols), row(b, r, cols), false);
    for (uint32_t c = 0; c < cols; ++c) {
      const size_t i = size_t(r) * cols + c;
      EXPECT_NEAR(da[i], da0[i] + dy[r * stride] * ga[c], 1e-5) << "da row " << r << " col " << c;
      EXPECT_NEAR(db[i], db0[i] + dy[r * stride] * gb[c], 1e-5) << "db row " << r << " col " << c;
    }
  }

  // Either gradient may be skipped; the other is the same as before.
  std::vector<float> only_b = db0;
  backward(*be, f, rows, cols, a, b, dy, stride, nullptr, &only_b);
  EXPECT_EQ(only_b, db);
  // One array for both (a layer scoring a source against itself): the two parts add up.
  std::vector<float> both(a.size(), 0.0f), want(a.size(), 0.0f), sa(a.size(), 0.0f),
      sb(a.size(), 0.0f);
  backward(*be, f, rows, cols, a, a, dy, stride, &both, &both);
  backward(*be, f, rows, cols, a, a, dy, stride, &sa, &sb);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(both[i], sa[i] + sb[i], 1e-6) << i;
}

INSTANTIATE_TEST_SUITE_P(Functions, SimilarityKernels,
                         ::testing::Combine(::testing::ValuesIn(backend_names()),
                                            ::testing::Values(PoolingFunction::DotProduct,
                                                              PoolingFunction::Cosine)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  to_string(std::get<1>(info.param));
                         });

class SimilarityKernelsCosine : public BackendTest {};

TEST_P(SimilarityKernelsCosine, ZeroVectorScoresZeroWithFiniteGradients) {
  auto be = backend(1);
  const uint32_t cols = 4;
  const std::vector<float> a = {0, 0, 0, 0, 1, 2, 3, 4}, b = {1, -2, 0.5f, 3, 0, 0, 0, 0};
  const auto d_a = to_device(*be, a), d_b = to_device(*be, b);
  auto d_y = to_device(*be, std::vector<float>(2, -1.0f));
  be->similarity_forward(PoolingFunction::Cosine, 2, cols, d_a.data(), d_b.data(), d_y.data(), 1);
  const auto y = d_y.to_host();
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  const std::vector<float> dy = {1.0f, 1.0f};
  std::vector<float> da(8, 0.0f), db(8, 0.0f);
  backward(*be, PoolingFunction::Cosine, 2, cols, a, b, dy, 1, &da, &db);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_TRUE(std::isfinite(da[i])) << i;
    EXPECT_TRUE(std::isfinite(db[i])) << i;
  }
  // With a clamped norm the score is linear in that vector: d/da = b / (eps |b|) for row 0,
  // while the other vector's gradient vanishes (the score stays 0 along it).
  const double nb = std::sqrt(1 + 4 + 0.25 + 9);
  EXPECT_NEAR(da[1], -2 / (Backend::kCosineEpsilon * nb), 1e-3 * 2 / (1e-8 * nb));
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(db[i], 0.0f) << i;
}

NN_INSTANTIATE_ON_BACKENDS(SimilarityKernelsCosine);

// The CPU backend's thread pool: not a question for other backends.
TEST(SimilarityKernelsThreads, ResultsDoNotDependOnTheThreadCount) {
  Rng rng(13);
  const uint32_t rows = 64, cols = 1500;  // above the size that is split over the pool
  const auto a = uniform(size_t(rows) * cols, rng, -1, 1);
  const auto b = uniform(size_t(rows) * cols, rng, -1, 1);
  const auto dy = uniform(rows, rng, -1, 1);
  for (PoolingFunction f : {PoolingFunction::DotProduct, PoolingFunction::Cosine}) {
    std::vector<std::vector<float>> ys, das;
    for (int threads : {1, 2, 3}) {
      CpuBackend be(threads);
      std::vector<float> y(rows), da(a.size(), 0.0f), db(b.size(), 0.0f);
      be.similarity_forward(f, rows, cols, a.data(), b.data(), y.data(), 1);
      be.similarity_backward(f, rows, cols, a.data(), b.data(), dy.data(), 1, da.data(), db.data());
      ys.push_back(y);
      das.push_back(da);
    }
    EXPECT_EQ(ys[0], ys[1]);
    EXPECT_EQ(ys[0], ys[2]);
    EXPECT_EQ(das[0], das[1]);
    EXPECT_EQ(das[0], das[2]);
  }
}

class SimilarityKernelsChecks : public BackendTest {};

TEST_P(SimilarityKernelsChecks, RejectOtherPoolingFunctions) {
  auto be = backend(1);
  auto a = to_device(*be, std::vector<float>(4, 1.0f)), y = to_device(*be, std::vector<float>(1));
  EXPECT_THROW(be->similarity_forward(PoolingFunction::Max, 1, 4, a.data(), a.data(), y.data(), 1),
               InternalError);
  EXPECT_THROW(be->similarity_backward(PoolingFunction::Maxout, 1, 4, a.data(), a.data(), y.data(),
                                       1, a.data(), nullptr),
               InternalError);
}

NN_INSTANTIATE_ON_BACKENDS(SimilarityKernelsChecks);

}  // namespace
}  // namespace nn::test
