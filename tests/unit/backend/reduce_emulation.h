// Host emulation of the CUDA backend's parallel reductions (backend/math/reduce_math.h): the same
// __host__ __device__ functions the kernels call, run over the kernels' index spaces, plus the
// block's shuffle tree (cuda::block_sum). Used by the host tests (kernel_math_reduce_test.cpp,
// against the CPU backend) and by the CUDA tests (cuda/cuda_reduce_test.cpp, against the GPU
// bit for bit).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/math/dense_math.h"
#include "backend/math/norm_math.h"
#include "backend/math/reduce_math.h"

namespace nn::test {

// lane 0's result of a __shfl_down_sync tree over 32 lanes (a lane whose source is out of range
// keeps its own value; that never reaches lane 0).
inline double warp_sum_tree(std::vector<double> v) {
  for (int off = 16; off > 0; off >>= 1) {
    const std::vector<double> old = v;
    for (int l = 0; l + off < 32; ++l) v[size_t(l)] = old[size_t(l)] + old[size_t(l + off)];
  }
  return v[0];
}

// cuda::block_sum over one value per thread (a multiple of 32 threads, at most 1024): each
// warp's tree, then warp 0's tree over the warp totals (zero past the last warp).
inline double block_sum_tree(const std::vector<double>& per_thread) {
  std::vector<double> totals(32, 0.0);
  for (size_t w = 0; w < per_thread.size() / 32; ++w)
    totals[w] = warp_sum_tree(std::vector<double>(per_thread.begin() + long(w * 32),
                                                  per_thread.begin() + long(w * 32 + 32)));
  return warp_sum_tree(totals);
}

// CudaBackend::sum_doubles: pass 1 over math::sum_blocks(count) blocks when more than one, then
// one block over the values or the block totals.
inline double emulate_sum_doubles(const std::vector<double>& values) {
  const uint32_t threads = math::kSumThreads;
  auto one_block = [&](const double* v, size_t count, size_t block, size_t blocks) {
    std::vector<double> per_thread(threads);
    for (uint32_t t = 0; t < threads; ++t)
      per_thread[t] = math::strided_sum(v, count, block * threads + t, blocks * threads);
    return block_sum_tree(per_thread);
  };
  const uint32_t blocks = math::sum_blocks(values.size());
  if (blocks == 1) return one_block(values.data(), values.size(), 0, 1);
  std::vector<double> partial(blocks);
  for (uint32_t b = 0; b < blocks; ++b)
    partial[b] = one_block(values.data(), values.size(), b, blocks);
  return one_block(partial.data(), partial.size(), 0, 1);
}

// Pass 1 of a column reduction: partial[i] for every thread i of the flat (tile, column) space,
// tile = i / cols, column = i % cols, as column_partials_kernel.
template <typename Term>
std::vector<double> emulate_column_partials(const std::vector<float>& x, uint32_t rows,
                                            uint32_t cols, math::ColumnTiles t, Term term) {
  std::vector<double> partial(size_t(t.tiles) * cols);
  for (size_t i = 0; i < partial.size(); ++i)
    partial[i] = math::column_tile_sum(x.data(), rows, cols, uint32_t(i % cols), uint32_t(i / cols),
                                       t, term);
  return partial;
}

// CudaBackend::column_sums.
inline std::vector<float> emulate_column_sums(const std::vector<float>& x, uint32_t rows,
                                              uint32_t cols, float alpha, float beta,
                                              std::vector<float> out) {
  const math::ColumnTiles t = math::column_tiles(rows, cols);
  const std::vector<double> partial = emulate_column_partials(x, rows, cols, t, math::PlainTerm{});
  for (uint32_t c = 0; c < cols; ++c)
    out[c] =
        math::column_sum_value(alpha, math::column_total(partial.data(), cols, c, t), beta, out[c]);
  return out;
}

// CudaBackend::clip_column_norms.
inline std::vector<float> emulate_clip_column_norms(std::vector<float> w, uint32_t rows,
                                                    uint32_t cols, float max_norm) {
  const math::ColumnTiles t = math::column_tiles(rows, cols);
  const std::vector<double> partial = emulate_column_partials(w, rows, cols, t, math::SquareTerm{});
  std::vector<float> factor(cols);
  for (uint32_t c = 0; c < cols; ++c)
    factor[c] = math::clip_scale(math::column_total(partial.data(), cols, c, t), max_norm);
  for (size_t i = 0; i < w.size(); ++i)
    if (factor[i % cols] != 1.0f) w[i] *= factor[i % cols];
  return w;
}

// CudaBackend::sparseness_penalty: the penalty returned, and delta updated.
inline double emulate_sparseness_penalty(const std::vector<float>& a, uint32_t rows, uint32_t cols,
                                         float p, float beta, std::vector<float>* delta) {
  const math::ColumnTiles t = math::column_tiles(rows, cols);
  const std::vector<double> partial = emulate_column_partials(a, rows, cols, t, math::PlainTerm{});
  std::vector<double> value(cols);
  std::vector<float> grad(cols);
  for (uint32_t c = 0; c < cols; ++c) {
    const double rho = math::sparseness_rho(math::column_total(partial.data(), cols, c, t), rows);
    value[c] = math::kl_divergence(p, rho);
    grad[c] = math::sparseness_gradient(p, beta, rho);
  }
  if (delta)
    for (size_t i = 0; i < delta->size(); ++i) (*delta)[i] += grad[i % cols];
  return double(rows) * double(beta) * emulate_sum_doubles(value);
}

}  // namespace nn::test
