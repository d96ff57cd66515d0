// CpuBackend's batch-invariant gemm (CpuBackend::set_batch_invariant): C = alpha * op(A) op(B) +
// beta * C where every element of C is one chain of multiply-adds over k in order 0..k-1, run by
// the same instructions whatever m is and wherever its row sits in the batch. A row's result then
// depends on that row alone, which OpenBLAS does not promise: its sgemm picks kernels and edge
// paths by m (the MovieLens output layer's scores differed in the last bits between a batch of 1
// and a batch of 64). nn-serve needs the promise, because it gathers concurrent requests into one
// minibatch and must answer each exactly as it would have answered it alone.
//
// Layout: C is cut into strips of kStrip columns (tasks on the pool by strip, so the work split
// depends on n only) and each strip into blocks of kRows rows, the last rows one at a time. A
// block accumulates its sums in registers while it walks k, and every sum is a * b rounded, then
// added and rounded, in k order, whichever kernel runs it (no fused multiply-add: see block()).
// op(A) is packed once per call (m x k floats); a strip of op(B) (k x kStrip floats, 16 KiB for
// k = 256) stays in L1 across the blocks.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/dense_math.h"

namespace nn {
namespace {

// Eight floats in one register (AVX); GCC's vector extension, lowered to whatever the target has.
typedef float v8 __attribute__((vector_size(32)));

constexpr int kRows = 4;    // rows of C per block (the last rows of a batch go one at a time)
constexpr int kStrip = 16;  // columns of C per strip: two v8 per row
// Below this many flops the strips run on the calling thread.
constexpr double kParallelFlops = 4e6;

// C rows [i0, i0 + R) x the strip's 16 columns += op(A) rows x the packed strip of op(B). Each
// element is t = a * b, then acc = acc + t, rounded at each step: this file is compiled with
// -ffp-contract=off (src/engine/CMakeLists.txt), so no compiler may fuse them into an FMA in one
// kernel and not in the other, and R = 4 and R = 1 give every row the same bits.
template <int R>
void block(const float* a, int k, const float* bp, size_t ldbp, v8 (&acc)[R][2]) {
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = v8{};
  for (int kk = 0; kk < k; ++kk) {
    v8 b0, b1;
    std::memcpy(&b0, bp + size_t(kk) * ldbp, sizeof b0);
    std::memcpy(&b1, bp + size_t(kk) * ldbp + 8, sizeof b1);
    for (int r = 0; r < R; ++r) {
      const float av = a[size_t(r) * k + kk];
      acc[r][0] = acc[r][0] + av * b0;
      acc[r][1] = acc[r][1] + av * b1;
    }
  }
}

struct Operands {
  bool trans_b;
  int m, n, k;
  float alpha;
  const float* a;  // op(A) packed row-major [m][k]
  const float* b;
  int ldb;
  float beta;
  float* c;
  int ldc;
};

template <int R>
void store(const Operands& g, int i0, int j0, int width, const v8 (&acc)[R][2]) {
  for (int r = 0; r < R; ++r) {
    float sums[kStrip];
    std::memcpy(sums, &acc[r][0], sizeof(v8));
    std::memcpy(sums + 8, &acc[r][1], sizeof(v8));
    float* crow = g.c + size_t(i0 + r) * g.ldc + j0;
    for (int j = 0; j < width; ++j)
      crow[j] = g.alpha * sums[j] + math::beta_scaled(g.beta, crow[j]);
  }
}

// Columns [j0, j0 + width) of every row of C (width <= kStrip); `bp` is scratch for the strip.
void strip(const Operands& g, int j0, int width, std::vector<float>& bp) {
  const int k = g.k;
  // op(B)'s rows are read in place when they hold the whole strip; otherwise (B transposed, or
  // the ragged last strip) op(B)[0..k)[j0 .. j0 + width) is packed, zero-padded to kStrip.
  const float* b = g.b + j0;
  size_t ldbp = size_t(g.ldb);
  if (g.trans_b || width < kStrip) {
    bp.assign(size_t(k) * kStrip, 0.0f);
    for (int kk = 0; kk < k; ++kk)
      for (int j = 0; j < width; ++j)
        bp[size_t(kk) * kStrip + j] =
            g.trans_b ? g.b[size_t(j0 + j) * g.ldb + kk] : g.b[size_t(kk) * g.ldb + j0 + j];
    b = bp.data();
    ldbp = kStrip;
  }
  int i0 = 0;
  for (; i0 + kRows <= g.m; i0 += kRows) {
    v8 acc[kRows][2];
    block<kRows>(g.a + size_t(i0) * k, k, b, ldbp, acc);
    store<kRows>(g, i0, j0, width, acc);
  }
  for (; i0 < g.m; ++i0) {
    v8 acc[1][2];
    block<1>(g.a + size_t(i0) * k, k, b, ldbp, acc);
    store<1>(g, i0, j0, width, acc);
  }
}

}  // namespace

void CpuBackend::gemm_batch_invariant(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                                      const float* a, int lda, const float* b, int ldb, float beta,
                                      float* c, int ldc) {
  if (m <= 0 || n <= 0) return;
  k = std::max(k, 0);
  // op(A) packed once for every strip (row-major [m][k]).
  std::vector<float> ap(size_t(m) * k);
  for (int i = 0; i < m; ++i)
    for (int kk = 0; kk < k; ++kk)
      ap[size_t(i) * k + kk] = trans_a ? a[size_t(kk) * lda + i] : a[size_t(i) * lda + kk];
  const Operands g{trans_b, m, n, k, alpha, ap.data(), b, ldb, beta, c, ldc};
  const int strips = (n + kStrip - 1) / kStrip;
  // Tasks are groups of whole strips; which thread runs a strip never changes its sums.
  const int per_task = std::max(1, strips / (4 * threads_));
  const int tasks = (strips + per_task - 1) / per_task;
  auto task = [&](size_t t) {
    std::vector<float> bp;
    const int first = int(t) * per_task, last = std::min(strips, first + per_task);
    for (int s = first; s < last; ++s) strip(g, s * kStrip, std::min(kStrip, n - s * kStrip), bp);
  };
  if (threads_ <= 1 || 2.0 * m * n * k < kParallelFlops) {
    for (int t = 0; t < tasks; ++t) task(size_t(t));
  } else {
    pool_->run(size_t(tasks), task);
  }
}

}  // namespace nn
