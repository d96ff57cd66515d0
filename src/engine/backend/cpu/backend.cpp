// CpuBackend: memory, BLAS, elementwise kernels, reductions, bias/column sums and dropout.
//
// Threads: every parallel kernel runs on the backend's own pool (thread_pool.h), gemm included.
// Debian's OpenBLAS is the pthread build, whose workers yield-spin for a while after being used
// and so compete with whatever kernel runs next (on the 2-core development VM their sched_yield
// calls took ~25% of the samples of a top-k benchmark, which ran 30% faster without them). So
// OpenBLAS is set to one thread, and gemm splits C into one block per pool thread, each a
// single-threaded cblas_sgemm; OpenBLAS's workers then stay asleep. On that VM the split gemm
// ran as fast as OpenBLAS's own threading on the MovieLens shapes. OpenMP is used only for
// `#pragma omp simd`: its parallel regions end in a barrier that waits for every team thread,
// and on a loaded machine a worker that has not been scheduled yet stalled small kernels by
// milliseconds (column sums of 256 x 1024: 7.5 ms instead of 0.03 ms).
#include "backend/cpu/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/loss_sums.h"
#include "core/allocation_context.h"
#include "core/cpu_count.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "core/random.h"

namespace nn {
namespace {

// Below this many elements handing work to other threads costs more than it saves.
constexpr size_t kParallelMin = size_t(1) << 15;
// Below this many flops a gemm runs on one thread.
constexpr double kGemmParallelFlops = 4e6;
// Reductions are summed per fixed block, then the block sums in order: identical results for
// any thread count.
constexpr size_t kReduceBlock = size_t(1) << 14;

template <typename F>
double blocked_sum(cpu::ThreadPool& pool, const float* x, size_t n, F term) {
  const size_t blocks = (n + kReduceBlock - 1) / kReduceBlock;
  std::vector<double> partial(blocks, 0.0);
  auto body = [&](size_t b) {
    const size_t lo = b * kReduceBlock, hi = std::min(n, lo + kReduceBlock);
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (size_t i = lo; i < hi; ++i) acc += term(double(x[i]));
    partial[b] = acc;
  };
  if (n >= kParallelMin)
    pool.run(blocks, body);
  else
    for (size_t b = 0; b < blocks; ++b) body(b);
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

}  // namespace

CpuBackend::CpuBackend(int threads)
    : threads_(threads > 0 ? threads : available_cpus()),
      pool_(std::make_unique<cpu::ThreadPool>(threads_)) {
  // OpenBLAS only ever runs single-threaded, inside our pool's threads (see the top comment).
  openblas_set_num_threads(1);
}

CpuBackend::~CpuBackend() = default;

void* CpuBackend::allocate(size_t bytes) {
  // aligned_alloc wants a size that is a multiple of the alignment; 64 bytes is a cache line
  // and one AVX-512 vector.
  const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, rounded);
  if (!p) {
    const std::string& what = current_allocation();
    throw BackendError("out of host memory: cannot allocate " + format_bytes(rounded) +
                       (what.empty() ? std::string() : " for " + what) +
                       " (memory budget " + format_bytes(memory_budget()) + ")");
  }
  return p;
}

void CpuBackend::release(void* ptr) noexcept {
  std::free(ptr);
}

void CpuBackend::upload(void* dst, const void* host_src, size_t bytes) {
  if (bytes) std::memcpy(dst, host_src, bytes);
}

void CpuBackend::download(void* host_dst, const void* src, size_t bytes) {
  if (bytes) std::memcpy(host_dst, src, bytes);
}

void CpuBackend::copy(void* dst, const void* src, size_t bytes) {
  if (bytes && dst != src) std::memmove(dst, src, bytes);
}

void CpuBackend::fill(float* x, size_t n, float value) {
  cpu::for_chunks(*pool_, n, kParallelMin, [x, value](size_t lo, size_t hi) {
#pragma omp simd
    for (size_t i = lo; i < hi; ++i) x[i] = value;
  });
}

void CpuBackend::axpy(size_t n, float a, const float* x, float* y) {
  cpu::for_chunks(*pool_, n, kParallelMin, [a, x, y](size_t lo, size_t hi) {
    cpu::prefetch_ahead(x, lo);
    cpu::prefetch_ahead<1>(y, lo);
#pragma omp simd
    for (size_t i = lo; i < hi; ++i) y[i] += a * x[i];
  });
}

void CpuBackend::scale(float* x, size_t n, float a) {
  cpu::for_chunks(*pool_, n, kParallelMin, [x, a](size_t lo, size_t hi) {
    cpu::prefetch_ahead<1>(x, lo);
#pragma omp simd
    for (size_t i = lo; i < hi; ++i) x[i] *= a;
  });
}

double CpuBackend::sum_squares(const float* x, size_t n) {
  return blocked_sum(*pool_, x, n, [](double v) { return v * v; });
}

double CpuBackend::sum_abs(const float* x, size_t n) {
  return blocked_sum(*pool_, x, n, [](double v) { return v < 0.0 ? -v : v; });
}

void CpuBackend::sum_squares_accumulate(const float* x, size_t n, double scale, double* sum) {
  math::add_scaled(sum, scale, sum_squares(x, n));
}

void CpuBackend::sum_abs_accumulate(const float* x, size_t n, double scale, double* sum) {
  math::add_scaled(sum, scale, sum_abs(x, n));
}

void CpuBackend::fold_loss_sums(double* sums, uint64_t batch) {
  math::fold_loss_sums(sums, batch);
}

void CpuBackend::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                      int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    // No products: C = beta * C (BLAS implementations differ on k == 0).
    for (int i = 0; i < m; ++i) {
      float* row = c + size_t(i) * ldc;
      for (int j = 0; j < n; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    }
    return;
  }
  const CBLAS_TRANSPOSE ta = trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = trans_b ? CblasTrans : CblasNoTrans;
  // C is split into `parts` blocks, each computed by single-threaded OpenBLAS on a pool
  // thread. Splitting C's columns repeats the packing of A (m x k) in every part and
  // splitting its rows repeats B's (k x n), so the split follows the longer side of C.
  const bool by_columns = n >= m;
  const int extent = by_columns ? n : m;
  constexpr int kGrain = 16;  // a cache line of C per block edge
  int parts = std::min(threads_, extent / kGrain);
  if (2.0 * m * n * k < kGemmParallelFlops) parts = 1;
  if (parts <= 1) {
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const int chunk = ((extent + parts - 1) / parts + kGrain - 1) / kGrain * kGrain;
  pool_->run(size_t(parts), [&](size_t p) {
    const int lo = std::min(extent, int(p) * chunk), hi = std::min(extent, lo + chunk);
    if (lo >= hi) return;
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
    for (uint32_t j = 0; j < w; ++j) {
      const float s = static_cast<float>(double(alpha) * acc[j]);
      out[lo + j] = beta == 0.0f ? s : beta * out[lo + j] + s;
    }
  };
  if (size_t(rows) * cols >= kParallelMin)
    pool_->run(blocks, body);
  else
    for (uint32_t b = 0; b < blocks; ++b) body(b);
}

void CpuBackend::apply_dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream) {
  if (!(p > 0.0f)) return;  // nothing is dropped and kept values are scaled by 1
  const float keep = 1.0f - p;
  cpu::for_chunks(*pool_, n, kParallelMin, [=](size_t lo, size_t hi) {
#pragma omp simd
    for (size_t i = lo; i < hi; ++i) {
      const bool drop = uniform_at(seed, stream, i) < p;
      x[i] = drop ? 0.0f : x[i] / keep;
    }
  });
}

void CpuBackend::dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream) {
  apply_dropout(x, n, p, seed, stream);
}

void CpuBackend::dropout_backward(float* delta, size_t n, float p, uint64_t seed, uint64_t stream) {
  apply_dropout(delta, n, p, seed, stream);
}

}  // namespace nn
