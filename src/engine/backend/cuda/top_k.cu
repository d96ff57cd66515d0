// CudaBackend top-K per row, with no cap on K, by selection instead of a full sort: a per-row
// radix select (backend/math/top_k_select_math.h) finds the threshold key of each row's K-th
// largest entry in at most 8 passes over the scores, the entries at or above it (exactly
// min(K, entries) of them) are collected, and only those rows x K keys are sorted (CUB's
// segmented sort) and gathered. Keys as before: math::top_k_entry_key of the value, then the
// complement of the column, every entry distinct, so the order is the CPU backend's exactly
// (larger value first, ties to the lower column, NaN last). top_k_filtered's keys come from
// math::filtered_row_key: each element finds itself in its row's sorted exclusion and multiplier
// lists (binary search) and is multiplied by its factors; a column that is no candidate
// (excluded, or NaN after scaling) gets key 0, which is never selected, so a row short of K
// reads back padded with -inf / UINT32_MAX. Keys are computed again in every pass rather than
// stored.
//
// Scratch memory beyond the scores (a 1,000,000-column layer x 1,024 rows needed about 16 GiB of
// keys and 24 GiB of sort scratch with the full sort): 16 bytes a selected key (the collected
// keys and the sorted copy), rows x keep x 16 with keep = min(K, valid columns); CUB's segmented
// sort scratch for those rows x keep keys; and 1,048 bytes a row (the select state, its 256-bin
// histogram, a count and a segment offset). For K = 100 and 1,024 rows: about 2.7 MB.
//
// Launches: an init kernel, then per pass (8 at most; none when K covers the row) a histogram
// kernel (blocks of 256 threads, math::select_blocks_per_row blocks a row, shared-memory integer
// counts added into the row's histogram with integer atomics: the counts, so the selection, do
// not depend on timing) and a step kernel (one thread a row); then collect, sort, gather.
#include <cub/device/device_segmented_sort.cuh>
#include <limits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_guard.h"
#include "backend/math/elementwise_math.h"
#include "backend/math/top_k_math.h"
#include "backend/math/top_k_select_math.h"
#include "core/error.h"

