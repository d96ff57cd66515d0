// The CPU backend: OpenBLAS for gemm, OpenMP for everything else. It is the reference every other
// backend is tested against, so every kernel is deterministic: static partitioning, no atomics,
// reductions summed in double in a fixed order that does not depend on the thread count.
//
// The kernel families live in separate files: cpu_backend.cpp (memory, BLAS, elementwise,
// dropout), cpu_activation.cpp, cpu_loss.cpp, cpu_sparse.cpp, cpu_optimizer.cpp, cpu_top_k.cpp.
//
// Threading: OpenBLAS (pthread build) and OpenMP keep separate thread pools. Both are sized to
// `threads`, and each kernel uses only one of them at a time. See cpu_backend.cpp for the
// measured interplay and the GOMP_SPINCOUNT / OMP_WAIT_POLICY advice.
#pragma once

#include <string>

#include "backend/backend.h"

namespace nn {

class CpuBackend final : public Backend {
 public:
  // threads = 0 uses every available core.
  explicit CpuBackend(int threads = 0);
  std::string name() const override { return "cpu"; }
  int threads() const { return threads_; }

  void* allocate(size_t bytes) override;
  void release(void* ptr) noexcept override;
  void upload(void* dst, const void* host_src, size_t bytes) override;
  void download(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void synchronize() override {}

  void fill(float* x, size_t n, float value) override;
  void axpy(size_t n, float a, const float* x, float* y) override;
  void scale(float* x, size_t n, float a) override;
  double sum_squares(const float* x, size_t n) override;
  double sum_abs(const float* x, size_t n) override;

  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) override;
  void broadcast_bias(float* z, const float* bias, uint32_t rows, uint32_t cols,
                      bool accumulate) override;
  void column_sums(const float* x, uint32_t rows, uint32_t cols, float alpha, float beta,
                   float* out) override;

  void sparse_matmul(const SparseView& x, const float* w, uint32_t n_out, float* z) override;
  void sparse_weight_gradient(const SparseView& x, const float* delta, uint32_t n_out,
                              float alpha, float* g) override;

  void activate(const ActivationParams& p, float* x, uint32_t rows, uint32_t cols) override;
  void activation_backward(const ActivationParams& p, const float* a, float* delta,
                           uint32_t rows, uint32_t cols) override;

  double loss(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
              uint32_t cols) override;
  void output_delta(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                    uint32_t cols, float* delta) override;
  double loss_and_delta(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                        uint32_t cols, float* delta) override;

  void dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream) override;
  void dropout_backward(float* delta, size_t n, float p, uint64_t seed,
                        uint64_t stream) override;

  void optimizer_step(const OptimizerParams& p, float* w, const float* g, float* state0,
                      float* state1, size_t n) override;

  void top_k(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols, uint32_t k,
             float* values, uint32_t* indices) override;

 private:
  // Computes the summed error and (when delta != nullptr) the output deltas.
  double loss_impl(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                   uint32_t cols, float* delta);
  void apply_dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream);

  int threads_;
};

}  // namespace nn
