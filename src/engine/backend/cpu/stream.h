// Helpers for the CPU backend's streaming loops: static per-thread ranges and software prefetch.
//
// Why prefetch: on the development VM a vectorised sigmoid over a 28 MB buffer ran at 2.0 ns per
// element, against 0.45 ns in cache and 0.2 ns for a plain ReLU over the same buffer: the
// hardware prefetcher does not run far enough ahead of a compute-heavy loop. Prefetching 4 KB
// ahead brought it to 0.53 ns. Loops are therefore cut into chunks of a few cache lines, each
// preceded by prefetches of the chunk kAhead elements further on.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace nn::cpu {

constexpr size_t kLineFloats = 16;  // one 64-byte cache line
constexpr size_t kChunk = 64;       // elements per inner (vectorised) loop
constexpr size_t kAhead = 1024;     // prefetch distance in elements (4 KB)

// Prefetches the cache lines of p[i + kAhead, i + kAhead + kChunk). Integer arithmetic on the
// address: the prefetched range may lie past the end of the array, which prefetch tolerates.
template <int kWrite = 0>
inline void prefetch_ahead(const void* p, size_t i, size_t elem_size = sizeof(float)) {
  const uintptr_t base = reinterpret_cast<uintptr_t>(p) + (i + kAhead) * elem_size;
  for (size_t k = 0; k < kChunk * elem_size; k += 64)
    __builtin_prefetch(reinterpret_cast<const void*>(base + k), kWrite);
}

// Part `t` of `parts` contiguous parts of [0, n), boundaries on cache lines (no false sharing).
inline std::pair<size_t, size_t> static_part(size_t n, int t, int parts) {
  const size_t lines = (n + kLineFloats - 1) / kLineFloats;
  const size_t per = (lines + size_t(parts) - 1) / size_t(parts);
  const size_t lo = std::min(n, size_t(t) * per * kLineFloats);
  const size_t hi = std::min(n, lo + per * kLineFloats);
  return {lo, hi};
}

// Runs f(lo, hi) on consecutive chunks of [0, n); threads take static contiguous parts.
// Parallel only when n >= parallel_min. f is copied per thread, so its captured values cannot
// alias the arrays it writes (GCC needs that to vectorise).
template <typename F>
void for_chunks(int threads, size_t n, size_t parallel_min, const F& f) {
#pragma omp parallel num_threads(threads) if (n >= parallel_min)
  {
    const F local = f;
    const auto [lo, hi] = static_part(n, omp_get_thread_num(), omp_get_num_threads());
    for (size_t b = lo; b < hi; b += kChunk) local(b, std::min(hi, b + kChunk));
  }
}

}  // namespace nn::cpu
