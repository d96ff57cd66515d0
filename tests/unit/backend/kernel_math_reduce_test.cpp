// Host tests (HostKernelMath, no GPU needed) of the CUDA backend's parallel reductions: column sums
// (cuda/dense.cu), column norms and the sparseness penalty (cuda/norm.cu), and sum_doubles
// (cuda/backend.cu), all in the orders of backend/math/reduce_math.h. The emulation
// (reduce_emulation.h) runs the kernels' own functions over their index spaces; it is compared
//   * exactly with the documented order written out plainly here (rows of a tile in order, then
//     the tiles in order; a block's strided sums, then its tree), so a change of order in the
//     shared functions fails;
//   * with the CPU backend: bit for bit where the order is the CPU's (one tile), else within
//     the rounding of double sums (1e-12 relative before the final float rounding).
// cuda/cuda_reduce_test.cpp compares the GPU with the same emulation bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/math/reduce_math.h"
#include "backend/reduce_emulation.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

using test::bitwise_equal;

struct Shape {
  uint32_t rows, cols;
};
// One tile (few rows, or enough columns) and several (few columns, many rows; a short last tile).
const Shape kShapes[] = {{1, 1},    {5, 7},     {32, 3},     {33, 3},    {1000, 1},  {4097, 3},
                         {257, 70}, {2000, 65}, {31, 70000}, {200, 129}, {64, 1024}, {0, 5}};

// The documented order, written out: per column, each tile's rows in order from 0.0, then the
// tiles' sums in order from 0.0.
template <typename Term>
std::vector<double> documented_column_totals(const std::vector<float>& x, uint32_t rows,
                                             uint32_t cols, Term term) {
  const math::ColumnTiles t = math::column_tiles(rows, cols);
  std::vector<double> total(cols);
  for (uint32_t c = 0; c < cols; ++c) {
    double all = 0.0;
    for (uint32_t tile = 0; tile < t.tiles; ++tile) {
      double part = 0.0;
      for (uint32_t r = tile * t.tile_rows; r < rows && r < (tile + 1) * t.tile_rows; ++r)
        part = term(part, x[size_t(r) * cols + c]);
      all += part;
    }
    total[c] = all;
  }
  return total;
}

TEST(HostKernelMath, ColumnTilesCoverEveryRowOnce) {
  for (uint32_t rows : {0u, 1u, 31u, 32u, 33u, 100u, 1024u, 4097u, 100000u, 4000000u})
    for (uint32_t cols : {1u, 3u, 64u, 65u, 1000u, 65536u, 1000000u}) {
      const math::ColumnTiles t = math::column_tiles(rows, cols);
      ASSERT_GE(t.tiles, 1u);
      ASSERT_GE(t.tile_rows, 1u);
      ASSERT_LE(t.tiles, math::kColumnMaxTiles);
      // Every row in exactly one tile, no empty tile.
      EXPECT_GE(uint64_t(t.tiles) * t.tile_rows, rows) << rows << "x" << cols;
      if (rows > 0) EXPECT_LT(uint64_t(t.tiles - 1) * t.tile_rows, rows) << rows << "x" << cols;
      // Tiles only when the columns cannot fill the GPU, never shorter than the minimum (but the
      // last).
      if (cols >= math::kColumnTargetThreads || rows <= math::kColumnTileMinRows)
        EXPECT_EQ(t.tiles, 1u) << rows << "x" << cols;
      if (t.tiles > 1) EXPECT_GE(t.tile_rows, math::kColumnTileMinRows) << rows << "x" << cols;
    }
  EXPECT_GT(math::column_tiles(1024, 128).tiles, 1u);  // the case the tiling is for
}

