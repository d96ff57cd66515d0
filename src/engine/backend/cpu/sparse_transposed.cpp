// CpuBackend sparse inputs through a transposed weight matrix w[n_out][x.cols] (a SharedWeights
// entry with Transposed: true whose input layer is sparse): the forward product and the weight
// gradient, without densifying X.
//
// Determinism: forward rows and gradient rows (output units) each belong to one task and
// receive their terms in (row, entry) order, so results do not depend on the thread count. The
// entries' factors are backend/math/sparse_math.h's, as in cuda/sparse_transposed.cu.
#include <algorithm>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/sparse_math.h"
#include "core/error.h"

namespace nn {
namespace {

constexpr size_t kParallelMin = size_t(1) << 14;

void check_transposed_indices(const SparseView& x, const char* kernel) {
  const uint32_t nnz = x.row_ptr[x.rows];
  for (uint32_t e = 0; e < nnz; ++e)
    if (x.index[e] >= x.cols)
      throw DataError(std::string(kernel) + ": sparse batch entry " + std::to_string(e) +
                      ": index " + std::to_string(x.index[e]) + " is outside the " +
                      std::to_string(x.cols) + " inputs");
}

}  // namespace

void CpuBackend::sparse_matmul_transposed(const SparseView& x, const float* w, uint32_t n_out,
                                          float* z) {
  if (x.rows == 0 || n_out == 0) return;
  check_transposed_indices(x, "sparse_matmul_transposed");
  auto range = [&](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) {
      const float wr = math::example_weight(x.row_weight, r);
      const uint32_t begin = x.row_ptr[r], end = x.row_ptr[r + 1];
      float* zr = z + r * n_out;
      // Each output unit gathers its weights at the row's indices: one pass over w's row o.
      for (uint32_t o = 0; o < n_out; ++o) {
        const float* wo = w + size_t(o) * x.cols;
        float acc = 0.0f;
        for (uint32_t e = begin; e < end; ++e)
          acc += math::sparse_input_scale(x.value, e, wr) * wo[x.index[e]];
        zr[o] += acc;
      }
    }
  };
  const size_t work = size_t(x.row_ptr[x.rows]) * n_out;
  if (work >= kParallelMin)
    cpu::parallel_ranges(*pool_, x.rows, 1, range);
  else
    range(0, x.rows);
}

void CpuBackend::sparse_weight_gradient_transposed(const SparseView& x, const float* delta,
                                                   uint32_t n_out, float alpha, float* g) {
  if (x.rows == 0 || n_out == 0) return;
  check_transposed_indices(x, "sparse_weight_gradient_transposed");
  // Output unit o owns row o of g: tasks split the output units.
  auto range = [&](size_t lo, size_t hi) {
    for (size_t o = lo; o < hi; ++o) {
      float* go = g + o * x.cols;
      for (uint32_t r = 0; r < x.rows; ++r) {
        const float d = delta[size_t(r) * n_out + o];
        if (d == 0.0f) continue;
        const float s =
            math::sparse_transposed_gradient_scale(alpha, math::example_weight(x.row_weight, r), d);
        for (uint32_t e = x.row_ptr[r]; e < x.row_ptr[r + 1]; ++e)
          go[x.index[e]] += s * math::entry_value(x.value, e);
      }
    }
  };
  const size_t work = size_t(x.row_ptr[x.rows]) * n_out;
  if (work >= kParallelMin)
    cpu::parallel_ranges(*pool_, n_out, 1, range);
  else
    range(0, n_out);
}

}  // namespace nn
