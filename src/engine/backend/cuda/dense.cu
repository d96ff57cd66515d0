// CudaBackend dense kernels: gemm through cuBLAS (FP32 by default, TF32 tensor cores when the
// backend was created with tf32), bias broadcast and column sums (per-element rules in
// backend/math/dense_math.h, shared with the CPU backend). Column sums are a two-pass parallel
// reduction over (row tile, column) in double, in the fixed order of backend/math/reduce_math.h
// (column_partials, also used by cuda/norm.cu).
//
// BF16 precision (docs/wide-outputs.md, "BF16 arithmetic"): the FP32 operands are rounded to
// BF16 by a kernel (math::float_to_bf16, as the CPU backend does) into scratch slots, keeping
// their layout and leading dimension, and cublasGemmEx multiplies them with FP32 accumulation
// (CUBLAS_COMPUTE_32F) into the FP32 C.
//
// Row-major to cuBLAS: a row-major matrix is the column-major transpose, so C = op(A) op(B) is
// computed as C^T = op(B)^T op(A)^T with the operands swapped and the same transpose flags.
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_reduce.cuh"
#include "backend/cuda/device_guard.h"
#include "backend/math/bf16_math.h"
#include "backend/math/dense_math.h"
#include "backend/math/reduce_math.h"
#include "core/error.h"

namespace nn {
namespace {

// C = beta * C for a product with no terms (k == 0); beta == 0 writes zeros (even over NaN), as
// the CPU backend does.
__global__ void scale_matrix_kernel(float* c, int m, int n, int ldc, float beta) {
  const size_t total = size_t(m) * n;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    float* p = c + (i / n) * size_t(ldc) + i % n;
    *p = math::beta_scaled(beta, *p);
  }
}

__global__ void broadcast_bias_kernel(float* z, const float* bias, uint32_t rows, uint32_t cols,
                                      bool accumulate) {
  const size_t total = size_t(rows) * cols;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const float b = bias[i % cols];
    z[i] = accumulate ? z[i] + b : b;
  }
}

// Pass 1 of a column reduction (math/reduce_math.h): one thread per (tile, column); consecutive
// threads take consecutive columns, so the reads of a row are coalesced.
template <typename Term>
__global__ void column_partials_kernel(const float* x, uint32_t rows, uint32_t cols,
                                       math::ColumnTiles t, Term term, double* partial) {
  const size_t total = size_t(t.tiles) * cols;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x)
    partial[i] =
        math::column_tile_sum(x, rows, cols, uint32_t(i % cols), uint32_t(i / cols), t, term);
}

// Pass 2: each column's tiles in order, then out = beta * out + alpha * sum.
__global__ void column_sums_kernel(const double* partial, uint32_t cols, math::ColumnTiles t,
                                   float alpha, float beta, float* out) {
  for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < cols; c += gridDim.x * blockDim.x)
    out[c] = math::column_sum_value(alpha, math::column_total(partial, cols, c, t), beta, out[c]);
}

__global__ void convert_to_bf16_kernel(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    dst[i] = math::float_to_bf16(src[i]);
}

}  // namespace

void CudaBackend::set_precision(Precision p) {
  const cuda::DeviceGuard guard(device_);
  if (p == Precision::BF16) {
    int major = 0;
    NN_CUDA_CALL(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device_));
    if (major < 8)
      throw ConfigError(
          "cuda backend: BF16 arithmetic needs a GPU of compute capability 8.0 or "
          "newer (BF16 tensor cores); device " +
          std::to_string(device_) + " has " + std::to_string(major) +
          ".x; use precision FP32 (--precision fp32, the default)");
  }
  precision_ = p;
}

void CudaBackend::convert_to_bf16(const float* src, uint16_t* dst, size_t n) {
  const cuda::DeviceGuard guard(device_);
  if (n == 0) return;
  convert_to_bf16_kernel<<<grid_for(n), kThreads, 0, stream_>>>(src, dst, n);
  NN_CUDA_LAUNCHED("convert_to_bf16_kernel");
}

