// Determinism: on every backend repeated runs are bitwise identical (the CUDA backend promises
// it too: no floating-point atomics); on the CPU backend so are runs with 1, 2 and 3 threads for
// every kernel whose partitioning cannot change the arithmetic (all but gemm, which is
// OpenBLAS's business).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/device_array.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

using test::bitwise_equal;
using test::to_device;

// Every thread-count-independent kernel on MovieLens-like shapes (scaled down), results
// collected in one vector of floats (doubles are split into two floats' worth of bits).
std::vector<float> run_all(Backend& be) {
  Rng rng(2024);
  const uint32_t rows = 64, items = 3001, hidden = 130;
  std::vector<float> out;
  auto append = [&out](const std::vector<float>& v) { out.insert(out.end(), v.begin(), v.end()); };
  auto append_double = [&out](double d) {
    float f[2];
    std::memcpy(f, &d, sizeof d);
    out.push_back(f[0]);
    out.push_back(f[1]);
  };

  test::Csr x = test::random_csr(rows, items, 40, rng, true, true, true, 5);
  const test::DeviceCsr dxs(be, x);
  auto w = to_device(be, test::uniform(size_t(items) * hidden, rng, -0.1, 0.1));
  auto z = to_device(be, std::vector<float>(size_t(rows) * hidden, 0.0f));
  be.sparse_matmul(dxs.view(), w.data(), hidden, z.data());
  append(z.to_host());
  auto delta_h = to_device(be, test::uniform(z.size(), rng, -1, 1));
  auto g = to_device(be, std::vector<float>(w.size(), 0.0f));
  be.sparse_weight_gradient(dxs.view(), delta_h.data(), hidden, 1.0f / rows, g.data());
  append(g.to_host());
  DeviceArray<float> bias_grad(be, hidden);
  be.column_sums(delta_h.data(), rows, hidden, 1.0f / rows, 0.0f, bias_grad.data());
  append(bias_grad.to_host());
  append_double(be.sum_squares(g.data(), g.size()));
  append_double(be.sum_abs(w.data(), w.size()));

  for (Activation act : {Activation::Sigmoid, Activation::SoftMax, Activation::Tanh}) {
    auto a = to_device(be, test::uniform(size_t(rows) * items, rng, -6, 6));
    ActivationParams ap;
    ap.kind = act;
    be.activate(ap, a.data(), rows, items);
    append(a.to_host());
    test::Csr t = test::random_csr(rows, items, 50, rng, false, false, false);
    TargetView host_tv;
    host_tv.sparse = true;
    host_tv.sp = t.view();
    const test::DeviceTargets tv(be, host_tv, rows, items);
    LossParams lp;
    lp.activation = ap;
    for (ErrorFunction f : {ErrorFunction::CrossEntropy, ErrorFunction::L2}) {
      lp.function = f;
      DeviceArray<float> d(be, a.size());
      append_double(be.loss_and_delta(lp, a.data(), tv.view(), rows, items, d.data()));
      be.activation_backward(ap, a.data(), d.data(), rows, items);
      append(d.to_host());
    }
  }

  OptimizerParams op;
  op.kind = OptimizerKind::Adam;
  op.lambda = 1e-3f;
  auto m = to_device(be, std::vector<float>(w.size(), 0.0f));
  auto v = to_device(be, std::vector<float>(w.size(), 0.0f));
  for (uint64_t s = 1; s <= 2; ++s) {
    op.step = s;
    be.optimizer_step(op, w.data(), g.data(), m.data(), v.data(), w.size());
  }
  append(w.to_host());
  be.dropout(w.data(), w.size(), 0.25f, 77, 3);
  append(w.to_host());
  return out;
}

std::vector<float> run_all_cpu(int threads) {
  CpuBackend be(threads);
  return run_all(be);
}

class Determinism : public test::BackendTest {};

TEST_P(Determinism, RepeatedRunsAreBitwiseIdentical) {
  const auto a = run_all(*backend(2)), b = run_all(*backend(2));
  EXPECT_TRUE(bitwise_equal(a, b));
}

// The CPU backend's thread pool: not a question for other backends.
TEST(Determinism, ThreadCountDoesNotChangeResults) {
  const auto one = run_all_cpu(1);
  EXPECT_TRUE(bitwise_equal(one, run_all_cpu(2)));
  EXPECT_TRUE(bitwise_equal(one, run_all_cpu(3)));
}

TEST_P(Determinism, GemmRepeatsBitwise) {
  auto be = backend(2);
  Rng rng(9);
  const int m = 64, n = 300, k = 128;
  auto a = to_device(*be, test::uniform(size_t(m) * k, rng, -1, 1));
  auto b = to_device(*be, test::uniform(size_t(k) * n, rng, -1, 1));
  DeviceArray<float> c1(*be, size_t(m) * n), c2(*be, size_t(m) * n);
  be->gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c1.data(), n);
  be->gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c2.data(), n);
  EXPECT_TRUE(bitwise_equal(c1.to_host(), c2.to_host()));
}

NN_INSTANTIATE_ON_BACKENDS(Determinism);

}  // namespace
}  // namespace nn
