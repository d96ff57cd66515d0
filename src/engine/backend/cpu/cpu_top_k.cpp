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

namespace nn {
namespace {

using Candidate = std::pair<float, uint32_t>;

// True when a ranks before b.
inline bool better(const Candidate& a, const Candidate& b) {
  const bool a_nan = std::isnan(a.first), b_nan = std::isnan(b.first);
  if (a_nan != b_nan) return b_nan;
  if (!a_nan && a.first != b.first) return a.first > b.first;
  return a.second < b.second;
}

}  // namespace

void CpuBackend::top_k(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols,
                       uint32_t k, float* values, uint32_t* indices) {
  if (k == 0 || rows == 0) return;
  const uint32_t valid = std::min(cols, valid_cols);
  const uint32_t keep = std::min(k, valid);
  const size_t work = size_t(rows) * valid;
#pragma omp parallel num_threads(threads_) if (work >= (size_t(1) << 15))
  {
    std::vector<Candidate> heap;
    heap.reserve(keep);
#pragma omp for schedule(static)
    for (uint32_t r = 0; r < rows; ++r) {
      const float* row = x + size_t(r) * cols;
      heap.clear();
      // With `better` as the ordering, the heap's front is the worst kept candidate.
      for (uint32_t c = 0; c < valid; ++c) {
        const Candidate cand(row[c], c);
        if (heap.size() < keep) {
          heap.push_back(cand);
          std::push_heap(heap.begin(), heap.end(), better);
        } else if (better(cand, heap.front())) {
          std::pop_heap(heap.begin(), heap.end(), better);
          heap.back() = cand;
          std::push_heap(heap.begin(), heap.end(), better);
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
  }
}

}  // namespace nn