// The double totals themselves, on values spread over 2^-40 .. 2^40 so that the order of the
// additions shows in the bits (sums of floats of similar size in double are mostly exact).
TEST(HostKernelMath, ColumnTotalsFollowTheDocumentedOrderExactly) {
  Rng rng(45);
  for (const Shape s : kShapes) {
    std::vector<float> x(size_t(s.rows) * s.cols);
    for (float& v : x)
      v = float((rng.uniform() - 0.5) * std::ldexp(1.0, int(80 * rng.uniform()) - 40));
    const math::ColumnTiles t = math::column_tiles(s.rows, s.cols);
    const auto check = [&](auto term, const char* what) {
      const std::vector<double> partial = test::emulate_column_partials(x, s.rows, s.cols, t, term);
      const std::vector<double> want = documented_column_totals(x, s.rows, s.cols, term);
      for (uint32_t c = 0; c < s.cols; ++c) {
        const double got = math::column_total(partial.data(), s.cols, c, t);
        ASSERT_EQ(std::memcmp(&got, &want[c], sizeof got), 0)
            << what << " " << s.rows << "x" << s.cols << " column " << c;
      }
    };
    check(math::PlainTerm{}, "sum");
    check(math::SquareTerm{}, "squares");
  }
}

TEST(HostKernelMath, ColumnSumsInTheDocumentedOrderMatchTheCpuBackend) {
  CpuBackend cpu(2);
  Rng rng(41);
  for (const Shape s : kShapes) {
    const std::vector<float> x = test::uniform(size_t(s.rows) * s.cols, rng, -1.0, 1.0);
    const std::vector<float> out0 = test::uniform(s.cols, rng, -1.0, 1.0);
    const bool one_tile = math::column_tiles(s.rows, s.cols).tiles == 1;
    for (float beta : {0.0f, 0.75f}) {
      std::vector<float> want = out0;
      cpu.column_sums(x.data(), s.rows, s.cols, 0.25f, beta, want.data());
      const std::vector<float> got =
          test::emulate_column_sums(x, s.rows, s.cols, 0.25f, beta, out0);
      // The documented order exactly.
      const std::vector<double> total =
          documented_column_totals(x, s.rows, s.cols, math::PlainTerm{});
      std::vector<float> documented = out0;
      for (uint32_t c = 0; c < s.cols; ++c)
        documented[c] = math::column_sum_value(0.25f, total[c], beta, out0[c]);
      EXPECT_TRUE(bitwise_equal(got, documented)) << s.rows << "x" << s.cols;
      if (one_tile)
        EXPECT_TRUE(bitwise_equal(got, want)) << s.rows << "x" << s.cols;
      else
        EXPECT_TRUE(test::all_near(got, std::vector<double>(want.begin(), want.end()), 1e-6, 1e-6))
            << s.rows << "x" << s.cols;
    }
  }
}

TEST(HostKernelMath, ColumnNormsInTheDocumentedOrderMatchTheCpuBackend) {
  CpuBackend cpu(2);
  Rng rng(42);
  for (const Shape s : kShapes) {
    const std::vector<float> w = test::uniform(size_t(s.rows) * s.cols, rng, -0.2, 0.2);
    // A limit just below the expected column length: most columns are clipped.
    const float max_norm = float(0.9 * 0.2 / std::sqrt(3.0) * std::sqrt(double(s.rows)));
    std::vector<float> want = w;
    cpu.clip_column_norms(want.data(), s.rows, s.cols, max_norm);
    const std::vector<float> got = test::emulate_clip_column_norms(w, s.rows, s.cols, max_norm);
    const std::vector<double> total =
        documented_column_totals(w, s.rows, s.cols, math::SquareTerm{});
    std::vector<float> documented = w;
    for (size_t i = 0; i < w.size(); ++i)
      documented[i] *= math::clip_scale(total[i % s.cols], max_norm);
    EXPECT_TRUE(bitwise_equal(got, documented)) << s.rows << "x" << s.cols;
    if (math::column_tiles(s.rows, s.cols).tiles == 1)
      EXPECT_TRUE(bitwise_equal(got, want)) << s.rows << "x" << s.cols;
    else
      EXPECT_TRUE(test::all_near(got, std::vector<double>(want.begin(), want.end()), 1e-7, 1e-6))
          << s.rows << "x" << s.cols;
    if (s.rows > 1 && s.cols > 1) EXPECT_FALSE(bitwise_equal(got, w)) << "nothing was clipped";
  }
}

