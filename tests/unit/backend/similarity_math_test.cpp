// Host test of the CUDA similarity kernels' arithmetic (cuda/similarity.cu; no GPU needed): one
// block of 256 threads per row, each thread summing its strided columns in double, the block's
// fixed tree (warp shuffles down, then warp 0 over the warp totals), then the per-row functions of
// backend/math/similarity_math.h and the per-element update in the kernel's order. Compared with
// the CPU backend, whose row sums run in another order: within 1e-6 relative.
#include "backend/math/similarity_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

constexpr int kBlock = 256;  // kThreads of the CUDA backend

// __shfl_down_sync tree over 32 lanes: lane 0's result (lanes whose source is out of range add
// their own value, which never reaches lane 0).
double warp_tree(std::vector<double> v) {
  for (int off = 16; off > 0; off >>= 1) {
    const std::vector<double> old = v;
    for (int l = 0; l < 32; ++l)
      v[size_t(l)] = old[size_t(l)] + old[size_t(l + off < 32 ? l + off : l)];
  }
  return v[0];
}

// cuda::block_sum of one value per thread.
double block_tree(const std::vector<double>& per_thread) {
  std::vector<double> totals(32, 0.0);
  for (int w = 0; w < kBlock / 32; ++w)
    totals[size_t(w)] = warp_tree(
        std::vector<double>(per_thread.begin() + w * 32, per_thread.begin() + (w + 1) * 32));
  return warp_tree(totals);
}

struct Sums {
  double dot = 0, aa = 0, bb = 0;
};

Sums kernel_sums(const float* a, const float* b, uint32_t cols, bool norms) {
  std::vector<double> dot(kBlock, 0.0), aa(kBlock, 0.0), bb(kBlock, 0.0);
  for (int t = 0; t < kBlock; ++t)
    for (uint32_t c = uint32_t(t); c < cols; c += kBlock) {
      const double x = a[c], y = b[c];
      dot[size_t(t)] += x * y;
      if (norms) {
        aa[size_t(t)] += x * x;
        bb[size_t(t)] += y * y;
      }
    }
  Sums s;
  s.dot = block_tree(dot);
  if (norms) {
    s.aa = block_tree(aa);
    s.bb = block_tree(bb);
  }
  return s;
}

void emulate_forward(bool cosine, uint32_t rows, uint32_t cols, const float* a, const float* b,
                     float* y, uint32_t y_stride) {
  for (uint32_t r = 0; r < rows; ++r) {
    const Sums s = kernel_sums(a + size_t(r) * cols, b + size_t(r) * cols, cols, cosine);
    y[size_t(r) * y_stride] =
        float(math::similarity_score(cosine, s.dot, s.aa, s.bb, Backend::kCosineEpsilon));
  }
}

void emulate_backward(bool cosine, uint32_t rows, uint32_t cols, const float* a, const float* b,
                      const float* dy, uint32_t dy_stride, float* da, float* db) {
  for (uint32_t r = 0; r < rows; ++r) {
    const float* ar = a + size_t(r) * cols;
    const float* br = b + size_t(r) * cols;
    Sums s;
    if (cosine) s = kernel_sums(ar, br, cols, true);
    const math::SimilarityGrad g = math::similarity_grad(
        cosine, double(dy[size_t(r) * dy_stride]), s.dot, s.aa, s.bb, Backend::kCosineEpsilon);
    for (uint32_t c = 0; c < cols; ++c) {
      const size_t i = size_t(r) * cols + c;
      if (da) da[i] = math::similarity_grad_unit(da[i], g.pa, br[c], g.qa, ar[c]);
      if (db) db[i] = math::similarity_grad_unit(db[i], g.pb, ar[c], g.qb, br[c]);
    }
  }
}

TEST(HostKernelMath, SimilarityRowsMatchTheCpuBackend) {
  CpuBackend cpu(2);
  Rng rng(17);
  for (PoolingFunction f : {PoolingFunction::DotProduct, PoolingFunction::Cosine})
    for (uint32_t cols : {0u, 1u, 31u, 257u, 3001u}) {
      const bool cosine = f == PoolingFunction::Cosine;
      const uint32_t rows = 7, stride = 3;
      std::vector<float> a = test::uniform(size_t(rows) * cols, rng, -1, 1),
                         b = test::uniform(size_t(rows) * cols, rng, -1, 1);
      // A zero row and a row shorter than the Cosine epsilon (clamped norms).
      if (cols > 0) {
        for (uint32_t c = 0; c < cols; ++c) a[size_t(1) * cols + c] = 0.0f;
        for (uint32_t c = 0; c < cols; ++c) b[size_t(2) * cols + c] = 1e-12f;
      }
      std::vector<float> y_cpu(size_t(rows) * stride, 5.0f), y_gpu = y_cpu;
      cpu.similarity_forward(f, rows, cols, a.data(), b.data(), y_cpu.data() + 1, stride);
      emulate_forward(cosine, rows, cols, a.data(), b.data(), y_gpu.data() + 1, stride);
      EXPECT_TRUE(
          test::all_near(y_gpu, std::vector<double>(y_cpu.begin(), y_cpu.end()), 1e-7, 1e-6))
          << to_string(f) << " cols " << cols;

      const std::vector<float> dy = test::uniform(size_t(rows) * 2, rng, -1, 1),
                               d0 = test::uniform(size_t(rows) * cols, rng, -1, 1),
                               d1 = test::uniform(size_t(rows) * cols, rng, -1, 1);
      // Separate arrays, one of them null, and da == db.
      for (int mode = 0; mode < 4; ++mode) {
        std::vector<float> da_c = d0, db_c = d1, da_g = d0, db_g = d1;
        auto pick = [mode](std::vector<float>& x, std::vector<float>& y, float*& pa, float*& pb) {
          pa = mode == 2 ? nullptr : x.data();
          pb = mode == 1 ? nullptr : (mode == 3 ? x.data() : y.data());
        };
        float *ca, *cb, *ga, *gb;
        pick(da_c, db_c, ca, cb);
        pick(da_g, db_g, ga, gb);
        cpu.similarity_backward(f, rows, cols, a.data(), b.data(), dy.data(), 2, ca, cb);
        emulate_backward(cosine, rows, cols, a.data(), b.data(), dy.data(), 2, ga, gb);
        EXPECT_TRUE(test::all_near(da_g, std::vector<double>(da_c.begin(), da_c.end()), 1e-6, 1e-6))
            << to_string(f) << " cols " << cols << " mode " << mode;
        EXPECT_TRUE(test::all_near(db_g, std::vector<double>(db_c.begin(), db_c.end()), 1e-6, 1e-6))
            << to_string(f) << " cols " << cols << " mode " << mode;
      }
    }
}

// The clamp keeps NaN (std::max(NaN, eps) is NaN) and an exactly zero row scores 0.
TEST(HostKernelMath, SimilarityClampKeepsNanAndZeroRowsScoreZero) {
  const double eps = Backend::kCosineEpsilon;
  EXPECT_TRUE(std::isnan(math::clamped_norm(std::nan(""), eps)));
  EXPECT_EQ(math::clamped_norm(0.0, eps), eps);
  EXPECT_EQ(math::similarity_score(true, 0.0, 0.0, 4.0, eps), 0.0);
  const math::SimilarityGrad g = math::similarity_grad(true, 1.0, 0.0, 0.0, 4.0, eps);
  EXPECT_EQ(g.qa, 0.0f);  // a clamped norm contributes no term
  EXPECT_FLOAT_EQ(g.pa, float(1.0 / (eps * 2.0)));
}

}  // namespace
}  // namespace nn
