// CpuBackend sparse-input kernels: the forward product of a CSR minibatch with W[in][out] and the
// weight gradient X^T * delta, both without densifying X.
//
// Determinism: every output element receives its terms in (row, entry) order, whatever the
// partitioning, so results do not depend on the thread count. The gradient is partitioned by
// output column (rows of the batch share input indices, so partitioning by batch row would
// race); when there are too few columns to share, by ranges of input index instead. The gradient
// of a batch indexed for row-sparse training goes item by item (below), each item's rows to one
// task, in the same order: the same bits. The entries' factors are backend/math/sparse_math.h's,
// as in the CUDA kernels (cuda/sparse.cu).
#include <algorithm>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/sparse_math.h"
#include "core/error.h"

namespace nn {
namespace {

constexpr size_t kParallelMin = size_t(1) << 14;
// Weight rows are visited in data order, which the hardware prefetcher cannot predict: the row
// of the entry kPrefetchEntries ahead is prefetched while the current one is processed.
constexpr uint32_t kPrefetchEntries = 2;

template <int kWrite>
inline void prefetch_span(const float* p, uint32_t lo, uint32_t hi) {
  for (uint32_t o = lo; o < hi; o += 16) __builtin_prefetch(p + o, kWrite);
}

void check_indices(const SparseView& x, const char* kernel) {
  if (x.rows == 0) return;
  const uint32_t nnz = x.row_ptr[x.rows];
  for (uint32_t e = 0; e < nnz; ++e) {
    if (x.index[e] >= x.cols) {
      const uint32_t r =
          uint32_t(std::upper_bound(x.row_ptr, x.row_ptr + x.rows + 1, e) - x.row_ptr) - 1;
      throw DataError(std::string(kernel) + ": sparse batch row " + std::to_string(r) + ": index " +
                      std::to_string(x.index[e]) + " is outside the " + std::to_string(x.cols) +
                      " inputs");
    }
  }
}

// g[idx][lo..hi) += s * delta[r][lo..hi) for every entry of every row, in order, restricted to
// indices in [idx_lo, idx_hi).
void gradient_range(const SparseView& x, const float* delta, uint32_t n_out, float alpha, float* g,
                    uint32_t lo, uint32_t hi, uint32_t idx_lo, uint32_t idx_hi) {
  const uint32_t nnz = x.row_ptr[x.rows];
  for (uint32_t r = 0; r < x.rows; ++r) {
    const float wr = math::example_weight(x.row_weight, r);
    const float* dr = delta + size_t(r) * n_out;
    for (uint32_t e = x.row_ptr[r]; e < x.row_ptr[r + 1]; ++e) {
      if (e + kPrefetchEntries < nnz) {
        const uint32_t ahead = x.index[e + kPrefetchEntries];
        if (ahead >= idx_lo && ahead < idx_hi) prefetch_span<1>(g + size_t(ahead) * n_out, lo, hi);
      }
      const uint32_t idx = x.index[e];
      if (idx < idx_lo || idx >= idx_hi) continue;
      const float s = math::sparse_gradient_scale(alpha, x.value, e, wr);
      float* gr = g + size_t(idx) * n_out;
#pragma omp simd
      for (uint32_t o = lo; o < hi; ++o) gr[o] += s * dr[o];
    }
  }
}

// The item-major weight gradient, for batches indexed on the loader thread for row-sparse
// training (SparseView::slot_ptr: the entries grouped by item, in entry order within an item).
// gradient_range reads and writes a gradient row per entry, each a miss in the caches (a 256 x
// 144 batch into 1,024 units: 151 MB each way for 44 MB of distinct rows); grouped by item, each
// row of G is read and written once, and what is read per entry is the batch's delta row, which
// stays in L2. The forward product stays row-major: grouped, it gained 15% on uniformly drawn
// items but nothing on the benchmark's popularity-skewed ones, whose popular rows stay cached.
bool grouped(const SparseView& x) {
  return x.slot_ptr && x.slot_entry && x.slot_row && x.touched_count > 0;
}

// G[item] += s * delta[r] for every entry, for the items of groups [t_lo, t_hi): each element
// receives its terms in entry order, as gradient_range adds them.
void grouped_gradient_range(const SparseView& x, const float* delta, uint32_t n_out, float alpha,
                            float* g, size_t t_lo, size_t t_hi) {
  for (size_t t = t_lo; t < t_hi; ++t) {
    const uint32_t q0 = x.slot_ptr[t], q1 = x.slot_ptr[t + 1];
    if (q0 == q1) continue;
    if (t + kPrefetchEntries < t_hi &&
        x.slot_ptr[t + kPrefetchEntries] < x.slot_ptr[t + kPrefetchEntries + 1]) {
      const uint32_t ahead = x.index[x.slot_entry[x.slot_ptr[t + kPrefetchEntries]]];
      prefetch_span<1>(g + size_t(ahead) * n_out, 0, n_out);
    }
    float* gr = g + size_t(x.index[x.slot_entry[q0]]) * n_out;
    for (uint32_t q = q0; q < q1; ++q) {
      const uint32_t e = x.slot_entry[q], r = x.slot_row[q];
      const float s =
          math::sparse_gradient_scale(alpha, x.value, e, math::example_weight(x.row_weight, r));
      const float* dr = delta + size_t(r) * n_out;
#pragma omp simd
      for (uint32_t o = 0; o < n_out; ++o) gr[o] += s * dr[o];
    }
  }
}

}  // namespace

void CpuBackend::sparse_matmul(const SparseView& x, const float* w, uint32_t n_out, float* z) {
  if (x.rows == 0 || n_out == 0) return;
  check_indices(x, "sparse_matmul");
  auto range = [&](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      const float wr = math::example_weight(x.row_weight, r);
      float* zr = z + r * n_out;
      const uint32_t end = x.row_ptr[r + 1];
      for (uint32_t e = x.row_ptr[r]; e < end; ++e) {
        if (e + kPrefetchEntries < end)
          prefetch_span<0>(w + size_t(x.index[e + kPrefetchEntries]) * n_out, 0, n_out);
        const float s = math::sparse_input_scale(x.value, e, wr);
        const float* wrow = w + size_t(x.index[e]) * n_out;
#pragma omp simd
        for (uint32_t o = 0; o < n_out; ++o) zr[o] += s * wrow[o];
      }
    }
  };
  const size_t work = size_t(x.row_ptr[x.rows]) * n_out;
  if (work >= kParallelMin)
    cpu::parallel_ranges(*pool_, x.rows, 1, range);
  else
    range(0, x.rows);
}

