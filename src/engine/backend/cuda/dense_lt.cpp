// CudaBackend::gemm_bias through cuBLASLt with a bias epilogue (cuda/dense_lt.h).
//
// Row-major to column-major as in cuda/dense.cu: C = op(A) op(B) is computed as the column-major
// C^T = op(B)^T op(A)^T, so cuBLASLt's "A" is our B and its "B" our A, with the same transpose
// flags, and C^T has n rows (our columns). cuBLASLt's bias epilogue adds a vector with one value
// per row of its D to every column, which is one value per column of our C to every row: the
// layer's bias.
#include "backend/cuda/dense_lt.h"

#include <algorithm>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_guard.h"
#include "core/error.h"

namespace nn {
namespace cuda {

uint32_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

LtPlans::LtPlans() {
  NN_CUBLAS_CALL(cublasLtCreate(&handle_));
}

LtPlans::~LtPlans() {
  for (auto& [shape, plan] : plans_) destroy(plan);
  if (handle_) cublasLtDestroy(handle_);
}

size_t LtPlans::unsupported() const {
  size_t n = 0;
  for (const auto& [shape, plan] : plans_) n += plan.ok ? 0 : 1;
  return n;
}

void LtPlans::destroy(Plan& p) noexcept {
  if (p.a) cublasLtMatrixLayoutDestroy(p.a);
  if (p.b) cublasLtMatrixLayoutDestroy(p.b);
  if (p.c) cublasLtMatrixLayoutDestroy(p.c);
  if (p.desc) cublasLtMatmulDescDestroy(p.desc);
  p = Plan{};
}

LtPlans::Plan LtPlans::make(const LtShape& s) {
  // Any status but success while planning (NOT_SUPPORTED for a combination this cuBLASLt lacks,
  // INVALID_VALUE for a preference it does not know) leaves the shape to broadcast + gemm, which
  // computes the same sum; only a failure of the product itself throws (run()).
  Plan p;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const bool planned = [&] {
    const cublasComputeType_t compute =
        s.tf32 && !s.bf16 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    if (cublasLtMatmulDescCreate(&p.desc, compute, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS)
      return false;
    const cublasOperation_t op_lt_a = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // our B
    const cublasOperation_t op_lt_b = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;  // our A
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bias_type = CUDA_R_32F;
    auto set = [&](cublasLtMatmulDescAttributes_t attribute, const void* value, size_t bytes) {
      return cublasLtMatmulDescSetAttribute(p.desc, attribute, value, bytes) ==
             CUBLAS_STATUS_SUCCESS;
    };
    if (!set(CUBLASLT_MATMUL_DESC_TRANSA, &op_lt_a, sizeof op_lt_a) ||
        !set(CUBLASLT_MATMUL_DESC_TRANSB, &op_lt_b, sizeof op_lt_b) ||
        !set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue) ||
        !set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof bias_type))
      return false;
    // Stored (column-major) shapes: our row-major B is (trans_b ? n x k : k x n) with ldb, which
    // column-major is its transpose; likewise A.
    const cudaDataType_t operand = s.bf16 ? CUDA_R_16BF : CUDA_R_32F;
    if (cublasLtMatrixLayoutCreate(&p.a, operand, s.trans_b ? s.k : s.n, s.trans_b ? s.n : s.k,
                                   s.ldb) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&p.b, operand, s.trans_a ? s.m : s.k, s.trans_a ? s.k : s.m,
                                   s.lda) != CUBLAS_STATUS_SUCCESS ||
        cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, s.n, s.m, s.n) != CUBLAS_STATUS_SUCCESS)
      return false;
    if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) return false;
    const uint64_t workspace = kLtWorkspaceBytes;
    const uint32_t align_lt_a = s.align_b, align_lt_b = s.align_a;
    auto prefer = [&](cublasLtMatmulPreferenceAttributes_t attribute, const void* value,
                      size_t bytes) {
      return cublasLtMatmulPreferenceSetAttribute(pref, attribute, value, bytes) ==
             CUBLAS_STATUS_SUCCESS;
    };
    if (!prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace) ||
        !prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_lt_a, sizeof align_lt_a) ||
        !prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_lt_b, sizeof align_lt_b) ||
        !prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &s.align_c, sizeof s.align_c) ||
        !prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &s.align_c, sizeof s.align_c))
      return false;
    return cublasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result,
                                          &found) == CUBLAS_STATUS_SUCCESS &&
           found > 0 && result.state == CUBLAS_STATUS_SUCCESS;
  }();
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (!planned) {
    destroy(p);
    return p;  // ok = false
  }
  p.algo = result.algo;
  p.ok = true;
  return p;
}

