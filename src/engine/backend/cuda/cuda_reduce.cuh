// Deterministic reductions for the CUDA kernels: block-wide sums (and the maximum) by a fixed
// tree (warp shuffles, then one warp over the warp totals), so the same inputs in the same
// threads give the same bits every run; and pass 1 of the column reductions (the order of
// backend/math/reduce_math.h), shared by cuda/dense.cu and cuda/norm.cu.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backend/cuda/cuda_backend.h"
#include "backend/math/reduce_math.h"

namespace nn::cuda {

// Pass 1 of a column reduction of x ([rows][cols]) tiled as t: partial[tile * cols + c] = the sum
// over the tile's rows, in row order, of x (squares false) or x^2 (true), in double; into
// scratch `slot` (t.tiles * cols doubles), which is returned. Defined in cuda/dense.cu.
double* column_partials(CudaBackend& b, const float* x, uint32_t rows, uint32_t cols,
                        math::ColumnTiles t, bool squares, CudaBackend::Slot slot);

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
  return v;
}

// Sum of v over the block (blockDim.x a multiple of 32, at most 1024); the result is valid in
// every thread. `shared` holds 32 values. Contains __syncthreads: call from every thread.
template <typename T>
__device__ __forceinline__ T block_sum(T v, T* shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  v = warp_sum(v);
  __syncthreads();  // shared may still be read by a previous block_sum
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    // Only warp 0 reads the warp totals, so thread 0's write below races with no reader.
    T total = lane < warps ? shared[lane] : T(0);
    total = warp_sum(total);
    if (lane == 0) shared[0] = total;
  }
  __syncthreads();
  return shared[0];
}

// Largest value of the block's v, NaN ignored (the CPU's max_ignoring_nan); valid in every
// thread. `shared` holds 32 floats.
__device__ __forceinline__ float block_max(float v, float* shared) {
  for (int off = 16; off > 0; off >>= 1) {
    const float o = __shfl_down_sync(0xffffffffu, v, off);
    v = o > v ? o : v;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {  // only warp 0 reads the warp maxima (no reader races with the write below)
    float m = lane < warps ? shared[lane] : -INFINITY;
    for (int off = 16; off > 0; off >>= 1) {
      const float o = __shfl_down_sync(0xffffffffu, m, off);
      m = o > m ? o : m;
    }
    if (lane == 0) shared[0] = m;
  }
  __syncthreads();
  return shared[0];
}

}  // namespace nn::cuda
