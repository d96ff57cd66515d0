// CpuBackend dropout: inverted dropout with a counter-based mask (core/random.h), so a mask
// depends only on (seed, stream, element) and the backward pass re-derives the forward's. The
// per-element rule is math::dropout_unit, which the CUDA twin (cuda/dropout.cu) runs too, so the
// two backends drop the same elements.
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/elementwise_math.h"

namespace nn {
namespace {

// Below this many elements handing work to other threads costs more than it saves.
constexpr size_t kParallelMin = size_t(1) << 15;

}  // namespace

void CpuBackend::apply_dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream) {
  if (!(p > 0.0f)) return;  // nothing is dropped and kept values are scaled by 1
  const float keep = 1.0f - p;
  cpu::for_chunks(*pool_, n, kParallelMin, [=](size_t lo, size_t hi) {
#pragma omp simd
    for (size_t i = lo; i < hi; ++i) x[i] = math::dropout_unit(x[i], i, p, keep, seed, stream);
  });
}

void CpuBackend::dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream) {
  apply_dropout(x, n, p, seed, stream);
}

void CpuBackend::dropout_backward(float* delta, size_t n, float p, uint64_t seed, uint64_t stream) {
  apply_dropout(delta, n, p, seed, stream);
}

}  // namespace nn
