// The summation orders of the CUDA backend's parallel reductions, as __host__ __device__
// functions: the kernels (cuda/dense.cu column sums, cuda/norm.cu column norms and sparseness
// penalty, cuda/backend.cu sum_doubles) call them per thread, and the host tests
// (tests/unit/backend/kernel_math_reduce_test.cpp) call the same functions over the same index
// space, so "the same order" is one piece of code. Every order is a function of the shape alone
// (never of the device or of timing): the same inputs give the same bits on every run and GPU.
//
// Column reductions over a row-major [rows][cols] matrix, in double:
//   pass 1  the rows are cut into `tiles` consecutive tiles of `tile_rows` rows (the last may be
//           shorter); one thread per (tile, column) sums its tile's rows in row order;
//   pass 2  one thread per column sums the tiles' partial sums in tile order.
// So a column's sum is ((x0 + x1 + ... ) + (x_t + ...)) + ..., tile by tile. With one tile it is
// the rows in order, the CPU backend's order exactly (bit for bit); with several, the CPU's
// result to rounding in double. Tiles are used only when the columns alone cannot fill the GPU
// (fewer than kColumnTargetThreads columns) and there are more than kColumnTileMinRows rows.
//
// sum_doubles: `blocks` blocks of kSumThreads threads (sum_blocks(count)); thread t of block b
// sums values b * kSumThreads + t, then every blocks * kSumThreads further (in order), the block
// adds its threads' sums by cuda::block_sum's fixed tree; one more block sums the block totals
// the same way. One block (count <= kSumPerBlock) is the single-block sum used before.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backend/math/fast_math.h"

namespace nn::math {

// Column tiling: enough (tile, column) threads to fill a GPU, tiles of at least
// kColumnTileMinRows rows, at most kColumnMaxTiles tiles (pass 2 is serial over them).
constexpr uint32_t kColumnTargetThreads = 1u << 16;
constexpr uint32_t kColumnTileMinRows = 32;
constexpr uint32_t kColumnMaxTiles = 1024;

struct ColumnTiles {
  uint32_t tiles = 1, tile_rows = 1;
};

NN_FORCE_INLINE ColumnTiles column_tiles(uint32_t rows, uint32_t cols) {
  ColumnTiles t;
  const uint64_t wanted = cols ? (uint64_t(kColumnTargetThreads) + cols - 1) / cols : 1;
  const uint64_t most = uint64_t(rows) / kColumnTileMinRows;  // tiles of at least the minimum
  uint64_t tiles = wanted < most ? wanted : most;
  if (tiles > kColumnMaxTiles) tiles = kColumnMaxTiles;
  if (tiles < 1) tiles = 1;
  t.tile_rows = uint32_t((uint64_t(rows) + tiles - 1) / tiles);
  if (t.tile_rows < 1) t.tile_rows = 1;
  // Recount: ceil(rows / tile_rows) may be fewer than asked (no empty tile).
  t.tiles = uint32_t((uint64_t(rows) + t.tile_rows - 1) / t.tile_rows);
  if (t.tiles < 1) t.tiles = 1;
  return t;
}

// What a column reduction adds per element.
struct PlainTerm {
  NN_FORCE_INLINE double operator()(double acc, float v) const { return acc + double(v); }
};
// The squared length: an explicit fused multiply-add, so the host and the device round alike
// (the CPU backend's loop is contracted to the same fma by GCC).
struct SquareTerm {
  NN_FORCE_INLINE double operator()(double acc, float v) const {
    return fma(double(v), double(v), acc);
  }
};

// Pass 1: column c's terms over the rows of one tile, in row order.
template <typename Term>
NN_FORCE_INLINE double column_tile_sum(const float* x, uint32_t rows, uint32_t cols, uint32_t c,
                                       uint32_t tile, ColumnTiles t, Term term) {
  const uint64_t lo = uint64_t(tile) * t.tile_rows;
  const uint64_t end = lo + t.tile_rows;
  const uint64_t hi = end < rows ? end : rows;
  double acc = 0.0;
  for (uint64_t r = lo; r < hi; ++r) acc = term(acc, x[r * cols + c]);
  return acc;
}

// Pass 2: column c's total from the partial sums partial[tile * cols + c], in tile order.
NN_FORCE_INLINE double column_total(const double* partial, uint32_t cols, uint32_t c,
                                    ColumnTiles t) {
  double acc = 0.0;
  for (uint32_t tile = 0; tile < t.tiles; ++tile) acc += partial[size_t(tile) * cols + c];
  return acc;
}

// sum_doubles' grid.
constexpr uint32_t kSumThreads = 256;
constexpr size_t kSumPerBlock = size_t(kSumThreads) * 16;
constexpr uint32_t kSumMaxBlocks = 256;

NN_FORCE_INLINE uint32_t sum_blocks(size_t count) {
  const size_t blocks = (count + kSumPerBlock - 1) / kSumPerBlock;
  return blocks < 1 ? 1u : (blocks > kSumMaxBlocks ? kSumMaxBlocks : uint32_t(blocks));
}

// One thread's share: values[first], values[first + stride], ... in order.
NN_FORCE_INLINE double strided_sum(const double* values, size_t count, size_t first,
                                   size_t stride) {
  double acc = 0.0;
  for (size_t i = first; i < count; i += stride) acc += values[i];
  return acc;
}

}  // namespace nn::math
