// Sparse-input kernels against dense products on the densified batch: values, example weights,
// duplicated indices and empty rows; both partitionings of the CPU weight gradient; on every
// backend.
#include <gtest/gtest.h>

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
using test::DeviceCsr;
using test::to_device;
using test::uniform;

struct SparseCase {
  bool analog, weighted;
  uint32_t n_out;
};

class SparseKernels : public test::BackendTestWith<SparseCase> {};

TEST_P(SparseKernels, MatmulMatchesDenseProduct) {
  const SparseCase sc = std::get<1>(GetParam());
  auto be = backend(2);
  Rng rng(11 + sc.n_out);
  const uint32_t rows = 40, cols = 300;
  Csr x = test::random_csr(rows, cols, 25, rng, sc.analog, sc.weighted, true, /*empty_row=*/3);
  auto w = uniform(size_t(cols) * sc.n_out, rng, -1, 1);
  auto z = uniform(size_t(rows) * sc.n_out, rng, -1, 1);  // accumulates onto existing z
  const auto xd = x.dense_input();
  std::vector<double> want(z.begin(), z.end());
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < cols; ++i) {
      const double v = xd[size_t(r) * cols + i];
      if (v == 0.0) continue;
      for (uint32_t o = 0; o < sc.n_out; ++o)
        want[size_t(r) * sc.n_out + o] += v * w[size_t(i) * sc.n_out + o];
    }
  const DeviceCsr dxs(*be, x);
  auto dw = to_device(*be, w), dz = to_device(*be, z);
  be->sparse_matmul(dxs.view(), dw.data(), sc.n_out, dz.data());
  z = dz.to_host();
  EXPECT_TRUE(all_near(z, want, 1e-5, 1e-5));
  // The empty row is untouched.
  for (uint32_t o = 0; o < sc.n_out; ++o)
    EXPECT_EQ(z[3 * sc.n_out + o], float(want[3 * sc.n_out + o]));
}

TEST_P(SparseKernels, WeightGradientMatchesDenseProduct) {
  const SparseCase sc = std::get<1>(GetParam());
  Rng rng(21 + sc.n_out);
  const uint32_t rows = 40, cols = 300;
  Csr x = test::random_csr(rows, cols, 25, rng, sc.analog, sc.weighted, true, /*empty_row=*/0);
  auto delta = uniform(size_t(rows) * sc.n_out, rng, -1, 1);
  auto g0 = uniform(size_t(cols) * sc.n_out, rng, -1, 1);  // accumulates onto existing g
  const float alpha = -0.125f;
  const auto xd = x.dense_input();
  std::vector<double> want(g0.begin(), g0.end());
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t i = 0; i < cols; ++i) {
      const double v = xd[size_t(r) * cols + i];
      if (v == 0.0) continue;
      for (uint32_t o = 0; o < sc.n_out; ++o)
        want[size_t(i) * sc.n_out + o] += alpha * v * delta[size_t(r) * sc.n_out + o];
    }
  // On other backends the three runs check that the result is the same run to run.
  std::vector<float> first;
  for (int threads : {1, 2, 3}) {
    auto be = backend(threads);
    const DeviceCsr dxs(*be, x);
    auto ddelta = to_device(*be, delta), dg = to_device(*be, g0);
    be->sparse_weight_gradient(dxs.view(), ddelta.data(), sc.n_out, alpha, dg.data());
    const auto g = dg.to_host();
    EXPECT_TRUE(all_near(g, want, 1e-5, 1e-5)) << threads << " threads";
    // Each element gets its terms in (row, entry) order whatever the partitioning.
    if (first.empty())
      first = g;
    else
      EXPECT_TRUE(test::bitwise_equal(g, first)) << threads << " threads";
  }
}

// With 2+ threads: n_out 40 uses the input-index partitioning, 200 the output-column one; 1
// and 3 are small enough to run serially.
// Cases are numbered as before (gtest's default names) after the backend: /cpu_0 ... /cpu_4.
INSTANTIATE_TEST_SUITE_P(
    Cases, SparseKernels,
    ::testing::Combine(::testing::ValuesIn(test::backend_names()),
                       ::testing::Values(SparseCase{false, false, 200}, SparseCase{true, true, 200},
                                         SparseCase{true, false, 3}, SparseCase{false, true, 40},
                                         SparseCase{true, true, 1})),
    [](const ::testing::TestParamInfo<std::tuple<std::string, SparseCase>>& info) {
      return std::get<0>(info.param) + "_" + std::to_string(info.index % 5);
    });

class SparseKernelErrors : public test::BackendTest {};

// A backend may find the bad index asynchronously (CUDA: when it next waits for the device), so
// each call is followed by synchronize().
TEST_P(SparseKernelErrors, OutOfRangeIndexIsReportedWithItsRow) {
  auto be = backend(1);
  Csr x;
  x.cols = 10;
  x.add_row({1, 2});
  x.add_row({3, 10});
  const DeviceCsr dxs(*be, x);
  auto w = to_device(*be, std::vector<float>(10 * 4, 1.0f));
  auto z = to_device(*be, std::vector<float>(2 * 4, 0.0f));
  try {
    be->sparse_matmul(dxs.view(), w.data(), 4, z.data());
    be->synchronize();
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("sparse_matmul"), std::string::npos) << msg;
    EXPECT_NE(msg.find("row 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("index 10"), std::string::npos) << msg;
  }
  EXPECT_THROW(
      {
        be->sparse_weight_gradient(dxs.view(), z.data(), 4, 1.0f, w.data());
        be->synchronize();
      },
      DataError);
}

NN_INSTANTIATE_ON_BACKENDS(SparseKernelErrors);

}  // namespace
}  // namespace nn
