// CSR helpers shared by the sparse and loss kernels: the batch row of every stored entry, and a
// stable radix sort of the entries by a key (CUB), so entries with equal keys keep their entry
// order and every sum over them has a fixed order. Views start at entry 0 (row_ptr[0] == 0, as
// every batch the model builds does).
#pragma once

#include <cstdint>

#include "backend/cuda/cuda_backend.h"

namespace nn::cuda {

// row_of[e] = the row whose range [row_ptr[r], row_ptr[r + 1]) holds entry e, for e < nnz.
void rows_of_entries(CudaBackend& b, const uint32_t* row_ptr, uint32_t rows, uint64_t nnz,
                     uint32_t* row_of);

// Entry ids 0..nnz-1 ordered by (row, index) (by_row) or by index alone, stably (so equal keys
// keep entry order); the sorted indices go to sorted_index. Uses scratch slots A..E.
// Returns the sorted entry ids (scratch memory, valid until the next call).
const uint32_t* sort_entries(CudaBackend& b, const SparseView& x, uint64_t nnz, bool by_row,
                             const uint32_t** sorted_index, const uint32_t** row_of_sorted);

}  // namespace nn::cuda
