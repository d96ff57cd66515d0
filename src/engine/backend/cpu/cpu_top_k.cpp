// CpuBackend top-K selection per row: a bounded heap whose root is the worst kept candidate, so
// most columns cost one comparison. Order: larger value first, ties to the lower column, NaN
// after every number (a NaN score never displaces a real one). Rows run in parallel.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"

namespace nn {
namespace {

using Candidate = std::pair<float, uint32_t>;
constexpr uint32_t kBlock = 64;

// True when a ranks before b. A function object (not a function pointer) so that the heap
// algorithms inline it.
struct Better {
  bool operator()(const Candidate& a, const Candidate& b) const {
    const bool a_nan = std::isnan(a.first), b_nan = std::isnan(b.first);
    if (a_nan != b_nan) return b_nan;
    if (!a_nan && a.first != b.first) return a.first > b.first;
    return a.second < b.second;
  }
};
constexpr Better better{};

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
        if (keep > 0 && heap.size() == keep && !std::isnan(heap.front().first)) {
          if (cpu::max_ignoring_nan(row + b, end - b) <= heap.front().first) continue;
        }
        for (uint32_t c = b; c < end; ++c) {
          const Candidate cand(row[c], c);
          if (heap.size() < keep) {
            heap.push_back(cand);
            std::push_heap(heap.begin(), heap.end(), better);
          } else if (keep > 0) {
            // Cheap reject first: not above a numeric worst value means not better (ties go
            // to the earlier column, NaN ranks last).
            const float worst = heap.front().first;
            if (!std::isnan(worst) && !(cand.first > worst)) continue;
            if (!better(cand, heap.front())) continue;
            std::pop_heap(heap.begin(), heap.end(), better);
            heap.back() = cand;
            std::push_heap(heap.begin(), heap.end(), better);
          }
        }
      }
      std::sort_heap(heap.begin(), heap.end(), better);  // best first
      float* vr = values + size_t(r) * k;
      uint32_t* ir = indices + size_t(r) * k;
      for (uint32_t i = 0; i < k; ++i) {
        if (i < heap.size()) {
          vr[i] = heap[i].first;
          ir[i] = heap[i].second;
        } else {
          vr[i] = -std::numeric_limits<float>::infinity();
          ir[i] = UINT32_MAX;
        }
      }
    }
  };
  if (work >= (size_t(1) << 15))
    cpu::parallel_ranges(*pool_, rows, std::max<size_t>(1, cpu::kMinTaskFloats / valid), range);
  else
    range(0, rows);
}

}  // namespace nn
