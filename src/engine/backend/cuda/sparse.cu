// CudaBackend sparse-input kernels, straight from CSR (never densified), deterministic:
//   forward   one block per (batch row, slice of outputs): each thread owns one output and adds
//             the row's entries in entry order (the CPU backend's order), the entries staged in
//             shared memory a tile at a time;
//   gradient  the entries are sorted stably by input index (cuda_sort.cu), so each input index
//             is a run of entries in (row, entry) order; one block per run start and slice of
//             outputs adds the run's terms in that order into g. No atomics: each g element is
//             written by exactly one thread, in the CPU backend's order. The compact row-sparse
//             gradient arrives grouped by slot from the loader thread (SparseView::slot_ptr):
//             then one block per group and slice, the same order, no sort.
// Indices outside the input width are skipped and reported as a DataError by the next call that
// waits for the stream (CudaBackend::check_data_errors).
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_sort.cuh"
#include "backend/cuda/device_guard.h"
#include "backend/math/loss_row_math.h"
#include "backend/math/sparse_math.h"

namespace nn {
namespace {

constexpr uint32_t kTile = kThreads;

__device__ __forceinline__ void flag_bad(unsigned long long* flag, uint32_t row, uint32_t index) {
  atomicMin(flag, (static_cast<unsigned long long>(row) << 32) | index);
}

__global__ void sparse_matmul_kernel(SparseView x, const float* w, uint32_t n_out, float* z,
                                     unsigned long long* flag) {
  __shared__ uint32_t tile_index[kTile];
  __shared__ float tile_scale[kTile];
  const uint32_t r = blockIdx.x;
  const uint32_t o = blockIdx.y * blockDim.x + threadIdx.x;
  const float wr = math::example_weight(x.row_weight, r);
  const uint32_t lo = x.row_ptr[r], hi = x.row_ptr[r + 1];
  float acc = o < n_out ? z[size_t(r) * n_out + o] : 0.0f;
  for (uint32_t base = lo; base < hi; base += kTile) {
    const uint32_t count = min(kTile, hi - base);
    __syncthreads();  // the previous tile is consumed
    if (threadIdx.x < count) {
      const uint32_t e = base + threadIdx.x;
      tile_index[threadIdx.x] = x.index[e];
      tile_scale[threadIdx.x] = math::sparse_input_scale(x.value, e, wr);
    }
    __syncthreads();
    if (o < n_out) {
      for (uint32_t q = 0; q < count; ++q) {
        const uint32_t idx = tile_index[q];
        if (idx >= x.cols) {
          if (blockIdx.y == 0 && threadIdx.x == 0) flag_bad(flag, r, idx);
          continue;
        }
        acc += tile_scale[q] * w[size_t(idx) * n_out + o];
      }
    }
  }
  if (o < n_out) z[size_t(r) * n_out + o] = acc;
}

__global__ void sparse_gradient_kernel(SparseView x, const uint32_t* sorted_index,
                                       const uint32_t* sorted_entry, const uint32_t* row_of_sorted,
                                       uint32_t nnz, const float* delta, uint32_t n_out,
                                       float alpha, float* g, unsigned long long* flag) {
  const uint32_t p = blockIdx.x;
  if (!math::run_start(sorted_index, 0, p)) return;  // uniform across the block
  const uint32_t idx = sorted_index[p];
  if (idx >= x.cols) {
    if (blockIdx.y == 0 && threadIdx.x == 0) flag_bad(flag, row_of_sorted[p], idx);
    return;
  }
  const uint32_t o = blockIdx.y * blockDim.x + threadIdx.x;
  if (o >= n_out) return;
  float* gp = g + size_t(idx) * n_out + o;
  float acc = *gp;
  for (uint32_t q = p; q < nnz && sorted_index[q] == idx; ++q) {
    const uint32_t e = sorted_entry[q], r = row_of_sorted[q];
    const float wr = math::example_weight(x.row_weight, r);
    const float s = math::sparse_gradient_scale(alpha, x.value, e, wr);
    acc += s * delta[size_t(r) * n_out + o];
  }
  *gp = acc;
}

// The compact row-sparse gradient (train/row_sparse.h) with its entries grouped by slot on the
// loader's thread: block (c, slice) adds group c's terms in entry order, the order the sorted
// path's stable sort gives, so the sums are the same bits without a sort on the device.
__global__ void grouped_gradient_kernel(SparseView x, const float* delta, uint32_t n_out,
                                        float alpha, float* g) {
  const uint32_t c = blockIdx.x;
  const uint32_t o = blockIdx.y * blockDim.x + threadIdx.x;
  if (o >= n_out) return;
  float* gp = g + size_t(c) * n_out + o;
  float acc = *gp;
  const uint32_t hi = x.slot_ptr[c + 1];
  for (uint32_t q = x.slot_ptr[c]; q < hi; ++q) {
    const uint32_t e = x.slot_entry[q], r = x.slot_row[q];
    const float wr = math::example_weight(x.row_weight, r);
    const float s = math::sparse_gradient_scale(alpha, x.value, e, wr);
    acc += s * delta[size_t(r) * n_out + o];
  }
  *gp = acc;
}

std::string outside(uint32_t cols) {
  return " is outside the " + std::to_string(cols) + " inputs";
}

}  // namespace

void CudaBackend::sparse_matmul(const SparseView& x, const float* w, uint32_t n_out, float* z) {
  const cuda::DeviceGuard guard(device_);
  if (x.rows == 0 || n_out == 0) return;
  arm_data_error("sparse_matmul: sparse batch row ", outside(x.cols));
  const dim3 grid(x.rows, (n_out + kThreads - 1) / kThreads);
  sparse_matmul_kernel<<<grid, kThreads, 0, stream_>>>(x, w, n_out, z, error_flag_);
  NN_CUDA_LAUNCHED("sparse_matmul_kernel");
}

void CudaBackend::sparse_weight_gradient(const SparseView& x, const float* delta, uint32_t n_out,
                                         float alpha, float* g) {
  const cuda::DeviceGuard guard(device_);
  if (x.rows == 0 || n_out == 0) return;
  const uint64_t nnz = nnz_of(x);
  if (nnz == 0) return;
  if (x.slot_ptr && x.slot_entry && x.slot_row && x.index == x.slot && x.cols == x.touched_count) {
    // Grouped by index already (every slot is below touched_count): no sort, no index check.
    const dim3 grid(x.cols, (n_out + kThreads - 1) / kThreads);
    grouped_gradient_kernel<<<grid, kThreads, 0, stream_>>>(x, delta, n_out, alpha, g);
    NN_CUDA_LAUNCHED("grouped_gradient_kernel");
    return;
  }
  arm_data_error("sparse_weight_gradient: sparse batch row ", outside(x.cols));
  const uint32_t* sorted_index = nullptr;
  const uint32_t* row_of_sorted = nullptr;
  const uint32_t* sorted_entry =
      cuda::sort_entries(*this, x, nnz, /*by_row=*/false, &sorted_index, &row_of_sorted);
  const dim3 grid(uint32_t(nnz), (n_out + kThreads - 1) / kThreads);
  sparse_gradient_kernel<<<grid, kThreads, 0, stream_>>>(x, sorted_index, sorted_entry,
                                                         row_of_sorted, uint32_t(nnz), delta, n_out,
                                                         alpha, g, error_flag_);
  NN_CUDA_LAUNCHED("sparse_gradient_kernel");
}

}  // namespace nn
