// CpuBackend norm constraints and the sparseness penalty: DeltaNorm (row lengths), WeightNorm
// (column lengths) and the KL sparseness penalty on hidden activations.
//
// Determinism: every row or column is reduced by one task, in a fixed order, in double; tasks
// cover fixed blocks, so results do not depend on the thread count. The per-row/column
// arithmetic (the clip factor, the clamped mean activation, the KL value and its derivative) is
// backend/math/norm_math.h, which the CUDA kernels (cuda/norm.cu) run too.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/loss_sums.h"
#include "backend/math/norm_math.h"

namespace nn {
namespace {

// Below this many elements handing work to other threads costs more than it saves.
constexpr size_t kParallelMin = size_t(1) << 15;
// Columns per task for the column-wise reductions (a few KB of double accumulators).
constexpr uint32_t kColumnBlock = 512;

template <typename F>
void run_blocks(cpu::ThreadPool& pool, size_t blocks, size_t work, const F& body) {
  if (work >= kParallelMin && blocks > 1)
    pool.run(blocks, body);
  else
    for (size_t b = 0; b < blocks; ++b) body(b);
}

// Sums of squares of the columns [lo, hi) of x[rows][cols], in double.
void column_squares(const float* x, uint32_t rows, uint32_t cols, uint32_t lo, uint32_t hi,
                    double* acc) {
  const uint32_t w = hi - lo;
  for (uint32_t j = 0; j < w; ++j) acc[j] = 0.0;
  for (uint32_t r = 0; r < rows; ++r) {
    const float* row = x + size_t(r) * cols + lo;
#pragma omp simd
    for (uint32_t j = 0; j < w; ++j) acc[j] += double(row[j]) * double(row[j]);
  }
}

}  // namespace

void CpuBackend::clip_row_norms(float* x, uint32_t rows, uint32_t cols, float max_norm) {
  if (!(max_norm > 0.0f) || rows == 0 || cols == 0) return;
  auto body = [=](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      float* row = x + r * cols;
      double sq = 0.0;
#pragma omp simd reduction(+ : sq)
      for (uint32_t c = 0; c < cols; ++c) sq += double(row[c]) * double(row[c]);
      const float s = math::clip_scale(sq, max_norm);
      if (s == 1.0f) continue;  // not longer than max_norm (or NaN: left for the loss to show)
#pragma omp simd
      for (uint32_t c = 0; c < cols; ++c) row[c] *= s;
    }
  };
  if (size_t(rows) * cols >= kParallelMin)
    cpu::parallel_ranges(*pool_, rows, std::max<size_t>(1, cpu::kMinTaskFloats / cols), body);
  else
    body(0, rows);
}

void CpuBackend::clip_column_norms(float* w, uint32_t rows, uint32_t cols, float max_norm) {
  if (!(max_norm > 0.0f) || rows == 0 || cols == 0) return;
  const uint32_t blocks = (cols + kColumnBlock - 1) / kColumnBlock;
  run_blocks(*pool_, blocks, size_t(rows) * cols, [=](size_t b) {
    const uint32_t lo = uint32_t(b) * kColumnBlock, hi = std::min(cols, lo + kColumnBlock);
    double acc[kColumnBlock];
    column_squares(w, rows, cols, lo, hi, acc);
    float s[kColumnBlock];
    bool any = false;
    for (uint32_t j = 0; j < hi - lo; ++j) {
      s[j] = math::clip_scale(acc[j], max_norm);
      any |= s[j] != 1.0f;
    }
    if (!any) return;  // the common case once weights settle: no second pass
    for (uint32_t r = 0; r < rows; ++r) {
      float* row = w + size_t(r) * cols + lo;
#pragma omp simd
      for (uint32_t j = 0; j < hi - lo; ++j) row[j] *= s[j];
    }
  });
}

double CpuBackend::sparseness_penalty(const float* a, uint32_t rows, uint32_t cols, float p,
                                      float beta, float* delta) {
  if (rows == 0 || cols == 0 || beta == 0.0f) return 0.0;
  const uint32_t blocks = (cols + kColumnBlock - 1) / kColumnBlock;
  std::vector<double> partial(blocks, 0.0);
  const double pd = p, bd = beta;
  run_blocks(*pool_, blocks, size_t(rows) * cols, [&](size_t b) {
    const uint32_t lo = uint32_t(b) * kColumnBlock, hi = std::min(cols, lo + kColumnBlock);
    const uint32_t w = hi - lo;
    double acc[kColumnBlock];
    for (uint32_t j = 0; j < w; ++j) acc[j] = 0.0;
    for (uint32_t r = 0; r < rows; ++r) {
      const float* row = a + size_t(r) * cols + lo;
#pragma omp simd
      for (uint32_t j = 0; j < w; ++j) acc[j] += row[j];
    }
    float grad[kColumnBlock];
    double value = 0.0;
    for (uint32_t j = 0; j < w; ++j) {
      const double rho = math::sparseness_rho(acc[j], rows);
      value += math::kl_divergence(pd, rho);
      grad[j] = math::sparseness_gradient(pd, bd, rho);
    }
    partial[b] = value;
    if (!delta) return;
    for (uint32_t r = 0; r < rows; ++r) {
      float* row = delta + size_t(r) * cols + lo;
#pragma omp simd
      for (uint32_t j = 0; j < w; ++j) row[j] += grad[j];
    }
  });
  double total = 0.0;
  for (double v : partial) total += v;
  return double(rows) * bd * total;
}

void CpuBackend::sparseness_penalty_accumulate(const float* a, uint32_t rows, uint32_t cols,
                                               float p, float beta, float* delta, double* sum) {
  math::add_scaled(sum, 1.0, sparseness_penalty(a, rows, cols, p, beta, delta));
}

}  // namespace nn
