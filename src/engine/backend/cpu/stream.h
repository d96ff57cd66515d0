// Helpers for the CPU backend's streaming loops: chunked parallel ranges and software prefetch.
//
// Why prefetch: on the development VM a vectorised sigmoid over a 28 MB buffer ran at 2.0 ns per
// element, against 0.45 ns in cache and 0.2 ns for a plain ReLU over the same buffer: the
// hardware prefetcher does not run far enough ahead of a compute-heavy loop. Prefetching 4 KB
// ahead brought it to 0.53 ns. Loops are therefore cut into chunks of a few cache lines, each
// preceded by prefetches of the chunk kAhead elements further on.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "backend/cpu/thread_pool.h"

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

// Largest value of x[0, n), ignoring NaN (-inf when there is none). Written with independent
// lanes because GCC does not vectorise a max reduction under strict IEEE semantics.
inline float max_ignoring_nan(const float* x, size_t n, float init = -INFINITY) {
  constexpr size_t kLanes = 16;
  float lanes[kLanes];
  for (size_t k = 0; k < kLanes; ++k) lanes[k] = init;
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (size_t k = 0; k < kLanes; ++k) lanes[k] = x[i + k] > lanes[k] ? x[i + k] : lanes[k];
  }
  float m = init;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (size_t k = 0; k < kLanes; ++k) m = lanes[k] > m ? lanes[k] : m;
  return m;
}

// Smallest range of elements worth handing to another thread.
constexpr size_t kMinTaskFloats = 8192;

// Runs f(lo, hi) on consecutive chunks of [0, n), spread over the pool in contiguous ranges
// when n >= parallel_min. Each range uses its own copy of f, so f's captured values provably do
// not alias the arrays it writes (GCC needs that to vectorise).
template <typename F>
void for_chunks(ThreadPool& pool, size_t n, size_t parallel_min, const F& f) {
  auto body = [&f](size_t lo, size_t hi) {
    const F local = f;
    for (size_t b = lo; b < hi; b += kChunk) local(b, std::min(hi, b + kChunk));
  };
  if (n < parallel_min)
    body(0, n);
  else
    parallel_ranges(pool, n, kMinTaskFloats, body, kLineFloats);
}

}  // namespace nn::cpu
