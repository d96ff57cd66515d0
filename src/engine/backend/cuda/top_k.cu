// CudaBackend top-K per row, with no cap on K: each row's valid columns are sorted by a 64-bit
// key (math::top_k_key of the value, then the complement of the column) with CUB's segmented
// radix sort, descending, and the first K are gathered. The key makes every entry distinct, so
// the order is the CPU backend's exactly: larger value first, ties to the lower column, NaN last.
// top_k_filtered builds its keys with math::filtered_key (backend/math/top_k_math.h): each
// element looks itself up in its row's sorted exclusion and multiplier lists (binary search),
// and a column that is no candidate (excluded, or NaN after scaling) gets key 0, so it sorts
// after every candidate and its slot reads back as padding. Only rows * k results are written.
#include <cub/device/device_segmented_radix_sort.cuh>
#include <limits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_guard.h"
#include "backend/math/elementwise_math.h"
#include "backend/math/top_k_math.h"
#include "core/error.h"

namespace nn {
namespace {

using Key = unsigned long long;

__global__ void top_k_keys_kernel(const float* x, uint32_t rows, uint32_t cols, uint32_t valid,
                                  Key* keys, int* offsets) {
  const size_t total = size_t(rows) * valid;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t r = i / valid;
    const uint32_t c = uint32_t(i % valid);
    keys[i] = math::top_k_entry_key(x[r * cols + c], c);
  }
  for (size_t r = blockIdx.x * size_t(blockDim.x) + threadIdx.x; r <= rows;
       r += size_t(gridDim.x) * blockDim.x)
    offsets[r] = int(r * valid);
}

__global__ void top_k_gather_kernel(const float* x, uint32_t rows, uint32_t cols, uint32_t valid,
                                    uint32_t k, uint32_t keep, const Key* sorted, float* values,
                                    uint32_t* indices) {
  const size_t total = size_t(rows) * k;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t r = i / k;
    const uint32_t q = uint32_t(i % k);
    if (q < keep) {
      const uint32_t c = 0xffffffffu - uint32_t(sorted[r * valid + q] & 0xffffffffull);
      values[i] = x[r * cols + c];
      indices[i] = c;
    } else {
      values[i] = -INFINITY;
      indices[i] = 0xffffffffu;
    }
  }
}

__global__ void filtered_keys_kernel(const float* x, uint32_t rows, uint32_t cols, uint32_t valid,
                                     TopKFilter f, Key* keys, int* offsets) {
  const size_t total = size_t(rows) * valid;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t r = uint32_t(i / valid);
    const uint32_t c = uint32_t(i % valid);
    const math::RowFilterRange range = math::row_filter_range(f.exclude_ptr, f.scale_ptr, r);
    float v = 0.0f;
    const bool candidate = math::filtered_score(x[size_t(r) * cols + c], c, range, f.exclude_index,
                                                f.scale_index, f.scale_value, &v);
    keys[i] = math::filtered_key(candidate, v, c);
  }
  for (size_t r = blockIdx.x * size_t(blockDim.x) + threadIdx.x; r <= rows;
       r += size_t(gridDim.x) * blockDim.x)
    offsets[r] = int(r * valid);
}

__global__ void filtered_gather_kernel(const float* x, uint32_t rows, uint32_t cols, uint32_t valid,
                                       uint32_t k, uint32_t keep, TopKFilter f, const Key* sorted,
                                       float* values, uint32_t* indices) {
  const size_t total = size_t(rows) * k;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t r = uint32_t(i / k);
    const uint32_t q = uint32_t(i % k);
    const Key key = q < keep ? sorted[size_t(r) * valid + q] : 0ull;
    float v = -INFINITY;
    uint32_t c = 0xffffffffu;
    if (math::is_candidate_key(key)) {
      c = 0xffffffffu - uint32_t(key & 0xffffffffull);
      // The score again (a candidate's key is not inverted: -0 was stored as +0).
      const math::RowFilterRange range = math::row_filter_range(f.exclude_ptr, f.scale_ptr, r);
      math::filtered_score(x[size_t(r) * cols + c], c, range, f.exclude_index, f.scale_index,
                           f.scale_value, &v);
    }
    values[i] = v;
    indices[i] = c;
  }
}

}  // namespace

