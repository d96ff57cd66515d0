// CpuBackend elementwise kernels and reductions: fill, axpy, scale, sum of squares, sum of
// absolute values (returned, or added into a sum in host memory). The CUDA twin is
// cuda/elementwise.cu; the reductions' terms are math::square_term / abs_term for both.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/elementwise_math.h"
#include "backend/math/loss_sums.h"

namespace nn {
namespace {

// Below this many elements handing work to other threads costs more than it saves.
constexpr size_t kParallelMin = size_t(1) << 15;
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
  return blocked_sum(*pool_, x, n, [](double v) { return math::square_term(v); });
}

double CpuBackend::sum_abs(const float* x, size_t n) {
  return blocked_sum(*pool_, x, n, [](double v) { return math::abs_term(v); });
}

void CpuBackend::sum_squares_accumulate(const float* x, size_t n, double scale, double* sum) {
  math::add_scaled(sum, scale, sum_squares(x, n));
}

void CpuBackend::sum_abs_accumulate(const float* x, size_t n, double scale, double* sum) {
  math::add_scaled(sum, scale, sum_abs(x, n));
}

}  // namespace nn
