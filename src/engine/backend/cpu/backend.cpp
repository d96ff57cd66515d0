// CpuBackend: construction (the thread pool), host memory and transfers, and the training-loss
// fold. The kernel families live in files named as their CUDA twins (cpu/dense.cpp <->
// cuda/dense.cu, cpu/elementwise.cpp <-> cuda/elementwise.cu, ...; cpu_backend.h lists them).
//
// Threads: every parallel kernel runs on the backend's own pool (thread_pool.h), gemm included
// (cpu/dense.cpp says why OpenBLAS is held to one thread). OpenMP is used only for
// `#pragma omp simd`: its parallel regions end in a barrier that waits for every team thread,
// and on a loaded machine a worker that has not been scheduled yet stalled small kernels by
// milliseconds (column sums of 256 x 1024: 7.5 ms instead of 0.03 ms).
#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/loss_sums.h"
#include "core/allocation_context.h"
#include "core/cpu_count.h"
#include "core/error.h"
#include "core/memory_budget.h"

namespace nn {

CpuBackend::CpuBackend(int threads)
    : threads_(threads > 0 ? threads : available_cpus()),
      pool_(std::make_unique<cpu::ThreadPool>(threads_)) {
  // OpenBLAS only ever runs single-threaded, inside our pool's threads (cpu/dense.cpp says why).
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
                       (what.empty() ? std::string() : " for " + what) + " (memory budget " +
                       format_bytes(memory_budget()) + ")");
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

void CpuBackend::fold_loss_sums(double* sums, uint64_t batch) {
  math::fold_loss_sums(sums, batch);
}

}  // namespace nn