TEST(HostKernelMath, SparsenessPenaltyInTheDocumentedOrderMatchesTheCpuBackend) {
  CpuBackend cpu(2);
  Rng rng(43);
  for (const Shape s : kShapes) {
    if (s.rows == 0) continue;  // no penalty (both return 0 before any work)
    const std::vector<float> a = test::uniform(size_t(s.rows) * s.cols, rng, 0.0, 0.3);
    const std::vector<float> d0 = test::uniform(size_t(s.rows) * s.cols, rng, -1.0, 1.0);
    const float p = 0.05f, beta = 0.7f;
    std::vector<float> d_cpu = d0, d_emu = d0;
    const double v_cpu = cpu.sparseness_penalty(a.data(), s.rows, s.cols, p, beta, d_cpu.data());
    const double v_emu = test::emulate_sparseness_penalty(a, s.rows, s.cols, p, beta, &d_emu);
    EXPECT_NEAR(v_emu, v_cpu, 1e-12 * std::fabs(v_cpu)) << s.rows << "x" << s.cols;
    // The per-unit derivative from the same sums: identical bits with one tile.
    if (math::column_tiles(s.rows, s.cols).tiles == 1)
      EXPECT_TRUE(bitwise_equal(d_emu, d_cpu)) << s.rows << "x" << s.cols;
    else
      EXPECT_TRUE(
          test::all_near(d_emu, std::vector<double>(d_cpu.begin(), d_cpu.end()), 1e-6, 1e-6))
          << s.rows << "x" << s.cols;
    // The documented order of the unit sums.
    const std::vector<double> total =
        documented_column_totals(a, s.rows, s.cols, math::PlainTerm{});
    std::vector<float> documented = d0;
    for (size_t i = 0; i < d0.size(); ++i)
      documented[i] +=
          math::sparseness_gradient(p, beta, math::sparseness_rho(total[i % s.cols], s.rows));
    EXPECT_TRUE(bitwise_equal(d_emu, documented)) << s.rows << "x" << s.cols;
  }
}

// sum_doubles: one block up to kSumPerBlock values (the single-block order used before: thread t
// sums t, t + 256, ...; then the tree), several blocks beyond; near the exact sum.
TEST(HostKernelMath, SumDoublesInTheDocumentedOrder) {
  Rng rng(44);
  for (size_t count : {size_t(0), size_t(1), size_t(255), size_t(256), size_t(4096), size_t(4097),
                       size_t(70001), size_t(1) << 20, size_t(3) << 20}) {
    std::vector<double> v(count);
    for (double& x : v) x = 1e3 * (rng.uniform() - 0.3);
    const double got = test::emulate_sum_doubles(v);
    // Written out: blocks x 256 threads strided, each block's tree, then one block's tree.
    const uint32_t blocks = math::sum_blocks(count);
    EXPECT_EQ(blocks, count <= math::kSumPerBlock
                          ? 1u
                          : std::min<size_t>(math::kSumMaxBlocks, (count + 4095) / 4096));
    std::vector<double> totals;
    for (uint32_t b = 0; b < blocks; ++b) {
      std::vector<double> threads(256, 0.0);
      for (size_t t = 0; t < 256; ++t)
        for (size_t i = b * 256 + t; i < count; i += size_t(blocks) * 256) threads[t] += v[i];
      totals.push_back(test::block_sum_tree(threads));
    }
    double documented = totals[0];
    if (blocks > 1) {
      std::vector<double> threads(256, 0.0);
      for (size_t i = 0; i < totals.size(); ++i) threads[i % 256] += totals[i];
      documented = test::block_sum_tree(threads);
    }
    EXPECT_EQ(std::memcmp(&got, &documented, sizeof got), 0) << count;
    long double exact = 0.0L;
    for (double x : v) exact += x;
    EXPECT_NEAR(got, double(exact), 1e-12 * (1.0 + std::fabs(double(exact)))) << count;
  }
}

}  // namespace
}  // namespace nn
