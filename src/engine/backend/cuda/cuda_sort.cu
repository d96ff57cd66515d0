// Stable sorts of CSR entries (see cuda_sort.cuh), with CUB's radix sort.
#include <cub/device/device_radix_sort.cuh>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_sort.cuh"
#include "core/error.h"

namespace nn::cuda {
namespace {

__global__ void rows_of_entries_kernel(const uint32_t* row_ptr, uint32_t rows, uint64_t nnz,
                                       uint32_t* row_of) {
  for (uint64_t e = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; e < nnz;
       e += uint64_t(gridDim.x) * blockDim.x) {
    // Last r with row_ptr[r] <= e (upper bound - 1).
    uint32_t lo = 0, hi = rows;
    while (lo < hi) {
      const uint32_t mid = (lo + hi) / 2;
      if (row_ptr[mid + 1] <= e)
        lo = mid + 1;
      else
        hi = mid;
    }
    row_of[e] = lo;
  }
}

// key = (row << 32 | index) or index; value = entry id.
__global__ void make_keys_kernel(const uint32_t* index, const uint32_t* row_of, uint64_t nnz,
                                 bool by_row, unsigned long long* keys, uint32_t* ids) {
  for (uint64_t e = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; e < nnz;
       e += uint64_t(gridDim.x) * blockDim.x) {
    keys[e] = by_row ? (static_cast<unsigned long long>(row_of[e]) << 32) | index[e] : index[e];
    ids[e] = uint32_t(e);
  }
}

__global__ void split_keys_kernel(const unsigned long long* keys, const uint32_t* ids,
                                  const uint32_t* row_of, uint64_t nnz, uint32_t* sorted_index,
                                  uint32_t* row_of_sorted) {
  for (uint64_t i = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; i < nnz;
       i += uint64_t(gridDim.x) * blockDim.x) {
    sorted_index[i] = uint32_t(keys[i] & 0xffffffffull);
    row_of_sorted[i] = row_of[ids[i]];
  }
}

}  // namespace

void rows_of_entries(CudaBackend& b, const uint32_t* row_ptr, uint32_t rows, uint64_t nnz,
                     uint32_t* row_of) {
  if (nnz == 0) return;
  rows_of_entries_kernel<<<grid_for(nnz), kThreads, 0, b.stream()>>>(row_ptr, rows, nnz, row_of);
  NN_CUDA_LAUNCHED("rows_of_entries_kernel");
}

const uint32_t* sort_entries(CudaBackend& b, const SparseView& x, uint64_t nnz, bool by_row,
                             const uint32_t** sorted_index, const uint32_t** row_of_sorted) {
  using Key = unsigned long long;
  if (nnz > 0x7fffffffull) throw BackendError("sort_entries: more than 2^31 - 1 entries");
  auto* row_of = static_cast<uint32_t*>(b.scratch(CudaBackend::kSlotA, nnz * sizeof(uint32_t)));
  auto* keys = static_cast<Key*>(b.scratch(CudaBackend::kSlotB, 2 * nnz * sizeof(Key)));
  auto* ids = static_cast<uint32_t*>(b.scratch(CudaBackend::kSlotC, 2 * nnz * sizeof(uint32_t)));
  auto* split = static_cast<uint32_t*>(b.scratch(CudaBackend::kSlotD, 2 * nnz * sizeof(uint32_t)));
  Key* keys_out = keys + nnz;
  uint32_t* ids_out = ids + nnz;
  rows_of_entries(b, x.row_ptr, x.rows, nnz, row_of);
  make_keys_kernel<<<grid_for(nnz), kThreads, 0, b.stream()>>>(x.index, row_of, nnz, by_row, keys,
                                                               ids);
  NN_CUDA_LAUNCHED("make_keys_kernel");
  // Only the bits a key can use: 32 + enough bits for every row value in [0, x.rows] (an entry
  // past row_ptr[rows] gets row x.rows), or 32.
  int end_bit = 32;
  if (by_row)
    while (end_bit < 64 && (uint64_t(1) << (end_bit - 32)) <= uint64_t(x.rows)) ++end_bit;
  size_t temp_bytes = 0;
  NN_CUDA_CALL(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys, keys_out, ids, ids_out,
                                               int(nnz), 0, end_bit, b.stream()));
  void* temp = b.scratch(CudaBackend::kSlotE, temp_bytes);
  NN_CUDA_CALL(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys_out, ids, ids_out,
                                               int(nnz), 0, end_bit, b.stream()));
  split_keys_kernel<<<grid_for(nnz), kThreads, 0, b.stream()>>>(keys_out, ids_out, row_of, nnz,
                                                                split, split + nnz);
  NN_CUDA_LAUNCHED("split_keys_kernel");
  *sorted_index = split;
  *row_of_sorted = split + nnz;
  return ids_out;
}

}  // namespace nn::cuda