// Sorts `items` keys (rows segments given by offsets) descending into sorted, with CUB's
// segmented radix sort over all 64 bits.
void CudaBackend::sort_row_keys(const unsigned long long* keys, unsigned long long* sorted,
                                size_t items, uint32_t rows, const int* offsets) {
  const cuda::DeviceGuard guard(device_);
  size_t temp_bytes = 0;
  NN_CUDA_CALL(cub::DeviceSegmentedRadixSort::SortKeysDescending(nullptr, temp_bytes, keys, sorted,
                                                                 int(items), int(rows), offsets,
                                                                 offsets + 1, 0, 64, stream_));
  void* temp = scratch(kSlotE, temp_bytes);
  NN_CUDA_CALL(cub::DeviceSegmentedRadixSort::SortKeysDescending(
      temp, temp_bytes, keys, sorted, int(items), int(rows), offsets, offsets + 1, 0, 64, stream_));
}

void CudaBackend::top_k(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols,
                        uint32_t k, float* values, uint32_t* indices) {
  const cuda::DeviceGuard guard(device_);
  if (k == 0 || rows == 0) return;
  const uint32_t valid = cols < valid_cols ? cols : valid_cols;
  const uint32_t keep = k < valid ? k : valid;
  const size_t items = size_t(rows) * valid;
  Key* sorted = nullptr;
  if (items > 0) {
    if (items > size_t(std::numeric_limits<int>::max()))
      throw BackendError("top_k: " + std::to_string(rows) + " rows x " + std::to_string(valid) +
                         " columns exceed one sort (2^31 - 1 entries); use smaller batches");
    auto* keys = static_cast<Key*>(scratch(kSlotA, 2 * items * sizeof(Key)));
    auto* offsets = static_cast<int*>(scratch(kSlotB, (size_t(rows) + 1) * sizeof(int)));
    sorted = keys + items;
    top_k_keys_kernel<<<grid_for(items > rows ? items : rows + 1), kThreads, 0, stream_>>>(
        x, rows, cols, valid, keys, offsets);
    NN_CUDA_LAUNCHED("top_k_keys_kernel");
    sort_row_keys(keys, sorted, items, rows, offsets);
  }
  const size_t out = size_t(rows) * k;
  top_k_gather_kernel<<<grid_for(out), kThreads, 0, stream_>>>(x, rows, cols, valid, k, keep,
                                                               sorted, values, indices);
  NN_CUDA_LAUNCHED("top_k_gather_kernel");
}

void CudaBackend::top_k_filtered(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols,
                                 uint32_t k, const TopKFilter& filter, float* values,
                                 uint32_t* indices) {
  const cuda::DeviceGuard guard(device_);
  if (k == 0 || rows == 0) return;
  const uint32_t valid = cols < valid_cols ? cols : valid_cols;
  const uint32_t keep = k < valid ? k : valid;
  const size_t items = size_t(rows) * valid;
  Key* sorted = nullptr;
  if (items > 0) {
    if (items > size_t(std::numeric_limits<int>::max()))
      throw BackendError("top_k_filtered: " + std::to_string(rows) + " rows x " +
                         std::to_string(valid) +
                         " columns exceed one sort (2^31 - 1 entries); use smaller batches");
    auto* keys = static_cast<Key*>(scratch(kSlotA, 2 * items * sizeof(Key)));
    auto* offsets = static_cast<int*>(scratch(kSlotB, (size_t(rows) + 1) * sizeof(int)));
    sorted = keys + items;
    filtered_keys_kernel<<<grid_for(items > rows ? items : rows + 1), kThreads, 0, stream_>>>(
        x, rows, cols, valid, filter, keys, offsets);
    NN_CUDA_LAUNCHED("filtered_keys_kernel");
    sort_row_keys(keys, sorted, items, rows, offsets);
  }
  const size_t out = size_t(rows) * k;
  filtered_gather_kernel<<<grid_for(out), kThreads, 0, stream_>>>(x, rows, cols, valid, k, keep,
                                                                  filter, sorted, values, indices);
  NN_CUDA_LAUNCHED("filtered_gather_kernel");
}

}  // namespace nn
