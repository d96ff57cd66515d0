// Host emulation of the CUDA top-K (cuda/top_k.cu): the per-row radix select of
// backend/math/top_k_select_math.h over the kernels' index space (blocks of kSelectThreads
// threads, select_blocks_per_row blocks a row, columns strided as in the kernels), the collect,
// a descending sort of each row's selected keys (CUB's segmented sort on the GPU) and the
// gathers. Used by the HostKernelMath tests against the CPU backend's top_k / top_k_filtered.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "backend/kernel_params.h"
#include "backend/math/elementwise_math.h"
#include "backend/math/top_k_math.h"
#include "backend/math/top_k_select_math.h"

namespace nn::test {

struct SelectStats {
  uint64_t histogram_visits = 0;  // (row, column) visits over every pass
  int most_passes = 0;            // the most passes any row needed
  bool exact = true;              // every row collected exactly min(keep, entries) keys
};

// The selected keys of every row (rows x keep, sorted descending per row, 0 past a short row's
// entries), as select_rows computes them. key_of(r, c) is the kernels' key of (row, column).
inline std::vector<unsigned long long> emulate_select_rows(
    const std::function<unsigned long long(uint32_t, uint32_t)>& key_of, uint32_t rows,
    uint32_t valid, uint32_t keep, SelectStats* stats = nullptr) {
  const uint32_t threads = math::kSelectThreads, bins = math::kSelectBins;
  const uint32_t per_row = math::select_blocks_per_row(rows, valid);
  std::vector<math::RadixSelect> state(rows, math::select_start(keep, valid));
  std::vector<uint32_t> hist(size_t(rows) * bins, 0);
  // Visits the columns of row r as block b's thread t does, for every (b, t).
  auto for_columns = [&](uint32_t r, const std::function<void(uint32_t)>& visit) {
    (void)r;
    for (uint32_t b = 0; b < per_row; ++b)
      for (uint32_t t = 0; t < threads; ++t)
        for (uint64_t c = uint64_t(b) * threads + t; c < valid; c += uint64_t(per_row) * threads)
          visit(uint32_t(c));
  };
  if (keep < valid)
    for (int pass = 0; pass < math::kSelectPasses; ++pass) {
      const int shift = math::select_shift(pass);
      for (uint32_t r = 0; r < rows; ++r) {
        const math::RadixSelect s = state[r];
        if (s.done) continue;
        if (stats) stats->most_passes = std::max(stats->most_passes, pass + 1);
        for_columns(r, [&](uint32_t c) {
          const unsigned long long key = key_of(r, c);
          if (stats) ++stats->histogram_visits;
          if (math::select_counts(key, s, shift))
            ++hist[size_t(r) * bins + math::select_digit(key, shift)];
        });
      }
      for (uint32_t r = 0; r < rows; ++r) {
        if (state[r].done) continue;
        math::select_step(state[r], &hist[size_t(r) * bins], shift);
        std::fill(hist.begin() + long(size_t(r) * bins), hist.begin() + long(size_t(r + 1) * bins),
                  0u);
      }
    }
  std::vector<unsigned long long> selected(size_t(rows) * keep, 0ull);
  for (uint32_t r = 0; r < rows; ++r) {
    EXPECT_TRUE(state[r].done) << "row " << r << " not decided after every pass";
    uint32_t count = 0, entries = 0;
    for_columns(r, [&](uint32_t c) {
      const unsigned long long key = key_of(r, c);
      entries += key != 0ull;
      if (!math::select_takes(key, state[r])) return;
      if (count < keep) selected[size_t(r) * keep + count] = key;
      ++count;
    });
    if (count != std::min(keep, entries) && stats) stats->exact = false;
    EXPECT_LE(count, keep) << "row " << r << " collected more than K keys";
    std::sort(selected.begin() + long(size_t(r) * keep),
              selected.begin() + long(size_t(r + 1) * keep), std::greater<unsigned long long>());
  }
  return selected;
}

// CudaBackend::top_k on the host.
inline void emulate_top_k(const std::vector<float>& x, uint32_t rows, uint32_t cols,
                          uint32_t valid_cols, uint32_t k, std::vector<float>& values,
                          std::vector<uint32_t>& indices, SelectStats* stats = nullptr) {
  const uint32_t valid = std::min(cols, valid_cols), keep = std::min(k, valid);
  values.assign(size_t(rows) * k, 0.0f);
  indices.assign(size_t(rows) * k, 0);
  std::vector<unsigned long long> sorted;
  if (keep > 0)
    sorted = emulate_select_rows(
        [&](uint32_t r, uint32_t c) { return math::top_k_entry_key(x[size_t(r) * cols + c], c); },
        rows, valid, keep, stats);
  for (size_t i = 0; i < values.size(); ++i) {  // top_k_gather_kernel
    const size_t r = i / k;
    const uint32_t q = uint32_t(i % k);
    if (q < keep) {
      const uint32_t c = math::key_column(sorted[r * keep + q]);
      if (c >= valid) {  // a slot the select left empty: a wrong selection
        ADD_FAILURE() << "row " << r << " output " << q << ": no key selected";
        values[i] = -INFINITY;
        indices[i] = c;
        continue;
      }
      values[i] = x[r * cols + c];
      indices[i] = c;
    } else {
      values[i] = -INFINITY;
      indices[i] = UINT32_MAX;
    }
  }
}

// CudaBackend::top_k_filtered on the host (f: host arrays).
inline void emulate_top_k_filtered(const std::vector<float>& x, uint32_t rows, uint32_t cols,
                                   uint32_t valid_cols, uint32_t k, const TopKFilter& f,
                                   std::vector<float>& values, std::vector<uint32_t>& indices,
                                   SelectStats* stats = nullptr) {
  const uint32_t valid = std::min(cols, valid_cols), keep = std::min(k, valid);
  values.assign(size_t(rows) * k, 0.0f);
  indices.assign(size_t(rows) * k, 0);
  std::vector<unsigned long long> sorted;
  if (keep > 0)
    sorted = emulate_select_rows(
        [&](uint32_t r, uint32_t c) {
          return math::filtered_row_key(x.data(), cols, r, c, f.exclude_ptr, f.exclude_index,
                                        f.scale_ptr, f.scale_index, f.scale_value);
        },
        rows, valid, keep, stats);
  for (size_t i = 0; i < values.size(); ++i) {  // filtered_gather_kernel
    const uint32_t r = uint32_t(i / k), q = uint32_t(i % k);
    const unsigned long long key = q < keep ? sorted[size_t(r) * keep + q] : 0ull;
    float v = -INFINITY;
    uint32_t c = UINT32_MAX;
    if (math::is_candidate_key(key)) {
      c = math::key_column(key);
      if (c >= valid) {
        ADD_FAILURE() << "row " << r << " output " << q << ": a key of no valid column";
        continue;
      }
      const math::RowFilterRange range = math::row_filter_range(f.exclude_ptr, f.scale_ptr, r);
      math::filtered_score(x[size_t(r) * cols + c], c, range, f.exclude_index, f.scale_index,
                           f.scale_value, &v);
    }
    values[i] = v;
    indices[i] = c;
  }
}

}  // namespace nn::test
