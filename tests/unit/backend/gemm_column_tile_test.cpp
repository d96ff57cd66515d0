// CpuBackend::gemm's fixed column tiles (Backend::gemm_column_tile): a product over a slice of
// C's columns that starts at a multiple of the tile and ends at one or at C's last column has
// the whole product's bits (OpenBLAS alone does not promise it: it sums a column with other
// kernels depending on where the column falls in a call), with B plain or transposed, and the
// product does not depend on the thread count. The blocked top-K of predict/blocked_top_k.h
// relies on both.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend_test_util.h"
#include "core/random.h"

namespace nn {
namespace {

struct Product {
  int m, n, k;
  std::vector<float> a, b, bias;
};

Product random_product(int m, int n, int k) {
  Rng rng(11);
  return {m,
          n,
          k,
          test::uniform(size_t(m) * k, rng, -1, 1),
          test::uniform(size_t(k) * n, rng, -1, 1),
          test::uniform(size_t(n), rng, -1, 1)};
}

// Columns [lo, hi) of bias + A op(B), computed by one gemm over those columns only.
std::vector<float> columns(CpuBackend& be, const Product& p, bool trans_b, int lo, int hi) {
  const int w = hi - lo;
  std::vector<float> c(size_t(p.m) * w);
  for (int r = 0; r < p.m; ++r) std::memcpy(&c[size_t(r) * w], &p.bias[lo], w * sizeof(float));
  // B is [k][n], or (transposed) the same values stored [n][k].
  std::vector<float> bt;
  const float* b = p.b.data() + lo;
  int ldb = p.n;
  if (trans_b) {
    bt.resize(p.b.size());
    for (int i = 0; i < p.k; ++i)
      for (int j = 0; j < p.n; ++j) bt[size_t(j) * p.k + i] = p.b[size_t(i) * p.n + j];
    b = bt.data() + size_t(lo) * p.k;
    ldb = p.k;
  }
  be.gemm(false, trans_b, p.m, w, p.k, 1.0f, p.a.data(), p.k, b, ldb, 1.0f, c.data(), w);
  return c;
}

TEST(GemmColumnTile, SlicesAtTilesHaveTheWholeProductsBits) {
  CpuBackend be(2);
  const int tile = int(be.gemm_column_tile());
  ASSERT_EQ(tile, int(kGemmColumnTile));
  ASSERT_GT(tile, 0);
  // Large enough for the threaded path; n is not a multiple of the tile.
  const Product p = random_product(48, 6 * tile + 77, 96);
  for (bool trans_b : {false, true}) {
    const std::vector<float> whole = columns(be, p, trans_b, 0, p.n);
    // Slices one tile wide, several tiles wide, and the last one (ending at C's last column).
    for (auto [lo, hi] :
         {std::pair<int, int>{0, tile}, {tile, 3 * tile}, {3 * tile, p.n}, {5 * tile, p.n}}) {
      const std::vector<float> part = columns(be, p, trans_b, lo, hi);
      const int w = hi - lo;
      size_t differing = 0;
      for (int r = 0; r < p.m; ++r)
        differing += std::memcmp(&part[size_t(r) * w], &whole[size_t(r) * p.n + lo],
                                 size_t(w) * sizeof(float)) != 0;
      EXPECT_EQ(differing, 0u) << "trans_b " << trans_b << " columns " << lo << ".." << hi;
    }
  }
}

TEST(GemmColumnTile, TheProductDoesNotDependOnTheThreads) {
  const Product p = random_product(64, 5 * int(kGemmColumnTile) + 3, 80);
  CpuBackend one(1), two(2), three(3);
  const std::vector<float> want = columns(one, p, false, 0, p.n);
  EXPECT_EQ(columns(two, p, false, 0, p.n), want);
  EXPECT_EQ(columns(three, p, false, 0, p.n), want);
}

}  // namespace
}  // namespace nn
