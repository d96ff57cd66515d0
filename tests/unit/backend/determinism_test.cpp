// Determinism of the CPU backend: repeated runs are bitwise identical, and so are runs with 1, 2
// and 3 threads for every kernel whose partitioning cannot change the arithmetic (all but gemm,
// which is OpenBLAS's business).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

using test::bitwise_equal;

// Every thread-count-independent kernel on MovieLens-like shapes (scaled down), results
// collected in one vector of floats (doubles are split into two floats' worth of bits).
std::vector<float> run_all(int threads) {
  CpuBackend be(threads);
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
  auto w = test::uniform(size_t(items) * hidden, rng, -0.1, 0.1);
  std::vector<float> z(size_t(rows) * hidden, 0.0f);
  be.sparse_matmul(x.view(), w.data(), hidden, z.data());
  append(z);
  auto delta_h = test::uniform(z.size(), rng, -1, 1);
  std::vector<float> g(w.size(), 0.0f);
  be.sparse_weight_gradient(x.view(), delta_h.data(), hidden, 1.0f / rows, g.data());
  append(g);
  std::vector<float> bias_grad(hidden);
  be.column_sums(delta_h.data(), rows, hidden, 1.0f / rows, 0.0f, bias_grad.data());
  append(bias_grad);
  append_double(be.sum_squares(g.data(), g.size()));
  append_double(be.sum_abs(w.data(), w.size()));

  for (Activation act : {Activation::Sigmoid, Activation::SoftMax, Activation::Tanh}) {
    auto a = test::uniform(size_t(rows) * items, rng, -6, 6);
    ActivationParams ap;
    ap.kind = act;
    be.activate(ap, a.data(), rows, items);
    append(a);
    test::Csr t = test::random_csr(rows, items, 50, rng, false, false, false);
    TargetView tv;
    tv.sparse = true;
    tv.sp = t.view();
    LossParams lp;
    lp.activation = ap;
    for (ErrorFunction f : {ErrorFunction::CrossEntropy, ErrorFunction::L2}) {
      lp.function = f;
      std::vector<float> d(a.size());
      append_double(be.loss_and_delta(lp, a.data(), tv, rows, items, d.data()));
      be.activation_backward(ap, a.data(), d.data(), rows, items);
      append(d);
    }
  }

  OptimizerParams op;
  op.kind = OptimizerKind::Adam;
  op.lambda = 1e-3f;
  std::vector<float> m(w.size(), 0.0f), v(w.size(), 0.0f);
  for (uint64_t s = 1; s <= 2; ++s) {
    op.step = s;
    be.optimizer_step(op, w.data(), g.data(), m.data(), v.data(), w.size());
  }
  append(w);
  be.dropout(w.data(), w.size(), 0.25f, 77, 3);
  append(w);
  return out;
}

TEST(Determinism, RepeatedRunsAreBitwiseIdentical) {
  const auto a = run_all(2), b = run_all(2);
  EXPECT_TRUE(bitwise_equal(a, b));
}

TEST(Determinism, ThreadCountDoesNotChangeResults) {
  const auto one = run_all(1);
  EXPECT_TRUE(bitwise_equal(one, run_all(2)));
  EXPECT_TRUE(bitwise_equal(one, run_all(3)));
}

TEST(Determinism, GemmRepeatsBitwise) {
  CpuBackend be(2);
  Rng rng(9);
  const int m = 64, n = 300, k = 128;
  auto a = test::uniform(size_t(m) * k, rng, -1, 1), b = test::uniform(size_t(k) * n, rng, -1, 1);
  std::vector<float> c1(size_t(m) * n), c2(size_t(m) * n);
  be.gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c1.data(), n);
  be.gemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c2.data(), n);
  EXPECT_TRUE(bitwise_equal(c1, c2));
}

}  // namespace
}  // namespace nn
