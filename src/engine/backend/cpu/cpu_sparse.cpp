// CpuBackend sparse-input kernels: the forward product of a CSR minibatch with W[in][out] and the
// weight gradient X^T * delta, both without densifying X.
//
// Determinism: every output element receives its terms in (row, entry) order, whatever the
// partitioning, so results do not depend on the thread count. The gradient is partitioned by
// output column (rows of the batch share input indices, so partitioning by batch row would
// race); when there are too few columns to share, by ranges of input index instead.
#include <omp.h>

#include <algorithm>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "core/error.h"

namespace nn {
namespace {

constexpr size_t kParallelMin = size_t(1) << 14;

void check_indices(const SparseView& x, const char* kernel) {
  if (x.rows == 0) return;
  const uint32_t nnz = x.row_ptr[x.rows];
  for (uint32_t e = 0; e < nnz; ++e) {
    if (x.index[e] >= x.cols) {
      const uint32_t r =
          uint32_t(std::upper_bound(x.row_ptr, x.row_ptr + x.rows + 1, e) - x.row_ptr) - 1;
      throw DataError(std::string(kernel) + ": sparse batch row " + std::to_string(r) +
                      ": index " + std::to_string(x.index[e]) + " is outside the " +
                      std::to_string(x.cols) + " inputs");
    }
  }
}

// g[idx][lo..hi) += s * delta[r][lo..hi) for every entry of every row, in order, restricted to
// indices in [idx_lo, idx_hi).
void gradient_range(const SparseView& x, const float* delta, uint32_t n_out, float alpha,
                    float* g, uint32_t lo, uint32_t hi, uint32_t idx_lo, uint32_t idx_hi) {
  for (uint32_t r = 0; r < x.rows; ++r) {
    const float wr = x.row_weight ? x.row_weight[r] : 1.0f;
    const float* dr = delta + size_t(r) * n_out;
    for (uint32_t e = x.row_ptr[r]; e < x.row_ptr[r + 1]; ++e) {
      const uint32_t idx = x.index[e];
      if (idx < idx_lo || idx >= idx_hi) continue;
      const float s = alpha * (x.value ? x.value[e] : 1.0f) * wr;
      float* gr = g + size_t(idx) * n_out;
#pragma omp simd
      for (uint32_t o = lo; o < hi; ++o) gr[o] += s * dr[o];
    }
  }
}

}  // namespace

void CpuBackend::sparse_matmul(const SparseView& x, const float* w, uint32_t n_out, float* z) {
  if (x.rows == 0 || n_out == 0) return;
  check_indices(x, "sparse_matmul");
  const size_t work = size_t(x.row_ptr[x.rows]) * n_out;
#pragma omp parallel for num_threads(threads_) schedule(static) if (work >= kParallelMin)
  for (uint32_t r = 0; r < x.rows; ++r) {
    const float wr = x.row_weight ? x.row_weight[r] : 1.0f;
    float* zr = z + size_t(r) * n_out;
    for (uint32_t e = x.row_ptr[r]; e < x.row_ptr[r + 1]; ++e) {
      const float s = (x.value ? x.value[e] : 1.0f) * wr;
      const float* wrow = w + size_t(x.index[e]) * n_out;
#pragma omp simd
      for (uint32_t o = 0; o < n_out; ++o) zr[o] += s * wrow[o];
    }
  }
}

void CpuBackend::sparse_weight_gradient(const SparseView& x, const float* delta, uint32_t n_out,
                                        float alpha, float* g) {
  if (x.rows == 0 || n_out == 0) return;
  check_indices(x, "sparse_weight_gradient");
  const size_t work = size_t(x.row_ptr[x.rows]) * n_out;
  const int threads = work >= kParallelMin ? threads_ : 1;
  if (threads == 1) {
    gradient_range(x, delta, n_out, alpha, g, 0, n_out, 0, x.cols);
    return;
  }
  // Column blocks are multiples of 16 floats (one cache line), so threads never share a line.
  const bool by_column = n_out >= 64u * uint32_t(threads);
#pragma omp parallel num_threads(threads)
  {
    const uint32_t t = uint32_t(omp_get_thread_num()), nt = uint32_t(omp_get_num_threads());
    if (by_column) {
      const uint32_t chunk = ((n_out + nt - 1) / nt + 15) / 16 * 16;
      const uint32_t lo = std::min(n_out, t * chunk), hi = std::min(n_out, lo + chunk);
      if (lo < hi) gradient_range(x, delta, n_out, alpha, g, lo, hi, 0, x.cols);
    } else {
      const uint32_t chunk = (x.cols + nt - 1) / nt;
      const uint32_t lo = std::min(x.cols, t * chunk), hi = std::min(x.cols, lo + chunk);
      if (lo < hi) gradient_range(x, delta, n_out, alpha, g, 0, n_out, lo, hi);
    }
  }
}

}  // namespace nn
