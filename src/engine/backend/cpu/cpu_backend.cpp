// CpuBackend: memory, BLAS, elementwise kernels, reductions, bias/column sums and dropout.
//
// OpenBLAS and OpenMP: the Debian OpenBLAS is the pthread build, with its own worker pool next
// to libgomp's. After a parallel region libgomp workers spin for GOMP_SPINCOUNT iterations
// (default 300000 when OMP_WAIT_POLICY is unset) before sleeping, and OpenBLAS workers yield-spin
// after a gemm; with both pools sized to the core count the spinners compete with the next
// kernel for the same cores. scripts/bench_kernels.cpp measures gemm alone and interleaved with
// OpenMP kernels; on the 2-core development machine the difference was within noise (see the
// report in that file). If it ever shows, start the process with OMP_WAIT_POLICY=passive (or
// GOMP_SPINCOUNT=10000): libgomp reads them at load time, so they cannot be set from here.
#include "backend/cpu/cpu_backend.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/random.h"

namespace nn {
namespace {

// Below this many elements a parallel region costs more than it saves.
constexpr size_t kParallelMin = size_t(1) << 15;
// Reductions are summed per fixed block, then the block sums in order: identical results for
// any thread count.
constexpr size_t kReduceBlock = size_t(1) << 14;

template <typename F>
double blocked_sum(int threads, const float* x, size_t n, F term) {
  const size_t blocks = (n + kReduceBlock - 1) / kReduceBlock;
  std::vector<double> partial(blocks, 0.0);
#pragma omp parallel for num_threads(threads) schedule(static) if (n >= kParallelMin)
  for (size_t b = 0; b < blocks; ++b) {
    const size_t lo = b * kReduceBlock, hi = std::min(n, lo + kReduceBlock);
    double acc = 0.0;
#pragma omp simd reduction(+ : acc)
    for (size_t i = lo; i < hi; ++i) acc += term(double(x[i]));
    partial[b] = acc;
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

}  // namespace

CpuBackend::CpuBackend(int threads)
    : threads_(threads > 0 ? threads : std::max(1, omp_get_num_procs())) {
  openblas_set_num_threads(threads_);
}

void* CpuBackend::allocate(size_t bytes) {
  // aligned_alloc wants a size that is a multiple of the alignment; 64 bytes is a cache line
  // and one AVX-512 vector.
  const size_t rounded = std::max<size_t>(64, (bytes + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, rounded);
  if (!p)
    throw BackendError(std::string(__FILE__) + ":" + std::to_string(__LINE__) +
                       ": aligned_alloc(64, " + std::to_string(rounded) +
                       "): out of host memory");
  return p;
}

void CpuBackend::release(void* ptr) noexcept { std::free(ptr); }

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
#pragma omp parallel for simd num_threads(threads_) schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) x[i] = value;
}

void CpuBackend::axpy(size_t n, float a, const float* x, float* y) {
#pragma omp parallel for simd num_threads(threads_) schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void CpuBackend::scale(float* x, size_t n, float a) {
#pragma omp parallel for simd num_threads(threads_) schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) x[i] *= a;
}

double CpuBackend::sum_squares(const float* x, size_t n) {
  return blocked_sum(threads_, x, n, [](double v) { return v * v; });
}

double CpuBackend::sum_abs(const float* x, size_t n) {
  return blocked_sum(threads_, x, n, [](double v) { return v < 0.0 ? -v : v; });
}

void CpuBackend::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                      const float* a, int lda, const float* b, int ldb, float beta, float* c,
                      int ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    // No products: C = beta * C (BLAS implementations differ on k == 0).
    for (int i = 0; i < m; ++i) {
      float* row = c + size_t(i) * ldc;
      for (int j = 0; j < n; ++j) row[j] = beta == 0.0f ? 0.0f : beta * row[j];
    }
    return;
  }
  // OpenBLAS's thread count is process-global; another CpuBackend may have changed it.
  if (openblas_get_num_threads() != threads_) openblas_set_num_threads(threads_);
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void CpuBackend::broadcast_bias(float* z, const float* bias, uint32_t rows, uint32_t cols,
                                bool accumulate) {
  const size_t total = size_t(rows) * cols;
#pragma omp parallel for num_threads(threads_) schedule(static) if (total >= kParallelMin)
  for (uint32_t r = 0; r < rows; ++r) {
    float* row = z + size_t(r) * cols;
    if (accumulate) {
#pragma omp simd
      for (uint32_t c = 0; c < cols; ++c) row[c] += bias[c];
    } else {
      std::memcpy(row, bias, size_t(cols) * sizeof(float));
    }
  }
}

void CpuBackend::column_sums(const float* x, uint32_t rows, uint32_t cols, float alpha,
                             float beta, float* out) {
  // Each column block is summed over the rows in order, in double: the result does not depend
  // on how blocks are spread over threads.
  constexpr uint32_t kBlock = 512;
  const uint32_t blocks = (cols + kBlock - 1) / kBlock;
  const size_t total = size_t(rows) * cols;
#pragma omp parallel for num_threads(threads_) schedule(static) if (total >= kParallelMin)
  for (uint32_t b = 0; b < blocks; ++b) {
    const uint32_t lo = b * kBlock, hi = std::min(cols, lo + kBlock), w = hi - lo;
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
  }
}

void CpuBackend::apply_dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream) {
  if (!(p > 0.0f)) return;  // nothing is dropped and kept values are scaled by 1
  const float keep = 1.0f - p;
#pragma omp parallel for simd num_threads(threads_) schedule(static) if (n >= kParallelMin)
  for (size_t i = 0; i < n; ++i) {
    const bool drop = uniform_at(seed, stream, i) < p;
    x[i] = drop ? 0.0f : x[i] / keep;
  }
}

void CpuBackend::dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream) {
  apply_dropout(x, n, p, seed, stream);
}

void CpuBackend::dropout_backward(float* delta, size_t n, float p, uint64_t seed,
                                  uint64_t stream) {
  apply_dropout(delta, n, p, seed, stream);
}

}  // namespace nn
