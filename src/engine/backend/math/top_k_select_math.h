// The CUDA top-K's selection (cuda/top_k.cu) as __host__ __device__ functions: a per-row radix
// select on the 64-bit keys of top_k_math.h / elementwise_math.h, so that only the K selected
// keys of a row are ever stored and sorted (scratch O(rows x K)) instead of every column's key.
// The kernels call these per element and per row; the host test
// (tests/unit/backend/kernel_math_top_k_test.cpp) runs the same functions over the same index
// space and compares with the CPU backend's top_k / top_k_filtered bit for bit.
//
// Keys: every column of a row has a distinct nonzero key (top_k_entry_key: the value's order
// bits, then the complement of the column), except the columns top_k_filtered leaves out
// (excluded, or NaN after scaling), whose key is 0: key 0 means "not an entry" and is never
// selected. The K largest keys in descending order are the top-K order exactly (larger value
// first, ties to the lower column, NaN last for top_k).
//
// Radix select, 8 bits a pass from the top, 8 passes at most: the state of a row is the key
// prefix fixed so far and how many keys still have to be taken among those with that prefix.
// A pass counts, per row, the digit (the next 8 bits) of every entry whose key has the prefix
// (a histogram, integer counts: no order dependence); select_step then walks the digits from
// the largest, fixing the digit in which the K-th largest key lies. The row is done when every
// key with the prefix is to be taken (the count of the digit equals what is still needed, or
// the row has fewer entries than K); then the threshold is the prefix with all lower bits 0, and
// the selection is every nonzero key >= threshold: exactly min(K, entries) keys.
#pragma once

#include <cstdint>

#include "backend/math/fast_math.h"

namespace nn::math {

constexpr int kSelectDigitBits = 8;
constexpr uint32_t kSelectBins = 1u << kSelectDigitBits;
constexpr int kSelectPasses = 64 / kSelectDigitBits;

// One row's selection state (16 bytes a row in device memory).
struct RadixSelect {
  unsigned long long prefix = 0;  // the key bits fixed so far (lower bits 0)
  uint32_t need = 0;              // keys still to take among those with the prefix
  uint32_t done = 0;              // 1: every nonzero key >= prefix is selected
};

// A row of `valid` columns from which keep = min(K, valid) are wanted: done at once when every
// column is wanted.
NN_FORCE_INLINE RadixSelect select_start(uint32_t keep, uint32_t valid) {
  RadixSelect s;
  s.need = keep;
  s.done = keep >= valid ? 1u : 0u;
  return s;
}

// The lowest bit of pass p's digit (pass 0 takes the top 8 bits).
NN_FORCE_INLINE int select_shift(int pass) {
  return 64 - kSelectDigitBits * (pass + 1);
}

// Whether `key` is counted in the pass at `shift`: an entry (nonzero) whose bits above the digit
// are the prefix's.
NN_FORCE_INLINE bool select_counts(unsigned long long key, const RadixSelect& s, int shift) {
  const int above = shift + kSelectDigitBits;
  return key != 0ull && (above >= 64 || (key >> above) == (s.prefix >> above));
}

NN_FORCE_INLINE uint32_t select_digit(unsigned long long key, int shift) {
  return uint32_t(key >> shift) & (kSelectBins - 1);
}

// After the pass at `shift`, with hist[d] = the number of counted keys with digit d: fixes the
// digit holding the need-th largest key, or finishes the row.
NN_FORCE_INLINE void select_step(RadixSelect& s, const uint32_t* hist, int shift) {
  if (s.done) return;
  uint32_t above = 0;  // counted keys with a larger digit
  for (int d = int(kSelectBins) - 1; d >= 0; --d) {
    const uint32_t h = hist[d];
    if (above + h >= s.need) {
      s.prefix |= static_cast<unsigned long long>(d) << shift;
      s.need -= above;
      // Every key with this digit is wanted: nothing below it needs deciding. After the last
      // pass (shift 0) h is 1 and need 1, so every row ends here at the latest.
      if (h == s.need) s.done = 1;
      return;
    }
    above += h;
  }
  // Fewer entries than still needed (a filtered row short of K): take every one.
  s.done = 1;
}

// Whether `key` is among the selected (once the row is done).
NN_FORCE_INLINE bool select_takes(unsigned long long key, const RadixSelect& s) {
  return key != 0ull && key >= s.prefix;
}

// The column of a selected key.
NN_FORCE_INLINE uint32_t key_column(unsigned long long key) {
  return 0xffffffffu - uint32_t(key & 0xffffffffull);
}

// Blocks per row of the select kernels (a block of kSelectThreads threads takes columns
// b * kSelectThreads + t, then every blocks * kSelectThreads further): enough blocks in all to
// fill a GPU (about kSelectTargetBlocks), each with at least 4 columns a thread.
constexpr uint32_t kSelectThreads = 256;
constexpr uint32_t kSelectTargetBlocks = 1024;

NN_FORCE_INLINE uint32_t select_blocks_per_row(uint32_t rows, uint32_t valid) {
  const uint32_t by_width = (valid + 4 * kSelectThreads - 1) / (4 * kSelectThreads);
  const uint32_t by_grid = rows ? (kSelectTargetBlocks + rows - 1) / rows : 1;
  const uint32_t b = by_width < by_grid ? by_width : by_grid;
  return b < 1 ? 1 : b;
}

}  // namespace nn::math
