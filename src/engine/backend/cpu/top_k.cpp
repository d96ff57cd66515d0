// CpuBackend top-K selection per row: a bounded heap whose root is the worst kept candidate, so
// most columns cost one comparison. Order: larger value first, ties to the lower column, NaN
// after every number (a NaN score never displaces a real one). Rows run in parallel.
// top_k_filtered walks each row's filter lists (ascending) alongside the columns: excluded
// columns and NaN scores are skipped, scaled columns multiplied; blocks without a scaled column
// keep the one-pass skip (an excluded column can only lower a block's true maximum). The order
// and the scaling are backend/math/top_k_math.h's (top_k_entry_key, scaled_score), as on CUDA,
// which sorts keys instead of keeping a heap.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/top_k_math.h"

namespace nn {
namespace {

// A kept column: its value and its math::top_k_entry_key, the key the CUDA backend sorts by
// (larger value first, -0 equal to +0, NaN after every number, ties to the lower column; every
// key distinct). The key is computed once per candidate, so the heap compares integers.
struct Candidate {
  unsigned long long key;
  float value;
  Candidate(float v, uint32_t c) : key(math::top_k_entry_key(v, c)), value(v) {}
  uint32_t column() const { return 0xffffffffu - uint32_t(key & 0xffffffffu); }
};
constexpr uint32_t kBlock = 64;

// True when a ranks before b. A function object (not a function pointer) so that the heap
// algorithms inline it.
struct Better {
  bool operator()(const Candidate& a, const Candidate& b) const { return a.key > b.key; }
};
constexpr Better better{};

// Writes the sorted heap (best first) as row r's k outputs, padded with -inf / UINT32_MAX.
void write_row(const std::vector<Candidate>& sorted, uint32_t k, float* vr, uint32_t* ir) {
  for (uint32_t i = 0; i < k; ++i) {
    if (i < sorted.size()) {
      vr[i] = sorted[i].value;
      ir[i] = sorted[i].column();
    } else {
      vr[i] = -std::numeric_limits<float>::infinity();
      ir[i] = UINT32_MAX;
    }
  }
}

// Offers a candidate to a heap of at most `keep` (front = the worst kept).
inline void offer(std::vector<Candidate>& heap, uint32_t keep, const Candidate& cand) {
  if (heap.size() < keep) {
    heap.push_back(cand);
    std::push_heap(heap.begin(), heap.end(), better);
  } else if (keep > 0 && better(cand, heap.front())) {
    std::pop_heap(heap.begin(), heap.end(), better);
    heap.back() = cand;
    std::push_heap(heap.begin(), heap.end(), better);
  }
}

}  // namespace

void CpuBackend::top_k(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols,
                       uint32_t k, float* values, uint32_t* indices) {
  if (k == 0 || rows == 0) return;
  const uint32_t valid = std::min(cols, valid_cols);
  const uint32_t keep = std::min(k, valid);
  const size_t work = size_t(rows) * valid;
  auto range = [&](size_t lo, size_t hi) {
    std::vector<Candidate> heap;
    heap.reserve(keep);
    for (size_t r = lo; r < hi; ++r) {
      const float* row = x + size_t(r) * cols;
      heap.clear();
      // With `better` as the ordering, the heap's front is the worst kept candidate. Columns
      // are scanned in increasing order, so a later value equal to the worst kept one never
      // displaces it: once the heap is full, a block whose maximum is <= that value is skipped
      // after one vectorised pass (most of the row, for k much smaller than the row).
      for (uint32_t b = 0; b < valid; b += kBlock) {
        const uint32_t end = std::min(valid, b + kBlock);
        if (keep > 0 && heap.size() == keep && !std::isnan(heap.front().value)) {
          if (cpu::max_ignoring_nan(row + b, end - b) <= heap.front().value) continue;
        }
        for (uint32_t c = b; c < end; ++c) {
          const float v = row[c];
          if (heap.size() < keep) {
            heap.emplace_back(v, c);
            std::push_heap(heap.begin(), heap.end(), better);
          } else if (keep > 0) {
            // Cheap reject first: not above a numeric worst value means not better (ties go
            // to the earlier column, NaN ranks last).
            const float worst = heap.front().value;
            if (!std::isnan(worst) && !(v > worst)) continue;
            const Candidate cand(v, c);
            if (!better(cand, heap.front())) continue;
            std::pop_heap(heap.begin(), heap.end(), better);
            heap.back() = cand;
            std::push_heap(heap.begin(), heap.end(), better);
          }
        }
      }
      std::sort_heap(heap.begin(), heap.end(), better);  // best first
      write_row(heap, k, values + size_t(r) * k, indices + size_t(r) * k);
    }
  };
  if (work >= (size_t(1) << 15))
    cpu::parallel_ranges(*pool_, rows, std::max<size_t>(1, cpu::kMinTaskFloats / valid), range);
  else
    range(0, rows);
}

void CpuBackend::top_k_filtered(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols,
                                uint32_t k, const TopKFilter& filter, float* values,
                                uint32_t* indices) {
  if (k == 0 || rows == 0) return;
  const uint32_t valid = std::min(cols, valid_cols);
  const uint32_t keep = std::min(k, valid);
  const size_t work = size_t(rows) * valid;
  const uint32_t* ex = filter.exclude_index;
  const uint32_t* sc = filter.scale_index;
  const float* sv = filter.scale_value;
  auto range = [&](size_t lo, size_t hi) {
    std::vector<Candidate> heap;
    heap.reserve(keep);
    for (size_t r = lo; r < hi; ++r) {
      const float* row = x + size_t(r) * cols;
      heap.clear();
      uint32_t e = 0, e_end = 0, s = 0, s_end = 0;
      if (filter.exclude_ptr) {
        e = filter.exclude_ptr[r];
        e_end = filter.exclude_ptr[r + 1];
      }
      if (filter.scale_ptr) {
        s = filter.scale_ptr[r];
        s_end = filter.scale_ptr[r + 1];
      }
      for (uint32_t b = 0; b < valid; b += kBlock) {
        const uint32_t end = std::min(valid, b + kBlock);
        while (s < s_end && sc[s] < b) ++s;
        // Kept candidates are never NaN here. Ties with the worst kept value lose to it (it has
        // the lower column), so a block whose raw maximum is not above it has nothing to offer
        // unless a multiplier changes one of its scores.
        if (keep > 0 && heap.size() == keep && (s == s_end || sc[s] >= end) &&
            cpu::max_ignoring_nan(row + b, end - b) <= heap.front().value)
          continue;
        for (uint32_t c = b; c < end; ++c) {
          while (e < e_end && ex[e] < c) ++e;
          if (e < e_end && ex[e] == c) continue;
          float v = row[c];
          while (s < s_end && sc[s] < c) ++s;
          for (uint32_t j = s; j < s_end && sc[j] == c; ++j) v = math::scaled_score(v, sv[j]);
          if (std::isnan(v)) continue;
          offer(heap, keep, Candidate(v, c));
        }
      }
      std::sort_heap(heap.begin(), heap.end(), better);  // best first
      write_row(heap, k, values + size_t(r) * k, indices + size_t(r) * k);
    }
  };
  if (work >= (size_t(1) << 15))
    cpu::parallel_ranges(*pool_, rows, std::max<size_t>(1, cpu::kMinTaskFloats / valid), range);
  else
    range(0, rows);
}

}  // namespace nn
