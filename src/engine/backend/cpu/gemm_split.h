// How the CPU backend spreads one dense product over its thread pool (cpu/dense.cpp for FP32,
// cpu/dense_bf16.cpp for BF16): C is cut into blocks along its longer side, each computed by a
// single-threaded library call on a pool thread.
#pragma once

#include <algorithm>
#include <cstddef>

#include "backend/cpu/thread_pool.h"

namespace nn::cpu {

// Below this many flops a product runs as one block on the calling thread: handing it to other
// threads would cost more than it saves.
constexpr double kGemmParallelFlops = 4e6;

// Calls part(by_columns, lo, hi) for blocks [lo, hi) of C's columns (by_columns, when n >= m) or
// rows, at most `threads` of them, each a multiple of `grain` but the last. Splitting C's columns
// repeats the packing of A (m x k) in every block and splitting its rows repeats B's (k x n), so
// the split follows the longer side. A small product (or one thread) is one call over the whole
// extent on the calling thread.
template <typename Part>
void split_product(ThreadPool& pool, int threads, int m, int n, int k, int grain,
                   const Part& part) {
  const bool by_columns = n >= m;
  const int extent = by_columns ? n : m;
  int parts = std::min(threads, extent / grain);
  if (2.0 * m * n * k < kGemmParallelFlops) parts = 1;
  if (parts <= 1) {
    part(by_columns, 0, extent);
    return;
  }
  const int chunk = ((extent + parts - 1) / parts + grain - 1) / grain * grain;
  pool.run(size_t(parts), [&](size_t p) {
    const int lo = std::min(extent, int(p) * chunk), hi = std::min(extent, lo + chunk);
    if (lo < hi) part(by_columns, lo, hi);
  });
}

}  // namespace nn::cpu
