// DotProduct and Cosine pooling on the CPU: one score per row from two [rows][cols] sources,
// and its gradient (per-row arithmetic in backend/math/similarity_math.h, shared with the CUDA
// backend). Rows are independent, so they are spread over the pool; each row is reduced
// by one task in double, in a fixed order, so results do not depend on the thread count.
// The backward recomputes the dot product and norms from the inputs rather than keeping them
// from the forward: the kernels stay stateless and the extra pass is as cheap as the forward.
#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/similarity_math.h"
#include "core/error.h"

namespace nn {
namespace {

// Below this many elements handing rows to other threads costs more than it saves.
constexpr size_t kParallelMin = size_t(1) << 15;
constexpr double kEps = Backend::kCosineEpsilon;

struct RowSums {
  double dot = 0.0, aa = 0.0, bb = 0.0;
};

RowSums row_sums(const float* a, const float* b, uint32_t cols, bool norms) {
  RowSums s;
  double dot = 0.0, aa = 0.0, bb = 0.0;
  if (norms) {
#pragma omp simd reduction(+ : dot, aa, bb)
    for (uint32_t c = 0; c < cols; ++c) {
      dot += double(a[c]) * double(b[c]);
      aa += double(a[c]) * double(a[c]);
      bb += double(b[c]) * double(b[c]);
    }
  } else {
#pragma omp simd reduction(+ : dot)
    for (uint32_t c = 0; c < cols; ++c) dot += double(a[c]) * double(b[c]);
  }
  s.dot = dot;
  s.aa = aa;
  s.bb = bb;
  return s;
}

void check(PoolingFunction f, const char* kernel) {
  NN_CHECK(f == PoolingFunction::DotProduct || f == PoolingFunction::Cosine,
           std::string(kernel) + ": " + to_string(f) + " is not a similarity function");
}

template <typename F>
void for_rows(cpu::ThreadPool& pool, uint32_t rows, uint32_t cols, const F& body) {
  auto range = [&body](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) body(r);
  };
  if (size_t(rows) * cols >= kParallelMin)
    cpu::parallel_ranges(pool, rows, std::max<size_t>(1, cpu::kMinTaskFloats / std::max(cols, 1u)),
                         range);
  else
    range(0, rows);
}

// x[c] += p * u[c] - q * v[c]
void add_two(float* x, uint32_t cols, float p, const float* u, float q, const float* v) {
#pragma omp simd
  for (uint32_t c = 0; c < cols; ++c) x[c] = math::similarity_grad_unit(x[c], p, u[c], q, v[c]);
}

}  // namespace

void CpuBackend::similarity_forward(PoolingFunction f, uint32_t rows, uint32_t cols, const float* a,
                                    const float* b, float* y, uint32_t y_stride) {
  check(f, "similarity_forward");
  const bool cosine = f == PoolingFunction::Cosine;
  for_rows(*pool_, rows, cols, [=](size_t r) {
    const RowSums s = row_sums(a + r * cols, b + r * cols, cols, cosine);
    y[r * y_stride] = float(math::similarity_score(cosine, s.dot, s.aa, s.bb, kEps));
  });
}

void CpuBackend::similarity_backward(PoolingFunction f, uint32_t rows, uint32_t cols,
                                     const float* a, const float* b, const float* dy,
                                     uint32_t dy_stride, float* da, float* db) {
  check(f, "similarity_backward");
  if (!da && !db) return;
  const bool cosine = f == PoolingFunction::Cosine;
  for_rows(*pool_, rows, cols, [=](size_t r) {
    const float* ar = a + r * cols;
    const float* br = b + r * cols;
    const double g = dy[r * dy_stride];
    // d(score)/da = pa * b - qa * a and d(score)/db = pb * a - qb * b.
    RowSums sums;
    if (cosine) sums = row_sums(ar, br, cols, true);
    const math::SimilarityGrad c =
        math::similarity_grad(cosine, g, sums.dot, sums.aa, sums.bb, kEps);
    // Both terms read only a and b, so da and db may be the same array.
    if (da) add_two(da + r * cols, cols, c.pa, br, c.qa, ar);
    if (db) add_two(db + r * cols, cols, c.pb, ar, c.qb, br);
  });
}

}  // namespace nn
