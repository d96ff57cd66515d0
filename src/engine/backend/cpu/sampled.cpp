// CpuBackend column kernels of sampled output training (gather, scatter, scale by column); the
// element arithmetic is backend/math/sampled_math.h, which the CUDA kernels run too. Each
// element is written once from its own inputs, so the result does not depend on threads.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/math/sampled_math.h"

namespace nn {
namespace {

// Below this many elements handing work to other threads costs more than it saves.
constexpr size_t kParallelMin = size_t(1) << 15;

}  // namespace

void CpuBackend::gather_columns(const float* src, uint32_t rows, uint32_t cols,
                                const uint32_t* index, uint32_t count, float* dst) {
  if (count == 0) return;
  cpu::for_chunks(*pool_, size_t(rows) * count, kParallelMin, [=](size_t lo, size_t hi) {
    for (size_t e = lo; e < hi; ++e) dst[e] = src[math::sampled_full_offset(e, count, cols, index)];
  });
}

void CpuBackend::scatter_columns(const float* src, uint32_t rows, uint32_t count,
                                 const uint32_t* index, uint32_t cols, float* dst) {
  if (count == 0) return;
  cpu::for_chunks(*pool_, size_t(rows) * count, kParallelMin, [=](size_t lo, size_t hi) {
    for (size_t e = lo; e < hi; ++e) dst[math::sampled_full_offset(e, count, cols, index)] = src[e];
  });
}

void CpuBackend::scale_columns(float* x, uint32_t rows, uint32_t cols, const float* w) {
  if (cols == 0) return;
  cpu::for_chunks(*pool_, size_t(rows) * cols, kParallelMin, [=](size_t lo, size_t hi) {
    for (size_t e = lo; e < hi; ++e) x[e] = math::sampled_scaled(x[e], e, cols, w);
  });
}

}  // namespace nn