namespace nn {
namespace {

using Key = unsigned long long;
constexpr uint32_t kBins = math::kSelectBins;

// The key of (row, column) for top_k.
struct PlainKeys {
  const float* x;
  uint32_t cols;
  __device__ Key operator()(uint32_t r, uint32_t c) const {
    return math::top_k_entry_key(x[size_t(r) * cols + c], c);
  }
};

// The key of (row, column) for top_k_filtered.
struct FilteredKeys {
  const float* x;
  uint32_t cols;
  TopKFilter f;
  __device__ Key operator()(uint32_t r, uint32_t c) const {
    return math::filtered_row_key(x, cols, r, c, f.exclude_ptr, f.exclude_index, f.scale_ptr,
                                  f.scale_index, f.scale_value);
  }
};

// Every row's state, zero histograms and counts, and the sort's segment offsets r * keep.
__global__ void select_init_kernel(uint32_t rows, uint32_t keep, uint32_t valid,
                                   math::RadixSelect* state, uint32_t* hist, uint32_t* count,
                                   int* offsets) {
  const size_t step = size_t(gridDim.x) * blockDim.x;
  const size_t first = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  for (size_t i = first; i < size_t(rows) * kBins; i += step) hist[i] = 0;
  for (size_t r = first; r <= rows; r += step) {
    if (r < rows) {
      state[r] = math::select_start(keep, valid);
      count[r] = 0;
    }
    offsets[r] = int(r * keep);
  }
}

// One pass: block b of row r counts the digits of its columns' keys that have the row's prefix
// (columns b * blockDim + t, then every per_row * blockDim further), then adds its counts into
// the row's histogram.
template <typename KeyOf>
__global__ void select_histogram_kernel(KeyOf key_of, uint32_t valid, uint32_t per_row, int shift,
                                        const math::RadixSelect* state, uint32_t* hist) {
  __shared__ uint32_t counts[kBins];
  const uint32_t r = blockIdx.x / per_row, b = blockIdx.x % per_row;
  const math::RadixSelect s = state[r];
  if (s.done) return;  // the whole block: nothing left to decide in this row
  for (uint32_t d = threadIdx.x; d < kBins; d += blockDim.x) counts[d] = 0;
  __syncthreads();
  const uint64_t stride = uint64_t(per_row) * blockDim.x;
  for (uint64_t c = uint64_t(b) * blockDim.x + threadIdx.x; c < valid; c += stride) {
    const Key key = key_of(r, uint32_t(c));
    if (math::select_counts(key, s, shift)) atomicAdd(&counts[math::select_digit(key, shift)], 1u);
  }
  __syncthreads();
  for (uint32_t d = threadIdx.x; d < kBins; d += blockDim.x)
    if (counts[d]) atomicAdd(&hist[size_t(r) * kBins + d], counts[d]);
}

// After a pass: each row's step (one thread a row), its histogram cleared for the next pass.
__global__ void select_step_kernel(uint32_t rows, int shift, math::RadixSelect* state,
                                   uint32_t* hist) {
  for (size_t r = blockIdx.x * size_t(blockDim.x) + threadIdx.x; r < rows;
       r += size_t(gridDim.x) * blockDim.x) {
    if (state[r].done) continue;
    uint32_t* h = hist + r * kBins;
    math::select_step(state[r], h, shift);
    for (uint32_t d = 0; d < kBins; ++d) h[d] = 0;
  }
}

// The selected keys of each row into selected[r * keep, r * keep + keep), in arrival order
// (the sort below orders them); slots past a short row's entries keep key 0 (set before).
template <typename KeyOf>
__global__ void select_collect_kernel(KeyOf key_of, uint32_t valid, uint32_t per_row, uint32_t keep,
                                      const math::RadixSelect* state, uint32_t* count,
                                      Key* selected) {
  const uint32_t r = blockIdx.x / per_row, b = blockIdx.x % per_row;
  const math::RadixSelect s = state[r];
  const uint64_t stride = uint64_t(per_row) * blockDim.x;
  for (uint64_t c = uint64_t(b) * blockDim.x + threadIdx.x; c < valid; c += stride) {
    const Key key = key_of(r, uint32_t(c));
    if (!math::select_takes(key, s)) continue;
    const uint32_t at = atomicAdd(&count[r], 1u);
    if (at < keep) selected[size_t(r) * keep + at] = key;  // always, by construction
  }
}

__global__ void top_k_gather_kernel(const float* x, uint32_t rows, uint32_t cols, uint32_t k,
                                    uint32_t keep, const Key* sorted, float* values,
                                    uint32_t* indices) {
  const size_t total = size_t(rows) * k;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t r = i / k;
    const uint32_t q = uint32_t(i % k);
    if (q < keep) {
      const uint32_t c = math::key_column(sorted[r * keep + q]);
      values[i] = x[r * cols + c];
      indices[i] = c;
    } else {
      values[i] = -INFINITY;
      indices[i] = 0xffffffffu;
    }
  }
}

__global__ void filtered_gather_kernel(const float* x, uint32_t rows, uint32_t cols, uint32_t k,
                                       uint32_t keep, TopKFilter f, const Key* sorted,
                                       float* values, uint32_t* indices) {
  const size_t total = size_t(rows) * k;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t r = uint32_t(i / k);
    const uint32_t q = uint32_t(i % k);
    const Key key = q < keep ? sorted[size_t(r) * keep + q] : 0ull;
    float v = -INFINITY;
    uint32_t c = 0xffffffffu;
    if (math::is_candidate_key(key)) {
      c = math::key_column(key);
      // The score again (a candidate's key is not inverted: -0 was stored as +0).
      const math::RowFilterRange range = math::row_filter_range(f.exclude_ptr, f.scale_ptr, r);
      math::filtered_score(x[size_t(r) * cols + c], c, range, f.exclude_index, f.scale_index,
                           f.scale_value, &v);
    }
    values[i] = v;
    indices[i] = c;
  }
}

