// cuBLASLt plans for the bias-epilogue product of CudaBackend::gemm_bias (cuda/dense_lt.cpp):
// C[m][n] = op(A) op(B) + bias as one cublasLtMatmul, so the bias is not written by a pass of its
// own and C is not read back (beta = 0). A plan (descriptors and the algorithm cuBLASLt's
// heuristic picked) is made once per shape, precision and operand alignment and kept; a shape
// for which cuBLASLt offers no algorithm is remembered too, and the caller falls back to
// broadcast_bias + gemm.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <tuple>

namespace nn::cuda {

// Workspace handed to every cuBLASLt call (NVIDIA's recommendation for Hopper).
constexpr size_t kLtWorkspaceBytes = size_t(32) << 20;

// What a plan depends on. Row-major operands as gemm takes them; bf16: A and B are BF16 copies
// (else FP32, with TF32 tensor cores when tf32); align_*: the largest power of two up to 256
// dividing the address (cuBLASLt's heuristic must not pick kernels that assume more).
struct LtShape {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0, lda = 0, ldb = 0;
  bool bf16 = false, tf32 = false;
  uint32_t align_a = 0, align_b = 0, align_c = 0;
  auto tie() const {
    return std::tie(trans_a, trans_b, m, n, k, lda, ldb, bf16, tf32, align_a, align_b, align_c);
  }
  bool operator<(const LtShape& o) const { return tie() < o.tie(); }
};

// Largest power of two (at most 256) that divides the address.
uint32_t alignment_of(const void* p);

class LtPlans {
 public:
  LtPlans();
  ~LtPlans();
  LtPlans(const LtPlans&) = delete;
  LtPlans& operator=(const LtPlans&) = delete;

  // Enqueues C = op(A) op(B) + bias on `stream` and returns true, or returns false (nothing
  // enqueued) when cuBLASLt has no algorithm for `shape`. Throws BackendError when a call that
  // should work fails.
  bool run(cudaStream_t stream, const LtShape& shape, const void* a, const void* b,
           const float* bias, float* c, void* workspace);
  // Plans made so far and how many of them have no algorithm (for tests and --profile notes).
  size_t plans() const { return plans_.size(); }
  size_t unsupported() const;

 private:
  struct Plan {
    bool ok = false;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;  // cuBLASLt's A, B, C (= D)
    cublasLtMatmulAlgo_t algo{};
  };
  Plan make(const LtShape& shape);
  static void destroy(Plan& p) noexcept;

  cublasLtHandle_t handle_ = nullptr;
  std::map<LtShape, Plan> plans_;
};

}  // namespace nn::cuda
