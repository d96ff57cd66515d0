// CpuBackend's batch-invariant gemm (CpuBackend::set_batch_invariant): C = alpha * op(A) op(B) +
// beta * C where every element of C is one chain of multiply-adds over k in order 0..k-1, run by
// the same instructions whatever m is and wherever its row sits in the batch. A row's result then
// depends on that row alone, which OpenBLAS does not promise: its sgemm picks kernels and edge
// paths by m (the MovieLens output layer's scores differed in the last bits between a batch of 1
// and a batch of 64). nn-serve needs the promise, because it gathers concurrent requests into one
// minibatch and must answer each exactly as it would have answered it alone.
//
// Layout: C is cut into strips of kStrip columns (one task each on the pool, so the work split
// depends on n only) and each strip into blocks of kRows rows. A block accumulates kRows x kStrip
// sums in registers while it walks k; a block's missing rows (m not a multiple of kRows) read a
// row of zeros and are thrown away, so the last rows of a batch run the very code the first ones
// run. op(A) is packed once per call (m x k floats); the B strip (k x kStrip floats, 16 KiB for
// k = 256) stays in L1 across the blocks.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/dense_math.h"

namespace nn {
namespace {

constexpr int kRows = 4;    // rows of C per block
constexpr int kStrip = 16;  // columns of C per strip (two AVX2 / one AVX-512 register per row)
// Below this many flops the strips run on the calling thread.
constexpr double kParallelFlops = 4e6;

struct Operands {
  bool trans_b;
  int m, n, k;
  float alpha;
  const float* a;  // op(A) packed: [m rounded up to kRows][k], the extra rows zero
  const float* b;
  int ldb;
  float beta;
  float* c;
  int ldc;
};

// Columns [j0, j0 + width) of every row of C; width <= kStrip.
void strip(const Operands& g, int j0, int width) {
  const int k = g.k;
  for (int i0 = 0; i0 < g.m; i0 += kRows) {
    const float* ablock = g.a + size_t(i0) * k;
    float acc[kRows][kStrip] = {};
    for (int kk = 0; kk < k; ++kk) {
      // op(B)[kk][j0 .. j0 + width), zero-padded to the strip's width.
      float bv[kStrip] = {};
      if (!g.trans_b) {
        const float* brow = g.b + size_t(kk) * g.ldb + j0;
        for (int j = 0; j < width; ++j) bv[j] = brow[j];
      } else {
        for (int j = 0; j < width; ++j) bv[j] = g.b[size_t(j0 + j) * g.ldb + kk];
      }
      for (int r = 0; r < kRows; ++r) {
        const float av = ablock[size_t(r) * k + kk];
#pragma omp simd
        for (int j = 0; j < kStrip; ++j) acc[r][j] += av * bv[j];
      }
    }
    const int rows = std::min(kRows, g.m - i0);
    for (int r = 0; r < rows; ++r) {
      float* crow = g.c + size_t(i0 + r) * g.ldc + j0;
      for (int j = 0; j < width; ++j)
        crow[j] = g.alpha * acc[r][j] + math::beta_scaled(g.beta, crow[j]);
    }
  }
}

}  // namespace

void CpuBackend::gemm_batch_invariant(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                                      const float* a, int lda, const float* b, int ldb, float beta,
                                      float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  // op(A) packed once for every strip, its rows padded with zeros to whole blocks.
  const int padded = (m + kRows - 1) / kRows * kRows;
  std::vector<float> ap(size_t(padded) * std::max(k, 0), 0.0f);
  for (int i = 0; i < m; ++i)
    for (int kk = 0; kk < k; ++kk)
      ap[size_t(i) * k + kk] = trans_a ? a[size_t(kk) * lda + i] : a[size_t(i) * lda + kk];
  const Operands g{trans_b, m, n, std::max(k, 0), alpha, ap.data(), b, ldb, beta, c, ldc};
  const int strips = (n + kStrip - 1) / kStrip;
  // Tasks are groups of whole strips; which thread runs a strip never changes its sums.
  const int per_task = std::max(1, strips / (4 * threads_));
  const int tasks = (strips + per_task - 1) / per_task;
  auto task = [&](size_t t) {
    const int first = int(t) * per_task, last = std::min(strips, first + per_task);
    for (int s = first; s < last; ++s)
      strip(g, s * kStrip, std::min(kStrip, n - s * kStrip));
  };
  if (threads_ <= 1 || 2.0 * m * n * k < kParallelFlops) {
    for (int t = 0; t < tasks; ++t) task(size_t(t));
  } else {
    pool_->run(size_t(tasks), task);
  }
}

}  // namespace nn
