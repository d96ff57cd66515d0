// The CPU backend's batch-invariant mode (CpuBackend::set_batch_invariant, used by nn-serve): a
// row of C = op(A) op(B) is bit for bit the same whatever rows surround it and however many there
// are, for every transposition and odd shapes, and agrees with a double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/random.h"

namespace nn {
namespace {

std::vector<float> random_values(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = float(rng.uniform() * 2.0 - 1.0);
  return v;
}

// C (m x n) = alpha op(A) op(B) + beta C0 with op(A) m x k, op(B) k x n, stored as the flags say.
std::vector<float> run_gemm(CpuBackend& be, bool ta, bool tb, int m, int n, int k,
                            const std::vector<float>& a_rows, const std::vector<float>& b,
                            float beta, const std::vector<float>& c0) {
  // a_rows holds op(A) row-major; lay it out transposed when asked.
  std::vector<float> a(size_t(m) * k);
  for (int i = 0; i < m; ++i)
    for (int kk = 0; kk < k; ++kk)
      (ta ? a[size_t(kk) * m + i] : a[size_t(i) * k + kk]) = a_rows[size_t(i) * k + kk];
  std::vector<float> c(c0.begin(), c0.begin() + size_t(m) * n);
  be.gemm(ta, tb, m, n, k, 0.5f, a.data(), ta ? m : k, b.data(), tb ? k : n, beta, c.data(), n);
  return c;
}

TEST(BatchInvariantGemm, EachRowIsTheSameAloneAndInAnyBatch) {
  for (int threads : {1, 3}) {
    CpuBackend be(threads);
    be.set_batch_invariant(true);
    EXPECT_TRUE(be.batch_invariant());
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const int n = 37 + 16 * 70, k = 129, rows = 67;  // a ragged last strip and row block
        const std::vector<float> a = random_values(size_t(rows) * k, 1);
        const std::vector<float> b = random_values(size_t(k) * n, 2);
        const std::vector<float> c0 = random_values(size_t(rows) * n, 3);
        for (float beta : {0.0f, 1.0f}) {
          const std::vector<float> all = run_gemm(be, ta, tb, rows, n, k, a, b, beta, c0);
          // Double-precision reference.
          for (int i = 0; i < rows; i += 11)
            for (int j = 0; j < n; j += 7) {
              double s = 0;
              for (int kk = 0; kk < k; ++kk) {
                const double bv = tb ? b[size_t(j) * k + kk] : b[size_t(kk) * n + j];
                s += double(a[size_t(i) * k + kk]) * bv;
              }
              const double want = 0.5 * s + (beta != 0 ? double(c0[size_t(i) * n + j]) : 0.0);
              ASSERT_NEAR(all[size_t(i) * n + j], want, 1e-4) << i << "," << j;
            }
          // Row r alone, and the rows [first, first + m) as a batch of their own.
          for (int first : {0, 5, 66}) {
            for (int m : {1, 2, 3, 4, 5, 9}) {
              if (first + m > rows) continue;
              const std::vector<float> sub_a(a.begin() + size_t(first) * k,
                                             a.begin() + size_t(first + m) * k);
              const std::vector<float> sub_c0(c0.begin() + size_t(first) * n, c0.end());
              const std::vector<float> part = run_gemm(be, ta, tb, m, n, k, sub_a, b, beta, sub_c0);
              ASSERT_EQ(0, std::memcmp(part.data(), all.data() + size_t(first) * n,
                                       part.size() * sizeof(float)))
                  << "rows " << first << ".." << first + m << " ta " << ta << " tb " << tb
                  << " beta " << beta << " threads " << threads;
            }
          }
        }
      }
    }
  }
}

TEST(BatchInvariantGemm, ModeSwitchesConvolutionsToIm2col) {
  CpuBackend be(1);
  be.set_batch_invariant(true);
  EXPECT_EQ(be.conv_library(), CpuBackend::ConvLibrary::Gemm);
}

}  // namespace
}  // namespace nn