// The selection for every row: the rows x keep selected keys of key_of, sorted descending per
// row (key 0 past a row's entries). Returns the sorted keys (scratch, valid until the next
// top-K call).
template <typename KeyOf>
const Key* select_rows(CudaBackend& b, KeyOf key_of, uint32_t rows, uint32_t valid, uint32_t keep,
                       const char* op) {
  const size_t items = size_t(rows) * keep;
  if (items > size_t(std::numeric_limits<int>::max()))
    throw BackendError(std::string(op) + ": " + std::to_string(rows) +
                       " rows x K = " + std::to_string(keep) +
                       " exceed one sort (2^31 - 1 selected entries); use smaller batches");
  const cudaStream_t stream = b.stream();
  // Slot A: selected keys, then their sorted copy. Slot B: per-row state, histograms, counts
  // and offsets (1,048 bytes a row). Slot E: CUB's scratch.
  auto* selected = static_cast<Key*>(b.scratch(CudaBackend::kSlotA, 2 * items * sizeof(Key)));
  Key* sorted = selected + items;
  const size_t state_bytes = size_t(rows) * sizeof(math::RadixSelect);
  const size_t hist_bytes = size_t(rows) * kBins * sizeof(uint32_t);
  auto* base = static_cast<char*>(
      b.scratch(CudaBackend::kSlotB, state_bytes + hist_bytes + size_t(rows) * sizeof(uint32_t) +
                                         (size_t(rows) + 1) * sizeof(int)));
  auto* state = reinterpret_cast<math::RadixSelect*>(base);
  auto* hist = reinterpret_cast<uint32_t*>(base + state_bytes);
  uint32_t* count = hist + size_t(rows) * kBins;
  auto* offsets = reinterpret_cast<int*>(count + rows);

  select_init_kernel<<<grid_for(size_t(rows) * kBins), kThreads, 0, stream>>>(
      rows, keep, valid, state, hist, count, offsets);
  NN_CUDA_LAUNCHED("select_init_kernel");
  NN_CUDA_CALL(cudaMemsetAsync(selected, 0, items * sizeof(Key), stream));
  const uint32_t per_row = math::select_blocks_per_row(rows, valid);
  const size_t blocks = size_t(rows) * per_row;
  if (blocks > size_t(std::numeric_limits<int>::max()))
    throw BackendError(std::string(op) + ": too many rows (" + std::to_string(rows) + ")");
  if (keep < valid)  // otherwise every row is done from the start: no pass to run
    for (int pass = 0; pass < math::kSelectPasses; ++pass) {
      const int shift = math::select_shift(pass);
      select_histogram_kernel<<<unsigned(blocks), math::kSelectThreads, 0, stream>>>(
          key_of, valid, per_row, shift, state, hist);
      NN_CUDA_LAUNCHED("select_histogram_kernel");
      select_step_kernel<<<grid_for(rows), kThreads, 0, stream>>>(rows, shift, state, hist);
      NN_CUDA_LAUNCHED("select_step_kernel");
    }
  select_collect_kernel<<<unsigned(blocks), math::kSelectThreads, 0, stream>>>(
      key_of, valid, per_row, keep, state, count, selected);
  NN_CUDA_LAUNCHED("select_collect_kernel");
  size_t temp_bytes = 0;
  NN_CUDA_CALL(cub::DeviceSegmentedSort::SortKeysDescending(nullptr, temp_bytes, selected, sorted,
                                                            int64_t(items), int64_t(rows), offsets,
                                                            offsets + 1, stream));
  void* temp = b.scratch(CudaBackend::kSlotE, temp_bytes ? temp_bytes : 1);
  NN_CUDA_CALL(cub::DeviceSegmentedSort::SortKeysDescending(temp, temp_bytes, selected, sorted,
                                                            int64_t(items), int64_t(rows), offsets,
                                                            offsets + 1, stream));
  return sorted;
}

}  // namespace

void CudaBackend::top_k(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols,
                        uint32_t k, float* values, uint32_t* indices) {
  const cuda::DeviceGuard guard(device_);
  if (k == 0 || rows == 0) return;
  const uint32_t valid = cols < valid_cols ? cols : valid_cols;
  const uint32_t keep = k < valid ? k : valid;
  const Key* sorted = nullptr;
  if (keep > 0) sorted = select_rows(*this, PlainKeys{x, cols}, rows, valid, keep, "top_k");
  const size_t out = size_t(rows) * k;
  top_k_gather_kernel<<<grid_for(out), kThreads, 0, stream_>>>(x, rows, cols, k, keep, sorted,
                                                               values, indices);
  NN_CUDA_LAUNCHED("top_k_gather_kernel");
}

void CudaBackend::top_k_filtered(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols,
                                 uint32_t k, const TopKFilter& filter, float* values,
                                 uint32_t* indices) {
  const cuda::DeviceGuard guard(device_);
  if (k == 0 || rows == 0) return;
  const uint32_t valid = cols < valid_cols ? cols : valid_cols;
  const uint32_t keep = k < valid ? k : valid;
  const Key* sorted = nullptr;
  if (keep > 0)
    sorted = select_rows(*this, FilteredKeys{x, cols, filter}, rows, valid, keep, "top_k_filtered");
  const size_t out = size_t(rows) * k;
  filtered_gather_kernel<<<grid_for(out), kThreads, 0, stream_>>>(x, rows, cols, k, keep, filter,
                                                                  sorted, values, indices);
  NN_CUDA_LAUNCHED("filtered_gather_kernel");
}

}  // namespace nn
