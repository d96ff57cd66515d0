// CudaBackend DotProduct and Cosine pooling (the CPU backend's cpu/similarity.cpp, with the
// per-row arithmetic of backend/math/similarity_math.h): one block per row. The row's sums
// (a.b, and |a|^2, |b|^2 for Cosine) are reduced in double by a fixed tree (cuda_reduce.cuh), so
// results are identical run to run and agree with the CPU's to rounding of the double sums.
// The backward recomputes the sums from a and b, as the CPU does, and then each thread updates
// its own elements of da and db in that order: da and db may be the same array.
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_reduce.cuh"
#include "backend/cuda/device_guard.h"
#include "backend/math/similarity_math.h"
#include "core/error.h"

namespace nn {
namespace {

struct Sums {
  double dot, aa, bb;
};

// The row's sums, valid in every thread of the block (aa and bb only when norms is set; norms is
// uniform over the block, so every thread reaches the same barriers).
__device__ Sums row_sums(const float* a, const float* b, uint32_t cols, bool norms,
                         double* shared) {
  double dot = 0.0, aa = 0.0, bb = 0.0;
  for (uint32_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const double x = a[c], y = b[c];
    dot += x * y;
    if (norms) {
      aa += x * x;
      bb += y * y;
    }
  }
  Sums s;
  s.dot = cuda::block_sum(dot, shared);
  s.aa = norms ? cuda::block_sum(aa, shared) : 0.0;
  s.bb = norms ? cuda::block_sum(bb, shared) : 0.0;
  return s;
}

__global__ void similarity_forward_kernel(bool cosine, uint32_t cols, const float* a,
                                          const float* b, float* y, uint32_t y_stride, double eps) {
  __shared__ double shared[32];
  const size_t r = blockIdx.x;
  const Sums s = row_sums(a + r * cols, b + r * cols, cols, cosine, shared);
  if (threadIdx.x == 0)
    y[r * y_stride] = float(math::similarity_score(cosine, s.dot, s.aa, s.bb, eps));
}

__global__ void similarity_backward_kernel(bool cosine, uint32_t cols, const float* a,
                                           const float* b, const float* dy, uint32_t dy_stride,
                                           float* da, float* db, double eps) {
  __shared__ double shared[32];
  const size_t r = blockIdx.x;
  const float* ar = a + r * cols;
  const float* br = b + r * cols;
  Sums s{0.0, 0.0, 0.0};
  if (cosine) s = row_sums(ar, br, cols, true, shared);
  const math::SimilarityGrad g =
      math::similarity_grad(cosine, double(dy[r * dy_stride]), s.dot, s.aa, s.bb, eps);
  float* dar = da ? da + r * cols : nullptr;
  float* dbr = db ? db + r * cols : nullptr;
  for (uint32_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float x = ar[c], v = br[c];
    // The a-term first, then the b-term, as the CPU's two passes (da may be db).
    if (dar) dar[c] = math::similarity_grad_unit(dar[c], g.pa, v, g.qa, x);
    if (dbr) dbr[c] = math::similarity_grad_unit(dbr[c], g.pb, x, g.qb, v);
  }
}

// The CPU backend's check, with its error type (a caller's bug, not a device failure).
void check_function(PoolingFunction f, const char* kernel) {
  NN_CHECK(f == PoolingFunction::DotProduct || f == PoolingFunction::Cosine,
           std::string(kernel) + ": " + to_string(f) + " is not a similarity function");
}

}  // namespace

void CudaBackend::similarity_forward(PoolingFunction f, uint32_t rows, uint32_t cols,
                                     const float* a, const float* b, float* y, uint32_t y_stride) {
  const cuda::DeviceGuard guard(device_);
  check_function(f, "similarity_forward");
  if (rows == 0) return;
  similarity_forward_kernel<<<rows, kThreads, 0, stream_>>>(f == PoolingFunction::Cosine, cols, a,
                                                            b, y, y_stride, double(kCosineEpsilon));
  NN_CUDA_LAUNCHED("similarity_forward_kernel");
}

void CudaBackend::similarity_backward(PoolingFunction f, uint32_t rows, uint32_t cols,
                                      const float* a, const float* b, const float* dy,
                                      uint32_t dy_stride, float* da, float* db) {
  const cuda::DeviceGuard guard(device_);
  check_function(f, "similarity_backward");
  if (rows == 0 || cols == 0 || (!da && !db)) return;
  similarity_backward_kernel<<<rows, kThreads, 0, stream_>>>(
      f == PoolingFunction::Cosine, cols, a, b, dy, dy_stride, da, db, double(kCosineEpsilon));
  NN_CUDA_LAUNCHED("similarity_backward_kernel");
}

}  // namespace nn