bool LtPlans::run(cudaStream_t stream, const LtShape& shape, const void* a, const void* b,
                  const float* bias, float* c, void* workspace) {
  auto it = plans_.find(shape);
  if (it == plans_.end()) it = plans_.emplace(shape, make(shape)).first;
  Plan& p = it->second;
  if (!p.ok) return false;
  NN_CUBLAS_CALL(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof bias));
  const float one = 1.0f, zero = 0.0f;
  NN_CUBLAS_CALL(cublasLtMatmul(handle_, p.desc, &one, b, p.a, a, p.b, &zero, c, p.c, c, p.c,
                                &p.algo, workspace, kLtWorkspaceBytes, stream));
  return true;
}

}  // namespace cuda

std::string CudaBackend::lt_note() const {
  const cuda::DeviceGuard guard(device_);  // (touches nothing on the device; every entry has one)
  if (!bias_epilogue_) return "cuBLASLt bias epilogue: off (NN_CUDA_BIAS_EPILOGUE=0)";
  if (!lt_) return "cuBLASLt bias epilogue: no product used it";
  const size_t fell_back = lt_->unsupported();
  return "cuBLASLt bias epilogue: " + std::to_string(lt_->plans() - fell_back) + " of " +
         std::to_string(lt_->plans()) + " product shapes" +
         (fell_back ? " (the others: broadcast_bias + gemm, no cuBLASLt algorithm)" : "");
}

void CudaBackend::gemm_bias(bool trans_a, bool trans_b, int m, int n, int k, const float* a,
                            const uint16_t* a16, int lda, const float* b, const uint16_t* b16,
                            int ldb, const float* bias, float* c) {
  const cuda::DeviceGuard guard(device_);
  if (m <= 0 || n <= 0) return;
  const bool given_bf16 = a16 != nullptr && b16 != nullptr;
  if (!given_bf16 && precision_ == Precision::BF16 && k > 0) {  // gemm's BF16 mode
    a16 = bf16_operand(kSlotBf16A, a, trans_a ? k : m, trans_a ? m : k, lda);
    b16 = bf16_operand(kSlotBf16B, b, trans_b ? n : k, trans_b ? k : n, ldb);
  }
  const bool bf16 = a16 != nullptr && b16 != nullptr;
  if (k > 0 && bias_epilogue_) {
    if (!lt_) lt_ = std::make_unique<cuda::LtPlans>();
    cuda::LtShape shape;
    shape.trans_a = trans_a;
    shape.trans_b = trans_b;
    shape.m = m;
    shape.n = n;
    shape.k = k;
    shape.lda = lda;
    shape.ldb = ldb;
    shape.bf16 = bf16;
    shape.tf32 = tf32_;
    shape.align_a = cuda::alignment_of(bf16 ? static_cast<const void*>(a16) : a);
    shape.align_b = cuda::alignment_of(bf16 ? static_cast<const void*>(b16) : b);
    shape.align_c = std::min(cuda::alignment_of(c), cuda::alignment_of(bias));
    void* workspace = scratch(kSlotLtWorkspace, cuda::kLtWorkspaceBytes);
    if (lt_->run(stream_, shape, bf16 ? static_cast<const void*>(a16) : a,
                 bf16 ? static_cast<const void*>(b16) : b, bias, c, workspace))
      return;
  }
  Backend::gemm_bias(trans_a, trans_b, m, n, k, a, a16, lda, b, b16, ldb, bias, c);
}

}  // namespace nn
