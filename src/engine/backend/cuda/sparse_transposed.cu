// CudaBackend sparse inputs through a transposed (shared) weight matrix w[n_out][x.cols], from
// CSR, deterministic (the CPU backend's cpu/sparse_transposed.cpp):
//   forward   one thread per (row, output unit) adds the row's entries in entry order;
//   gradient  entries sorted stably by input index (cuda_sort.cu); one block per index run and
//             slice of output units: each g[o][index] has one writer adding its terms in (row,
//             entry) order, skipping zero deltas as the CPU does. No floating-point atomics.
// The weights of one input index are n_out floats apart (x.cols apart in memory), so these reads
// are not coalesced: correct first, fast later.
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_sort.cuh"
#include "backend/cuda/device_guard.h"
#include "backend/math/loss_row_math.h"
#include "backend/math/sparse_math.h"

namespace nn {
namespace {

__device__ __forceinline__ void flag_bad(unsigned long long* flag, uint32_t row, uint32_t index) {
  atomicMin(flag, (static_cast<unsigned long long>(row) << 32) | index);
}

__global__ void transposed_forward_kernel(SparseView x, const float* w, uint32_t n_out, float* z,
                                          unsigned long long* flag) {
  const uint32_t r = blockIdx.x;
  const uint32_t o = blockIdx.y * blockDim.x + threadIdx.x;
  if (o >= n_out) return;
  const float wr = math::example_weight(x.row_weight, r);
  const float* wo = w + size_t(o) * x.cols;
  float acc = 0.0f;
  for (uint32_t e = x.row_ptr[r]; e < x.row_ptr[r + 1]; ++e) {
    const uint32_t idx = x.index[e];
    if (idx >= x.cols) {
      if (o == 0) flag_bad(flag, r, idx);
      continue;
    }
    acc += math::sparse_input_scale(x.value, e, wr) * wo[idx];
  }
  z[size_t(r) * n_out + o] += acc;
}

__global__ void transposed_gradient_kernel(SparseView x, const uint32_t* sorted_index,
                                           const uint32_t* sorted_entry,
                                           const uint32_t* row_of_sorted, uint32_t nnz,
                                           const float* delta, uint32_t n_out, float alpha,
                                           float* g, unsigned long long* flag) {
  const uint32_t p = blockIdx.x;
  if (!math::run_start(sorted_index, 0, p)) return;
  const uint32_t idx = sorted_index[p];
  if (idx >= x.cols) {
    if (blockIdx.y == 0 && threadIdx.x == 0) flag_bad(flag, row_of_sorted[p], idx);
    return;
  }
  const uint32_t o = blockIdx.y * blockDim.x + threadIdx.x;
  if (o >= n_out) return;
  float* gp = g + size_t(o) * x.cols + idx;
  float acc = *gp;
  for (uint32_t q = p; q < nnz && sorted_index[q] == idx; ++q) {
    const uint32_t e = sorted_entry[q], r = row_of_sorted[q];
    const float d = delta[size_t(r) * n_out + o];
    if (d == 0.0f) continue;
    const float s =
        math::sparse_transposed_gradient_scale(alpha, math::example_weight(x.row_weight, r), d);
    acc += s * math::entry_value(x.value, e);
  }
  *gp = acc;
}

std::string outside(uint32_t cols) {
  return " is outside the " + std::to_string(cols) + " inputs";
}

}  // namespace

void CudaBackend::sparse_matmul_transposed(const SparseView& x, const float* w, uint32_t n_out,
                                           float* z) {
  const cuda::DeviceGuard guard(device_);
  if (x.rows == 0 || n_out == 0) return;
  arm_data_error("sparse_matmul_transposed: sparse batch row ", outside(x.cols));
  const dim3 grid(x.rows, (n_out + kThreads - 1) / kThreads);
  transposed_forward_kernel<<<grid, kThreads, 0, stream_>>>(x, w, n_out, z, error_flag_);
  NN_CUDA_LAUNCHED("transposed_forward_kernel");
}

void CudaBackend::sparse_weight_gradient_transposed(const SparseView& x, const float* delta,
                                                    uint32_t n_out, float alpha, float* g) {
  const cuda::DeviceGuard guard(device_);
  if (x.rows == 0 || n_out == 0) return;
  const uint64_t nnz = nnz_of(x);
  if (nnz == 0) return;
  arm_data_error("sparse_weight_gradient_transposed: sparse batch row ", outside(x.cols));
  const uint32_t* sorted_index = nullptr;
  const uint32_t* row_of_sorted = nullptr;
  const uint32_t* sorted_entry =
      cuda::sort_entries(*this, x, nnz, /*by_row=*/false, &sorted_index, &row_of_sorted);
  const dim3 grid(uint32_t(nnz), (n_out + kThreads - 1) / kThreads);
  transposed_gradient_kernel<<<grid, kThreads, 0, stream_>>>(x, sorted_index, sorted_entry,
                                                             row_of_sorted, uint32_t(nnz), delta,
                                                             n_out, alpha, g, error_flag_);
  NN_CUDA_LAUNCHED("transposed_gradient_kernel");
}

}  // namespace nn
