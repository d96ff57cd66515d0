// CUDA parity tests (CTest label `cuda`): every Backend operation the CUDA backend implements is
// run on both backends with the same inputs, on random shapes including awkward sizes (not
// multiples of a warp or a block), empty sparse rows, duplicated indices and K larger than the
// width, and the results are compared with tolerances (bit for bit where no rounding can differ:
// dropout masks, top-K, MaxOut, bias broadcast, fills). Every test skips with a message when no
// CUDA device is usable, so CI without a GPU stays green; scripts/gpu-check.sh runs them on a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_test_util.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/device_probe.h"
#include "backend/device_array.h"
#include "core/error.h"
#include "core/random.h"
#include "cuda_test_util.h"

namespace nn {
namespace {

using test::near;
using test::on;

using test::Csr;
using test::DeviceCsr;

class CudaParity : public test::CudaVsCpu {
 protected:
  CudaParity() : CudaVsCpu(2024) {}
};

TEST_F(CudaParity, ElementwiseAndReductions) {
  for (size_t n : {size_t(0), size_t(1), size_t(31), size_t(1000), size_t(1 << 20) + 3}) {
    const std::vector<float> x = test::uniform(n, rng_, -2.0, 2.0),
                             y = test::uniform(n, rng_, -2.0, 2.0);
    auto gx = on(*gpu_, x), gy = on(*gpu_, y);
    std::vector<float> cy = y, cx = x;
    gpu_->axpy(n, 0.7f, gx.data(), gy.data());
    cpu_->axpy(n, 0.7f, cx.data(), cy.data());
    EXPECT_TRUE(near(gy.to_host(), cy, 1e-7, 1e-6)) << n;  // fused multiply-add or not
    gpu_->scale(gy.data(), n, -1.5f);
    cpu_->scale(cy.data(), n, -1.5f);
    EXPECT_TRUE(near(gy.to_host(), cy, 1e-7, 1e-6)) << n;
    // The sums over the GPU's own values (axpy may differ from the CPU's in the last bit, and
    // the sums are held to 1e-12).
    const std::vector<float> gy_host = gy.to_host();
    const double ss = cpu_->sum_squares(gy_host.data(), n), sa = cpu_->sum_abs(gy_host.data(), n);
    EXPECT_NEAR(gpu_->sum_squares(gy.data(), n), ss, 1e-12 * (1 + ss)) << n;
    EXPECT_NEAR(gpu_->sum_abs(gy.data(), n), sa, 1e-12 * (1 + sa)) << n;
    gpu_->fill(gy.data(), n, 3.25f);
    EXPECT_TRUE(test::bitwise_equal(gy.to_host(), std::vector<float>(n, 3.25f))) << n;
  }
}

TEST_F(CudaParity, GemmBiasAndColumnSums) {
  struct Shape {
    int m, n, k;
  };
  for (Shape s : {Shape{1, 1, 1}, Shape{17, 33, 5}, Shape{129, 65, 257}, Shape{256, 1000, 128},
                  Shape{3, 7, 0}})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        const int lda = ta ? s.m : s.k, ldb = tb ? s.k : s.n, ldc = s.n;
        const std::vector<float> a = test::uniform(size_t(s.m) * s.k + 1, rng_, -1, 1),
                                 b = test::uniform(size_t(s.k) * s.n + 1, rng_, -1, 1),
                                 c = test::uniform(size_t(s.m) * s.n, rng_, -1, 1);
        auto ga = on(*gpu_, a), gb = on(*gpu_, b), gc = on(*gpu_, c);
        std::vector<float> cc = c;
        gpu_->gemm(ta, tb, s.m, s.n, s.k, 0.8f, ga.data(), lda, gb.data(), ldb, 0.5f, gc.data(),
                   ldc);
        cpu_->gemm(ta, tb, s.m, s.n, s.k, 0.8f, a.data(), lda, b.data(), ldb, 0.5f, cc.data(), ldc);
        EXPECT_TRUE(near(gc.to_host(), cc, 1e-5, 1e-4))
            << s.m << "x" << s.n << "x" << s.k << " ta " << ta << " tb " << tb;
      }
  for (uint32_t rows : {1u, 7u, 300u})
    for (uint32_t cols : {1u, 33u, 1025u}) {
      const std::vector<float> z = test::uniform(size_t(rows) * cols, rng_, -1, 1),
                               bias = test::uniform(cols, rng_, -1, 1);
      for (bool acc : {false, true}) {
        auto gz = on(*gpu_, z), gbias = on(*gpu_, bias);
        std::vector<float> cz = z;
        gpu_->broadcast_bias(gz.data(), gbias.data(), rows, cols, acc);
        cpu_->broadcast_bias(cz.data(), bias.data(), rows, cols, acc);
        EXPECT_TRUE(test::bitwise_equal(gz.to_host(), cz));
      }
      const std::vector<float> out = test::uniform(cols, rng_, -1, 1);
      for (float beta : {0.0f, 0.9f}) {
        auto gz = on(*gpu_, z), gout = on(*gpu_, out);
        std::vector<float> cout = out;
        gpu_->column_sums(gz.data(), rows, cols, 0.25f, beta, gout.data());
        cpu_->column_sums(z.data(), rows, cols, 0.25f, beta, cout.data());
        EXPECT_TRUE(near(gout.to_host(), cout, 1e-6, 1e-6)) << rows << "x" << cols;
      }
    }
}

TEST_F(CudaParity, ActivationsForwardAndBackward) {
  const auto& kinds = test::kAllActivations;
  for (Activation k : kinds)
    for (uint32_t cols : {1u, 31u, 27278u}) {
      const uint32_t rows = 5;
      ActivationParams p;
      p.kind = k;
      p.slope = 0.2f;
      p.max_value = 2.0f;
      const std::vector<float> z = test::uniform(size_t(rows) * cols, rng_, -6, 6),
                               d = test::uniform(size_t(rows) * cols, rng_, -1, 1);
      auto gz = on(*gpu_, z), gd = on(*gpu_, d);
      std::vector<float> cz = z, cd = d;
      gpu_->activate(p, gz.data(), rows, cols);
      cpu_->activate(p, cz.data(), rows, cols);
      const std::vector<float> ga = gz.to_host();
      EXPECT_TRUE(near(ga, cz, 1e-7, 1e-5)) << to_string(k) << " " << cols;
      gpu_->activation_backward(p, gz.data(), gd.data(), rows, cols);
      cpu_->activation_backward(p, cz.data(), cd.data(), rows, cols);
      EXPECT_TRUE(near(gd.to_host(), cd, 1e-6, 1e-5)) << to_string(k) << " " << cols;
    }
  // MaxOut, with ties and a NaN piece.
  const size_t groups = 13;
  const uint32_t k = 3, inner = 37;
  std::vector<float> z = test::uniform(groups * k * inner, rng_, -1, 1);
  z[5] = z[inner + 5];
  z[2 * inner + 9] = std::numeric_limits<float>::quiet_NaN();
  auto gz = on(*gpu_, z);
  DeviceArray<float> ga(*gpu_, groups * inner), gdz(*gpu_, groups * k * inner);
  DeviceArray<uint32_t> garg(*gpu_, groups * inner);
  std::vector<float> ca(groups * inner), cdz(groups * k * inner);
  std::vector<uint32_t> carg(groups * inner);
  gpu_->maxout_forward(gz.data(), groups, k, inner, ga.data(), garg.data());
  cpu_->maxout_forward(z.data(), groups, k, inner, ca.data(), carg.data());
  EXPECT_TRUE(test::bitwise_equal(ga.to_host(), ca));
  EXPECT_EQ(garg.to_host(), carg);
  const std::vector<float> da = test::uniform(groups * inner, rng_, -1, 1);
  auto gda = on(*gpu_, da);
  gpu_->maxout_backward(gda.data(), garg.data(), groups, k, inner, gdz.data());
  cpu_->maxout_backward(da.data(), carg.data(), groups, k, inner, cdz.data());
  EXPECT_TRUE(test::bitwise_equal(gdz.to_host(), cdz));
}

TEST_F(CudaParity, LossesAndOutputDeltas) {
  const auto& functions = test::kAllErrorFunctions;
  const Activation acts[] = {Activation::Sigmoid,
                             Activation::Tanh,
                             Activation::RectifiedLinear,
                             Activation::Linear,
                             Activation::SoftMax,
                             Activation::SoftPlus,
                             Activation::ScaledExponentialLinear,
                             Activation::ReluMax};
  for (ErrorFunction f : functions)
    for (Activation act : acts)
      for (int kind = 0; kind < 4; ++kind)
        for (uint32_t cols : {1u, 77u, 3001u}) {
          const uint32_t rows = 9;
          LossParams p;
          p.function = f;
          p.activation.kind = act;
          p.delta_boost_one = 1.5f;
          p.delta_boost_zero = 0.5f;
          std::vector<float> a = test::uniform(size_t(rows) * cols, rng_, -2, 2);
          cpu_->activate(p.activation, a.data(), rows, cols);
          Csr sp = test::random_csr(rows, cols, 40, rng_, kind == 2, kind == 2, true, 3);
          std::vector<float> dense = test::uniform(size_t(rows) * cols, rng_, 0, 1),
                             weights = test::uniform(rows, rng_, 0.5, 2);
          auto ga = on(*gpu_, a), gdense = on(*gpu_, dense), gw = on(*gpu_, weights);
          DeviceCsr gsp(*gpu_, sp);
          TargetView ct, gt;
          ct.sparse = gt.sparse = kind != 0;
          ct.ignore_zero = gt.ignore_zero = kind == 3;
          if (kind == 0) {
            ct.dense = dense.data();
            ct.row_weight = weights.data();
            gt.dense = gdense.data();
            gt.row_weight = gw.data();
          } else {
            ct.sp = sp.view();
            gt.sp = gsp.view();
          }
          std::vector<float> cd(a.size());
          DeviceArray<float> gd(*gpu_, a.size());
          const double ce = cpu_->loss_and_delta(p, a.data(), ct, rows, cols, cd.data());
          const double ge = gpu_->loss_and_delta(p, ga.data(), gt, rows, cols, gd.data());
          const std::string what = std::string(to_string(f)) + "/" + to_string(act) + "/targets " +
                                   std::to_string(kind) + "/cols " + std::to_string(cols);
          // Per-unit errors may differ in the last bit (fused multiply-adds) and are summed in
          // another order: a relative 1e-6 on the total.
          EXPECT_NEAR(ge, ce, 1e-6 * (1 + std::fabs(ce))) << what;
          EXPECT_TRUE(near(gd.to_host(), cd, 1e-6, 1e-5)) << what;
          EXPECT_NEAR(gpu_->loss(p, ga.data(), gt, rows, cols), ge, 1e-12 * (1 + std::fabs(ge)))
              << what << " (loss and loss_and_delta: the same kernel)";
        }
}

TEST_F(CudaParity, SparseForwardAndGradientWithEmptyRows) {
  for (uint32_t n_out : {1u, 33u, 300u})
    for (bool analog : {false, true}) {
      const uint32_t rows = 57, cols = 2000;
      Csr x = test::random_csr(rows, cols, 150, rng_, analog, analog, true, 5);
      x.row_ptr[11] = x.row_ptr[10];  // a second empty row: row 10 (row 11 takes its entries)
      DeviceCsr gx(*gpu_, x);
      const std::vector<float> w = test::uniform(size_t(cols) * n_out, rng_, -1, 1),
                               z = test::uniform(size_t(rows) * n_out, rng_, -1, 1),
                               delta = test::uniform(size_t(rows) * n_out, rng_, -1, 1),
                               g = test::uniform(size_t(cols) * n_out, rng_, -1, 1);
      auto gw = on(*gpu_, w), gz = on(*gpu_, z), gdelta = on(*gpu_, delta), gg = on(*gpu_, g);
      std::vector<float> cz = z, cg = g;
      gpu_->sparse_matmul(gx.view(), gw.data(), n_out, gz.data());
      cpu_->sparse_matmul(x.view(), w.data(), n_out, cz.data());
      EXPECT_TRUE(near(gz.to_host(), cz, 1e-5, 1e-5)) << n_out;
      gpu_->sparse_weight_gradient(gx.view(), gdelta.data(), n_out, 0.3f, gg.data());
      cpu_->sparse_weight_gradient(x.view(), delta.data(), n_out, 0.3f, cg.data());
      const std::vector<float> first = gg.to_host();
      EXPECT_TRUE(near(first, cg, 1e-5, 1e-5)) << n_out;
      // Deterministic: the same call again gives the same bits.
      auto gg2 = on(*gpu_, g);
      gpu_->sparse_weight_gradient(gx.view(), gdelta.data(), n_out, 0.3f, gg2.data());
      EXPECT_TRUE(test::bitwise_equal(gg2.to_host(), first));
    }
}

TEST_F(CudaParity, SparseIndexOutsideTheInputsIsADataError) {
  Csr x;
  x.cols = 10;
  x.add_row({1, 2});
  x.add_row({3, 12});
  DeviceCsr gx(*gpu_, x);
  DeviceArray<float> w(*gpu_, 10 * 4), z(*gpu_, 2 * 4);
  gpu_->fill(w.data(), 40, 1.0f);
  gpu_->fill(z.data(), 8, 0.0f);
  gpu_->sparse_matmul(gx.view(), w.data(), 4, z.data());
  try {
    gpu_->synchronize();
    FAIL() << "no DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("row 1: index 12 is outside the 10 inputs"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(CudaParity, DropoutMasksMatchBitForBit) {
  const size_t n = 1000003;
  const std::vector<float> x = test::uniform(n, rng_, -1, 1);
  auto gx = on(*gpu_, x);
  std::vector<float> cx = x;
  gpu_->dropout(gx.data(), n, 0.3f, 99, shift_stream(7, 12345));
  cpu_->dropout(cx.data(), n, 0.3f, 99, shift_stream(7, 12345));
  EXPECT_TRUE(test::bitwise_equal(gx.to_host(), cx));
  gpu_->dropout_backward(gx.data(), n, 0.3f, 99, 8);
  cpu_->dropout_backward(cx.data(), n, 0.3f, 99, 8);
  EXPECT_TRUE(test::bitwise_equal(gx.to_host(), cx));
}

TEST_F(CudaParity, OptimizerSteps) {
  for (OptimizerKind kind : {OptimizerKind::SGD, OptimizerKind::Momentum, OptimizerKind::Nesterov,
                             OptimizerKind::AdaGrad, OptimizerKind::RMSProp,
                             OptimizerKind::AdaDelta, OptimizerKind::Adam}) {
    const size_t n = 100001;
    std::vector<float> w = test::uniform(n, rng_, -1, 1), s0(n, 0.0f), s1(n, 0.0f);
    auto gw = on(*gpu_, w), gs0 = on(*gpu_, s0), gs1 = on(*gpu_, s1);
    for (uint64_t step = 1; step <= 3; ++step) {
      const std::vector<float> g = test::uniform(n, rng_, -0.5, 0.5);
      auto gg = on(*gpu_, g);
      OptimizerParams p;
      p.kind = kind;
      p.alpha = 0.01f;
      p.lambda = 0.001f;
      p.lambda1 = 0.0001f;
      p.step = step;
      gpu_->optimizer_step(p, gw.data(), gg.data(), gs0.data(), gs1.data(), n);
      cpu_->optimizer_step(p, w.data(), g.data(), s0.data(), s1.data(), n);
    }
    // The same formulas (math::optimizer_unit); only fused multiply-adds may round differently.
    EXPECT_TRUE(near(gw.to_host(), w, 1e-6, 1e-5)) << to_string(kind);
    EXPECT_TRUE(near(gs0.to_host(), s0, 1e-6, 1e-5)) << to_string(kind);
    EXPECT_TRUE(near(gs1.to_host(), s1, 1e-6, 1e-5)) << to_string(kind);
  }
}

TEST_F(CudaParity, TopKIncludingKLargerThanTheWidth) {
  struct Case {
    uint32_t rows, cols, valid, k;
  };
  for (Case c : {Case{3, 10, 10, 15}, Case{64, 27278, 27278, 100}, Case{5, 1000, 600, 7},
                 Case{4, 33, 0, 2}, Case{2, 1, 1, 1}}) {
    std::vector<float> x = test::uniform(size_t(c.rows) * c.cols, rng_, -1, 1);
    for (size_t i = 0; i < x.size(); i += 5) x[i] = 0.25f;  // ties
    x[0] = std::numeric_limits<float>::quiet_NaN();
    if (x.size() > 3) x[3] = -0.0f;
    auto gx = on(*gpu_, x);
    DeviceArray<float> gv(*gpu_, size_t(c.rows) * c.k);
    DeviceArray<uint32_t> gi(*gpu_, size_t(c.rows) * c.k);
    std::vector<float> cv(size_t(c.rows) * c.k);
    std::vector<uint32_t> ci(size_t(c.rows) * c.k);
    gpu_->top_k(gx.data(), c.rows, c.cols, c.valid, c.k, gv.data(), gi.data());
    cpu_->top_k(x.data(), c.rows, c.cols, c.valid, c.k, cv.data(), ci.data());
    EXPECT_TRUE(test::bitwise_equal(gv.to_host(), cv)) << c.rows << "x" << c.cols << " k " << c.k;
    EXPECT_EQ(gi.to_host(), ci) << c.rows << "x" << c.cols << " k " << c.k;
  }
}

TEST_F(CudaParity, NormsAndSparsenessPenalty) {
  for (uint32_t rows : {1u, 37u, 256u})
    for (uint32_t cols : {1u, 129u, 3001u}) {
      const std::vector<float> x = test::uniform(size_t(rows) * cols, rng_, -0.1, 0.1);
      auto gx = on(*gpu_, x);
      std::vector<float> cx = x;
      gpu_->clip_row_norms(gx.data(), rows, cols, 1.0f);
      cpu_->clip_row_norms(cx.data(), rows, cols, 1.0f);
      EXPECT_TRUE(near(gx.to_host(), cx, 1e-7, 1e-6)) << rows << "x" << cols;
      gpu_->clip_column_norms(gx.data(), rows, cols, 0.3f);
      cpu_->clip_column_norms(cx.data(), rows, cols, 0.3f);
      EXPECT_TRUE(near(gx.to_host(), cx, 1e-7, 1e-6)) << rows << "x" << cols;
      const std::vector<float> a = test::uniform(size_t(rows) * cols, rng_, 0.0, 0.4),
                               d = test::uniform(size_t(rows) * cols, rng_, -1, 1);
      auto ga = on(*gpu_, a), gd = on(*gpu_, d);
      std::vector<float> cd = d;
      const double gv = gpu_->sparseness_penalty(ga.data(), rows, cols, 0.05f, 0.5f, gd.data());
      const double cv = cpu_->sparseness_penalty(a.data(), rows, cols, 0.05f, 0.5f, cd.data());
      EXPECT_NEAR(gv, cv, 1e-9 * (1 + std::fabs(cv))) << rows << "x" << cols;
      EXPECT_TRUE(near(gd.to_host(), cd, 1e-6, 1e-6)) << rows << "x" << cols;
    }
}

TEST_F(CudaParity, TransposedSparseWeights) {
  for (uint32_t n_out : {1u, 33u, 300u}) {
    const uint32_t rows = 41, cols = 1500;
    Csr x = test::random_csr(rows, cols, 90, rng_, true, true, true, 7);
    DeviceCsr gx(*gpu_, x);
    const std::vector<float> w = test::uniform(size_t(n_out) * cols, rng_, -1, 1),
                             z = test::uniform(size_t(rows) * n_out, rng_, -1, 1),
                             delta = test::uniform(size_t(rows) * n_out, rng_, -1, 1),
                             g = test::uniform(size_t(n_out) * cols, rng_, -1, 1);
    auto gw = on(*gpu_, w), gz = on(*gpu_, z), gdelta = on(*gpu_, delta), gg = on(*gpu_, g);
    std::vector<float> cz = z, cg = g;
    gpu_->sparse_matmul_transposed(gx.view(), gw.data(), n_out, gz.data());
    cpu_->sparse_matmul_transposed(x.view(), w.data(), n_out, cz.data());
    EXPECT_TRUE(near(gz.to_host(), cz, 1e-5, 1e-5)) << n_out;
    gpu_->sparse_weight_gradient_transposed(gx.view(), gdelta.data(), n_out, 0.3f, gg.data());
    cpu_->sparse_weight_gradient_transposed(x.view(), delta.data(), n_out, 0.3f, cg.data());
    EXPECT_TRUE(near(gg.to_host(), cg, 1e-5, 1e-5)) << n_out;
  }
}

}  // namespace
}  // namespace nn
