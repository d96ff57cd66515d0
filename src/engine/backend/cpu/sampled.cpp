// CpuBackend kernels of sampled output training (scale by column or by row, gather and scatter
// of rows, transpose); the element arithmetic is backend/math/sampled_math.h, which the CUDA
// kernels run too. Each element is written once from its own inputs, so the result does not
// depend on threads.
#include <algorithm>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/math/sampled_math.h"

namespace nn {
namespace {

// Below this many elements handing work to other threads costs more than it saves.
constexpr size_t kParallelMin = size_t(1) << 15;
// The square tiles transpose() moves: a tile's source rows and destination rows each stay in
// cache while it is copied.
constexpr uint32_t kTile = 32;

// Copies elements [lo, hi) of the compact [count][width] matrix from or to the full one, a
// contiguous run of each row at a time (the offsets of math::sampled_row_offset).
template <bool kGather>
void copy_row_runs(const float* src, float* dst, uint32_t width, const uint32_t* index, size_t lo,
                   size_t hi) {
  for (size_t e = lo; e < hi;) {
    const size_t c = e % width, run = std::min(hi - e, size_t(width) - c);
    const size_t full = math::sampled_row_offset(e, width, index);
    if (kGather)
      std::memcpy(dst + e, src + full, run * sizeof(float));
    else
      std::memcpy(dst + full, src + e, run * sizeof(float));
    e += run;
  }
}

}  // namespace

void CpuBackend::scale_columns(float* x, uint32_t rows, uint32_t cols, const float* w) {
  if (cols == 0) return;
  cpu::for_chunks(*pool_, size_t(rows) * cols, kParallelMin, [=](size_t lo, size_t hi) {
    for (size_t e = lo; e < hi; ++e) x[e] = math::sampled_scaled(x[e], e, cols, w);
  });
}

void CpuBackend::scale_rows(float* x, uint32_t rows, uint32_t cols, const float* w) {
  if (cols == 0) return;
  cpu::for_chunks(*pool_, size_t(rows) * cols, kParallelMin, [=](size_t lo, size_t hi) {
    for (size_t e = lo; e < hi; ++e) x[e] = math::sampled_row_scaled(x[e], e, cols, w);
  });
}

void CpuBackend::gather_rows(const float* src, uint32_t width, const uint32_t* index,
                             uint32_t count, float* dst) {
  const size_t n = size_t(width) * count;
  if (n == 0) return;
  cpu::parallel_ranges(*pool_, n, kParallelMin, [=](size_t lo, size_t hi) {
    copy_row_runs<true>(src, dst, width, index, lo, hi);
  });
}

void CpuBackend::scatter_rows(const float* src, uint32_t width, const uint32_t* index,
                              uint32_t count, float* dst) {
  const size_t n = size_t(width) * count;
  if (n == 0) return;
  cpu::parallel_ranges(*pool_, n, kParallelMin, [=](size_t lo, size_t hi) {
    copy_row_runs<false>(src, dst, width, index, lo, hi);
  });
}

void CpuBackend::transpose(const float* src, uint32_t rows, uint32_t cols, float* dst) {
  if (rows == 0 || cols == 0) return;
  // Bands of kTile source columns (destination rows), each band's tiles in turn.
  const size_t bands = (size_t(cols) + kTile - 1) / kTile;
  const size_t grain = std::max<size_t>(1, kParallelMin / (size_t(kTile) * rows));
  cpu::parallel_ranges(*pool_, bands, grain, [=](size_t lo, size_t hi) {
    for (size_t band = lo; band < hi; ++band) {
      const size_t c0 = band * kTile, c1 = std::min<size_t>(cols, c0 + kTile);
      for (size_t r0 = 0; r0 < rows; r0 += kTile) {
        const size_t r1 = std::min<size_t>(rows, r0 + kTile);
        for (size_t c = c0; c < c1; ++c)
          for (size_t r = r0; r < r1; ++r) dst[c * rows + r] = src[r * cols + c];
      }
    }
  });
}

}  // namespace nn