void CpuBackend::sparse_weight_gradient(const SparseView& x, const float* delta, uint32_t n_out,
                                        float alpha, float* g) {
  if (x.rows == 0 || n_out == 0) return;
  check_indices(x, "sparse_weight_gradient");
  const size_t work = size_t(x.row_ptr[x.rows]) * n_out;
  if (grouped(x)) {  // items split between tasks: each row of G is written by one
    auto range = [&](size_t lo, size_t hi) {
      grouped_gradient_range(x, delta, n_out, alpha, g, lo, hi);
    };
    if (work < kParallelMin)
      range(0, x.touched_count);
    else
      cpu::parallel_ranges(*pool_, x.touched_count, 16, range);
    return;
  }
  if (work < kParallelMin || threads_ == 1) {
    gradient_range(x, delta, n_out, alpha, g, 0, n_out, 0, x.cols);
    return;
  }
  // Column blocks are multiples of 16 floats (one cache line), so tasks never share a line.
  const uint32_t parts = uint32_t(threads_) * 2;
  const bool by_column = n_out >= 32u * parts;
  if (by_column) {
    const uint32_t chunk = ((n_out + parts - 1) / parts + 15) / 16 * 16;
    pool_->run(parts, [&](size_t p) {
      const uint32_t lo = std::min(n_out, uint32_t(p) * chunk), hi = std::min(n_out, lo + chunk);
      if (lo < hi) gradient_range(x, delta, n_out, alpha, g, lo, hi, 0, x.cols);
    });
  } else {
    const uint32_t chunk = (x.cols + parts - 1) / parts;
    pool_->run(parts, [&](size_t p) {
      const uint32_t lo = std::min(x.cols, uint32_t(p) * chunk), hi = std::min(x.cols, lo + chunk);
      if (lo < hi) gradient_range(x, delta, n_out, alpha, g, 0, n_out, lo, hi);
    });
  }
}

}  // namespace nn
