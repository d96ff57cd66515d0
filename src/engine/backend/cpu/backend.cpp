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
#include <sys/mman.h>

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
namespace {

constexpr size_t kHugePage = size_t(2) << 20;
// Arrays from this size on go on huge pages (at most a page's rounding each: under 25%).
constexpr size_t kHugePageMin = size_t(8) << 20;

}  // namespace

CpuBackend::CpuBackend(int threads)
    : threads_(threads > 0 ? threads : available_cpus()),
      pool_(std::make_unique<cpu::ThreadPool>(threads_)) {
  // OpenBLAS only ever runs single-threaded, inside our pool's threads (cpu/dense.cpp says why).
  openblas_set_num_threads(1);
  // Rows unpadded unless asked (tests and rehearsals of the padded layout run on the CPU).
  set_row_alignment(row_alignment_from_env("NN_CPU_ROW_ALIGN", 1));
}

CpuBackend::~CpuBackend() = default;

void* CpuBackend::allocate(size_t bytes) {
  // aligned_alloc wants a size that is a multiple of the alignment; 64 bytes is a cache line
  // and one AVX-512 vector. Large arrays are placed on 2 MiB boundaries and asked for huge pages
  // (kernels with transparent huge pages in "madvise" mode, Debian's default, give them only
  // when asked): rows of a wide matrix picked at random (a sparse input's weights, a sampled
  // layer's columns, their optimizer state) each cost a TLB miss on 4 KiB pages. Measured on
  // the 200,000-item sampled step (RMSProp, 2 threads): its rows' update 1.9 -> 1.4-1.7 ms.
  const bool huge = bytes >= kHugePageMin;
  const size_t align = huge ? kHugePage : 64;
  const size_t rounded = std::max<size_t>(align, (bytes + align - 1) / align * align);
  void* p = std::aligned_alloc(align, rounded);
  if (p && huge) madvise(p, rounded, MADV_HUGEPAGE);  // advice: failure changes nothing
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
