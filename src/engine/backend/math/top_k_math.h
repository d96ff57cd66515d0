// Per-element arithmetic of the filtered top-K (Backend::top_k_filtered): the score of one column
// after the row's multipliers, whether the column is a candidate at all (not excluded, not NaN),
// and its 64-bit sort key. __host__ __device__ under nvcc: the CUDA kernel (cuda/top_k.cu) runs
// them per element with binary searches in the row's sorted filter lists; the CPU backend walks
// the lists in column order instead (cpu/top_k.cpp) and uses scaled_score and top_k_entry_key
// (elementwise_math.h) for the scaling and the order. Host tests run the kernel's index space.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/math/elementwise_math.h"
#include "backend/math/fast_math.h"

namespace nn::math {

// The first position in list[lo, hi) (ascending) whose value is >= c, or hi.
NN_FORCE_INLINE uint32_t lower_bound_in(const uint32_t* list, uint32_t lo, uint32_t hi,
                                        uint32_t c) {
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (list[mid] < c)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// One row's filters as ranges of the TopKFilter arrays ([lo, hi) of each list; empty when the
// part is absent).
struct RowFilterRange {
  uint32_t ex_lo = 0, ex_hi = 0, sc_lo = 0, sc_hi = 0;
};

NN_FORCE_INLINE RowFilterRange row_filter_range(const uint32_t* exclude_ptr,
                                                const uint32_t* scale_ptr, uint32_t r) {
  RowFilterRange f;
  if (exclude_ptr) {
    f.ex_lo = exclude_ptr[r];
    f.ex_hi = exclude_ptr[r + 1];
  }
  if (scale_ptr) {
    f.sc_lo = scale_ptr[r];
    f.sc_hi = scale_ptr[r + 1];
  }
  return f;
}

// A score times one of its multipliers (a column listed n times is multiplied n times, in list
// order).
NN_FORCE_INLINE float scaled_score(float x, float factor) {
  return x * factor;
}

// Column c's score x after the row's filters: false when it is excluded or NaN (after scaling),
// else true with *out the score multiplied by each of its factors in list order.
NN_FORCE_INLINE bool filtered_score(float x, uint32_t c, const RowFilterRange& f,
                                    const uint32_t* exclude_index, const uint32_t* scale_index,
                                    const float* scale_value, float* out) {
  if (f.ex_lo < f.ex_hi) {
    const uint32_t e = lower_bound_in(exclude_index, f.ex_lo, f.ex_hi, c);
    if (e < f.ex_hi && exclude_index[e] == c) return false;
  }
  if (f.sc_lo < f.sc_hi)
    for (uint32_t j = lower_bound_in(scale_index, f.sc_lo, f.sc_hi, c);
         j < f.sc_hi && scale_index[j] == c; ++j)
      x = scaled_score(x, scale_value[j]);
  if (x != x) return false;
  *out = x;
  return true;
}

// The 64-bit key of a candidate: top_k_key of its score, then the complement of its column, so a
// descending sort gives the top-K order (larger first, ties to the lower column). A column that
// is no candidate gets 0, below every candidate's key (top_k_key is 0 only for NaN, and NaN
// scores are no candidates), so such columns sort last and read back as padding.
NN_FORCE_INLINE unsigned long long filtered_key(bool candidate, float score, uint32_t c) {
  return candidate ? top_k_entry_key(score, c) : 0ull;
}

// Column c of row r's key for top_k_filtered, from the scores x ([rows][cols]) and the filter
// lists (TopKFilter's arrays; a null ptr array means that part is absent): what the CUDA
// kernels compute for every element of every pass.
NN_FORCE_INLINE unsigned long long filtered_row_key(const float* x, uint32_t cols, uint32_t r,
                                                    uint32_t c, const uint32_t* exclude_ptr,
                                                    const uint32_t* exclude_index,
                                                    const uint32_t* scale_ptr,
                                                    const uint32_t* scale_index,
                                                    const float* scale_value) {
  const RowFilterRange range = row_filter_range(exclude_ptr, scale_ptr, r);
  float v = 0.0f;
  const bool candidate = filtered_score(x[size_t(r) * cols + c], c, range, exclude_index,
                                        scale_index, scale_value, &v);
  return filtered_key(candidate, v, c);
}

// True when a sorted key is a candidate's (not padding).
NN_FORCE_INLINE bool is_candidate_key(unsigned long long key) {
  return (key >> 32) != 0ull;
}

}  // namespace nn::math