const uint16_t* CudaBackend::bf16_operand(Slot slot, const float* x, int rows, int cols, int ld) {
  const cuda::DeviceGuard guard(device_);
  const size_t span = math::operand_span(rows, cols, ld);
  auto* x16 = static_cast<uint16_t*>(scratch(slot, span * sizeof(uint16_t)));
  convert_to_bf16(x, x16, span);
  return x16;
}

void CudaBackend::gemm_bf16_b(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                              const float* a, int lda, const uint16_t* b16, int ldb, float beta,
                              float* c, int ldc) {
  const cuda::DeviceGuard guard(device_);
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // no products: C = beta * C, as gemm does it
    gemm(trans_a, trans_b, m, n, k, alpha, a, lda, nullptr, ldb, beta, c, ldc);
    return;
  }
  const uint16_t* a16 = bf16_operand(kSlotBf16A, a, trans_a ? k : m, trans_a ? m : k, lda);
  gemm_bf16_ab(trans_a, trans_b, m, n, k, alpha, a16, lda, b16, ldb, beta, c, ldc);
}

void CudaBackend::gemm_bf16_ab(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                               const uint16_t* a16, int lda, const uint16_t* b16, int ldb,
                               float beta, float* c, int ldc) {
  const cuda::DeviceGuard guard(device_);
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    gemm(trans_a, trans_b, m, n, k, alpha, nullptr, lda, nullptr, ldb, beta, c, ldc);
    return;
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B first, as in gemm.
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  NN_CUBLAS_CALL(cublasGemmEx(blas_, op_b, op_a, n, m, k, &alpha, b16, CUDA_R_16BF, ldb, a16,
                              CUDA_R_16BF, lda, &beta, c, CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
}

void CudaBackend::gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                       int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  const cuda::DeviceGuard guard(device_);
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    scale_matrix_kernel<<<grid_for(size_t(m) * n), kThreads, 0, stream_>>>(c, m, n, ldc, beta);
    NN_CUDA_LAUNCHED("scale_matrix_kernel");
    return;
  }
  if (precision_ == Precision::BF16) {
    const uint16_t* b16 = bf16_operand(kSlotBf16B, b, trans_b ? n : k, trans_b ? k : n, ldb);
    gemm_bf16_b(trans_a, trans_b, m, n, k, alpha, a, lda, b16, ldb, beta, c, ldc);
    return;
  }
  const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  NN_CUBLAS_CALL(cublasSgemm(blas_, op_b, op_a, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
}

void CudaBackend::broadcast_bias(float* z, const float* bias, uint32_t rows, uint32_t cols,
                                 bool accumulate) {
  const cuda::DeviceGuard guard(device_);
  const size_t total = size_t(rows) * cols;
  if (total == 0) return;
  broadcast_bias_kernel<<<grid_for(total), kThreads, 0, stream_>>>(z, bias, rows, cols, accumulate);
  NN_CUDA_LAUNCHED("broadcast_bias_kernel");
}

void CudaBackend::column_sums(const float* x, uint32_t rows, uint32_t cols, float alpha, float beta,
                              float* out) {
  const cuda::DeviceGuard guard(device_);
  if (cols == 0) return;
  const math::ColumnTiles t = math::column_tiles(rows, cols);
  const double* partial = cuda::column_partials(*this, x, rows, cols, t, false, kSlotA);
  column_sums_kernel<<<grid_for(cols), kThreads, 0, stream_>>>(partial, cols, t, alpha, beta, out);
  NN_CUDA_LAUNCHED("column_sums_kernel");
}

namespace cuda {

double* column_partials(CudaBackend& b, const float* x, uint32_t rows, uint32_t cols,
                        math::ColumnTiles t, bool squares, CudaBackend::Slot slot) {
  const size_t total = size_t(t.tiles) * cols;
  auto* partial = static_cast<double*>(b.scratch(slot, total * sizeof(double)));
  if (squares)
    column_partials_kernel<<<grid_for(total), kThreads, 0, b.stream()>>>(
        x, rows, cols, t, math::SquareTerm{}, partial);
  else
    column_partials_kernel<<<grid_for(total), kThreads, 0, b.stream()>>>(
        x, rows, cols, t, math::PlainTerm{}, partial);
  NN_CUDA_LAUNCHED("column_partials_kernel");
  return partial;
}

}  // namespace cuda
}  // namespace nn
