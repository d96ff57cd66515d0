// CpuBackend dense kernels: gemm through OpenBLAS, bias broadcast and column sums (the CUDA twin
// is cuda/dense.cu; the per-element rules of column sums and of a gemm without terms are
// backend/math/dense_math.h for both).
//
// Debian's OpenBLAS is the pthread build, whose workers yield-spin for a while after being used
// and so compete with whatever kernel runs next (on the 2-core development VM their sched_yield
// calls took ~25% of the samples of a top-k benchmark, which ran 30% faster without them). So
// OpenBLAS is set to one thread (CpuBackend's constructor), and gemm splits C into one block per
// pool thread, each a single-threaded cblas_sgemm; OpenBLAS's workers then stay asleep. On that
// VM the split gemm ran as fast as OpenBLAS's own threading on the MovieLens shapes.
//
// A C of at least kGemmColumnTile columns is cut at fixed columns (multiples of the tile counted
// from its first column), never at places that depend on the thread count: OpenBLAS computes a
// column with other kernels depending on where it falls in a call (measured with 0.3.21: a
// 1024 x 100,000 x 128 product and the same product in calls of 8,192 columns differed in the
// last bits of 3% of the elements, near the end of each call), so with fixed tiles an element's
// value no longer depends on the threads, and a product over columns [c0, c0 + w), c0 a multiple
// of the tile and w at least one tile ending at a multiple of it or at C's last column, has the
// bits of those columns of the whole product (Backend::gemm_column_tile; the blocked top-K of
// predict/blocked_top_k.h relies on it). Each tile repacks A (m x k floats), about 2% of the work
// of the tile's product for k = 128.
#include <cblas.h>

#include <algorithm>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/gemm_split.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/dense_math.h"

namespace nn {
namespace {

// Below this many elements handing work to other threads costs more than it saves.
constexpr size_t kParallelMin = size_t(1) << 15;

}  // namespace

void CpuBackend::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                      int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    // No products: C = beta * C (BLAS implementations differ on k == 0).
    for (int i = 0; i < m; ++i) {
      float* row = c + size_t(i) * ldc;
      for (int j = 0; j < n; ++j) row[j] = math::beta_scaled(beta, row[j]);
    }
    return;
  }
  if (precision_ == Precision::BF16) {
    gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if (batch_invariant_) {
    gemm_batch_invariant(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  if (n >= int(kGemmColumnTile)) {
    // Fixed tiles (see the top of this file), spread over the pool.
    const int tile = int(kGemmColumnTile);
    const size_t tiles = size_t((n + tile - 1) / tile);
    auto run_tile = [&](size_t t) {
      const int lo = int(t) * tile, w = std::min(tile, n - lo);
      const float* bp = trans_b ? b + size_t(lo) * ldb : b + lo;
      cblas_sgemm(CblasRowMajor, ta, tb, m, w, k, alpha, a, lda, bp, ldb, beta, c + lo, ldc);
    };
    if (threads_ <= 1 || 2.0 * m * n * k < cpu::kGemmParallelFlops) {
      for (size_t t = 0; t < tiles; ++t) run_tile(t);
    } else {
      // Contiguous runs of tiles per task keep each task's B columns together.
      const size_t parts = std::min(tiles, size_t(threads_));
      pool_->run(parts, [&](size_t p) {
        for (size_t t = tiles * p / parts; t < tiles * (p + 1) / parts; ++t) run_tile(t);
      });
    }
    return;
  }
  // Smaller products: blocks of C, each computed by single-threaded OpenBLAS on a pool thread.
  constexpr int kGrain = 16;  // a cache line of C per block edge
  cpu::split_product(*pool_, threads_, m, n, k, kGrain, [&](bool by_columns, int lo, int hi) {
    if (by_columns) {
      const float* bp = trans_b ? b + size_t(lo) * ldb : b + lo;
      cblas_sgemm(CblasRowMajor, ta, tb, m, hi - lo, k, alpha, a, lda, bp, ldb, beta, c + lo, ldc);
    } else {
      const float* ap = trans_a ? a + lo : a + size_t(lo) * lda;
      cblas_sgemm(CblasRowMajor, ta, tb, hi - lo, n, k, alpha, ap, lda, b, ldb, beta,
                  c + size_t(lo) * ldc, ldc);
    }
  });
}

void CpuBackend::broadcast_bias(float* z, const float* bias, uint32_t rows, uint32_t cols,
                                bool accumulate) {
  auto body = [=](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      float* row = z + r * cols;
      if (accumulate) {
#pragma omp simd
        for (uint32_t c = 0; c < cols; ++c) row[c] += bias[c];
      } else {
        std::memcpy(row, bias, size_t(cols) * sizeof(float));
      }
    }
  };
  if (size_t(rows) * cols >= kParallelMin)
    cpu::parallel_ranges(*pool_, rows, std::max<size_t>(1, cpu::kMinTaskFloats / cols), body);
  else
    body(0, rows);
}

void CpuBackend::column_sums(const float* x, uint32_t rows, uint32_t cols, float alpha, float beta,
                             float* out) {
  // Each column block is summed over the rows in order, in double: the result does not depend
  // on how blocks are spread over threads.
  constexpr uint32_t kBlock = 512;
  const uint32_t blocks = (cols + kBlock - 1) / kBlock;
  auto body = [=](size_t b) {
    const uint32_t lo = uint32_t(b) * kBlock, hi = std::min(cols, lo + kBlock), w = hi - lo;
    double acc[kBlock];
    for (uint32_t j = 0; j < w; ++j) acc[j] = 0.0;
    for (uint32_t r = 0; r < rows; ++r) {
      const float* row = x + size_t(r) * cols + lo;
#pragma omp simd
      for (uint32_t j = 0; j < w; ++j) acc[j] += row[j];
    }
    for (uint32_t j = 0; j < w; ++j)
      out[lo + j] = math::column_sum_value(alpha, acc[j], beta, out[lo + j]);
  };
  if (size_t(rows) * cols >= kParallelMin)
    pool_->run(blocks, body);
  else
    for (uint32_t b = 0; b < blocks; ++b) body(b);
}

}  // namespace nn
