// The CPU backend: OpenBLAS for gemm, vectorised loops for everything else (their per-element
// arithmetic is backend/math/'s, shared with the CUDA kernels), one thread pool for both. Every
// kernel is deterministic: fixed work decomposition, no atomics on floats, reductions summed in
// double in a fixed order, so results do not depend on the thread count (gemm aside, which is
// OpenBLAS's arithmetic).
//
// One kernel family per file, each named as its CUDA twin (cpu/<family>.cpp <->
// cuda/<family>.cu): backend (memory, transfers, the loss-sum fold), dense (gemm, bias, column
// sums), elementwise (fill, axpy, scale, reductions), dropout, activation, loss, sparse,
// sparse_transposed, optimizer, top_k, norm, batch_norm, conv, pool, lrn, similarity,
// profile_clock (the clock of nn-train --profile). CPU-only
// helpers: conv_dnnl.cpp and conv_gemm.cpp (the two convolution implementations, conv.h),
// thread_pool.{h,cpp} and stream.h (chunking, prefetch), dense_invariant.cpp (the gemm of the
// batch-invariant mode below). Per-element formulas shared with the
// CUDA kernels are in backend/math/.
//
// Threading: one pool of `threads` threads (thread_pool.h; the calling thread is one of them)
// runs every parallel kernel, gemm included (OpenBLAS runs single-threaded inside it; see
// cpu/dense.cpp for why). Kernels keep no mutable state (oneDNN's primitive cache aside, which
// has its own lock), so several threads may use one backend at once; while the pool is busy with
// one caller's kernel, another caller's kernel runs on its own thread.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace nn {
namespace cpu {
class ThreadPool;
class DnnlConv;  // oneDNN convolution primitives (cpu/conv_dnnl.cpp)
DnnlConv* make_dnnl_conv();
void destroy_dnnl_conv(DnnlConv* conv) noexcept;
class DnnlMatmul;  // oneDNN BF16 matmul primitives (cpu/dense_bf16.cpp)
DnnlMatmul* make_dnnl_matmul();
void destroy_dnnl_matmul(DnnlMatmul* matmul) noexcept;
}  // namespace cpu

// gemm's fixed column tile (cpu/dense.cpp): C of at least this many columns is computed in
// tiles of it, at multiples of it, whatever the thread count. A multiple of 16 (a cache line of
// C, and the batch-invariant gemm's strip).
constexpr uint32_t kGemmColumnTile = 512;

class CpuBackend final : public Backend {
 public:
  // threads = 0 uses every CPU in the process's affinity mask (core/cpu_count.h).
  explicit CpuBackend(int threads = 0);
  ~CpuBackend() override;
  std::string name() const override { return "cpu"; }
  int threads() const { return threads_; }

  void* allocate(size_t bytes) override;
  void release(void* ptr) noexcept override;
  void upload(void* dst, const void* host_src, size_t bytes) override;
  void download(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void synchronize() override {}
  // Safe to share between threads (backend.h): no peer.
  std::unique_ptr<Backend> make_peer() override { return nullptr; }
  // The host's steady clock (cpu/profile_clock.cpp): every kernel has finished when it returns.
  std::unique_ptr<ProfileClock> make_profile_clock() override;

  void fill(float* x, size_t n, float value) override;
  void axpy(size_t n, float a, const float* x, float* y) override;
  void scale(float* x, size_t n, float a) override;
  double sum_squares(const float* x, size_t n) override;
  double sum_abs(const float* x, size_t n) override;
  // The *_accumulate forms add into a double in host memory (backend.h); host_memory() is true,
  // so reading the sums back is free.
  void sum_squares_accumulate(const float* x, size_t n, double scale, double* sum) override;
  void sum_abs_accumulate(const float* x, size_t n, double scale, double* sum) override;
  void fold_loss_sums(double* sums, uint64_t batch) override;
  bool host_memory() const override { return true; }

  // In BF16 mode the products split at thread-count-dependent columns (dense_bf16.cpp): no
  // promise then.
  uint32_t gemm_column_tile() const override {
    return precision_ == Precision::BF16 ? 0 : kGemmColumnTile;
  }
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) override;
  // BF16 products (cpu/dense_bf16.cpp): oneDNN matmul on AVX512-BF16; set_precision(BF16)
  // refuses elsewhere (cpu/bf16_support.h) and in batch-invariant mode.
  void set_precision(Precision p) override;
  Precision precision() const override { return precision_; }
  void convert_to_bf16(const float* src, uint16_t* dst, size_t n) override;
  void gemm_bf16_b(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                   int lda, const uint16_t* b16, int ldb, float beta, float* c, int ldc) override;
  void gemm_bf16_ab(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                    const uint16_t* a16, int lda, const uint16_t* b16, int ldb, float beta,
                    float* c, int ldc) override;
  void broadcast_bias(float* z, const float* bias, uint32_t rows, uint32_t cols,
                      bool accumulate) override;
  void column_sums(const float* x, uint32_t rows, uint32_t cols, float alpha, float beta,
                   float* out) override;

  void sparse_matmul(const SparseView& x, const float* w, uint32_t n_out, float* z) override;
  void sparse_weight_gradient(const SparseView& x, const float* delta, uint32_t n_out, float alpha,
                              float* g) override;

  void activate(const ActivationParams& p, float* x, uint32_t rows, uint32_t cols) override;
  void activation_backward(const ActivationParams& p, const float* a, float* delta, uint32_t rows,
                           uint32_t cols) override;
  void maxout_forward(const float* z, size_t groups, uint32_t k, uint32_t inner, float* a,
                      uint32_t* arg) override;
  void maxout_backward(const float* da, const uint32_t* arg, size_t groups, uint32_t k,
                       uint32_t inner, float* dz) override;

  double loss(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
              uint32_t cols) override;
  void output_delta(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                    uint32_t cols, float* delta) override;
  double loss_and_delta(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                        uint32_t cols, float* delta) override;
  void loss_accumulate(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                       uint32_t cols, float* delta, double* sum) override;

  void dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream) override;
  void dropout_backward(float* delta, size_t n, float p, uint64_t seed, uint64_t stream) override;

  void scale_columns(float* x, uint32_t rows, uint32_t cols, const float* w) override;
  void scale_rows(float* x, uint32_t rows, uint32_t cols, const float* w) override;
  void gather_rows(const float* src, uint32_t width, const uint32_t* index, uint32_t count,
                   float* dst) override;
  void scatter_rows(const float* src, uint32_t width, const uint32_t* index, uint32_t count,
                    float* dst) override;
  void transpose(const float* src, uint32_t rows, uint32_t cols, float* dst) override;
  void optimizer_step(const OptimizerParams& p, float* w, const float* g, float* state0,
                      float* state1, size_t n) override;
  // Each tensor as optimizer_step updates it, its BF16 copy (w_bf16) written chunk by chunk
  // from the updated values while they are in the cache.
  void optimizer_step_multi(const OptimizerParams& p, const OptimizerTensor* tensors,
                            size_t count) override;
  void optimizer_step_rows(const OptimizerParams& p, float* w, const float* g, float* state0,
                           float* state1, uint32_t width, const uint32_t* rows,
                           uint32_t count) override;
  void optimizer_skip_rows(OptimizerKind kind, float* w, float* state0, float* state1,
                           uint32_t width, const uint32_t* rows, const float* factors,
                           uint32_t count) override;

  void top_k(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols, uint32_t k,
             float* values, uint32_t* indices) override;
  void top_k_filtered(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols, uint32_t k,
                      const TopKFilter& filter, float* values, uint32_t* indices) override;

  // ---- layer features (cpu/norm.cpp, cpu/batch_norm.cpp, cpu/sparse_transposed.cpp) ----------
  void clip_row_norms(float* x, uint32_t rows, uint32_t cols, float max_norm) override;
  void clip_column_norms(float* w, uint32_t rows, uint32_t cols, float max_norm) override;
  double sparseness_penalty(const float* a, uint32_t rows, uint32_t cols, float p, float beta,
                            float* delta) override;
  void sparseness_penalty_accumulate(const float* a, uint32_t rows, uint32_t cols, float p,
                                     float beta, float* delta, double* sum) override;
  void batch_norm_forward_training(const BatchNormParams& p, const float* x, float* y,
                                   const float* scale, const float* bias, float* running_mean,
                                   float* running_var, float* save_mean,
                                   float* save_inv_std) override;
  void batch_norm_forward_inference(const BatchNormParams& p, const float* x, float* y,
                                    const float* scale, const float* bias,
                                    const float* running_mean, const float* running_var) override;
  void batch_norm_backward(const BatchNormParams& p, const float* x, const float* dy,
                           const float* scale, const float* save_mean, const float* save_inv_std,
                           float alpha, float* dx, float* dscale, float* dbias) override;
  void batch_norm_backward_inference(const BatchNormParams& p, const float* x, const float* dy,
                                     const float* scale, const float* running_mean,
                                     const float* running_var, float alpha, float* dx,
                                     float* dscale, float* dbias) override;
  void sparse_matmul_transposed(const SparseView& x, const float* w, uint32_t n_out,
                                float* z) override;
  void sparse_weight_gradient_transposed(const SparseView& x, const float* delta, uint32_t n_out,
                                         float alpha, float* g) override;

  // ---- convolution (cpu/conv.cpp, conv_dnnl.cpp, conv_gemm.cpp), pooling, LRN -------------------
  void conv_forward(const ConvGeometry& g, uint32_t rows, const float* x, const float* w,
                    const float* bias, bool accumulate, float* y) override;
  void conv_backward_data(const ConvGeometry& g, uint32_t rows, const float* dy, const float* w,
                          float* dx) override;
  void conv_backward_filter(const ConvGeometry& g, uint32_t rows, const float* x, const float* dy,
                            float alpha, float* dw, float* dbias) override;
  void pool_forward(const PoolParams& p, uint32_t rows, const float* x, bool accumulate,
                    float* y) override;
  void pool_backward(const PoolParams& p, uint32_t rows, const float* x, const float* dy,
                     float* dx) override;
  void lrn_forward(const LrnParams& p, uint32_t rows, const float* x, bool accumulate,
                   float* y) override;
  void lrn_backward(const LrnParams& p, uint32_t rows, const float* x, const float* dy,
                    float* dx) override;
  // Which code runs the convolutions: oneDNN's (Dnnl, the default when the build has it) or
  // im2col + OpenBLAS sgemm (Gemm, always built). Both are deterministic; tests run each.
  enum class ConvLibrary { Gemm, Dnnl };
  static bool has_dnnl();
  void set_conv_library(ConvLibrary library);  // ConfigError for Dnnl in a build without it
  ConvLibrary conv_library() const { return conv_library_; }

  // Batch-invariant mode (serving: nn-serve batches concurrent requests and must answer each as
  // it would alone): gemm sums every element of C in one fixed order whatever the batch's rows
  // (cpu/dense_invariant.cpp) instead of calling OpenBLAS, and convolutions use im2col + sgemm,
  // which runs one example at a time. Off by default: OpenBLAS is faster for training's shapes.
  // ConfigError in BF16 precision (oneDNN's blocking may depend on the batch's rows).
  void set_batch_invariant(bool on);
  bool batch_invariant() const { return batch_invariant_; }

  // ---- similarity pooling: DotProduct and Cosine (cpu/similarity.cpp; owner: poolfn) ---------
  void similarity_forward(PoolingFunction f, uint32_t rows, uint32_t cols, const float* a,
                          const float* b, float* y, uint32_t y_stride) override;
  void similarity_backward(PoolingFunction f, uint32_t rows, uint32_t cols, const float* a,
                           const float* b, const float* dy, uint32_t dy_stride, float* da,
                           float* db) override;
  // Variational layers (cpu/variational.cpp).
  void variational_forward(const float* q, uint32_t rows, uint32_t n, bool sample, uint64_t seed,
                           uint64_t stream, float* a) override;
  void variational_backward(const float* q, const float* da, uint32_t rows, uint32_t n, bool sample,
                            float beta, uint64_t seed, uint64_t stream, float* dq) override;
  void variational_kl_accumulate(const float* q, uint32_t rows, uint32_t n, float beta,
                                 double* sum) override;

 private:
  // Computes the summed error and (when delta != nullptr) the output deltas.
  double loss_impl(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                   uint32_t cols, float* delta);
  void apply_dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream);

  // gemm in BF16 mode: B converted, then gemm_bf16_b.
  void gemm_bf16(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc);
  void gemm_batch_invariant(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                            const float* a, int lda, const float* b, int ldb, float beta, float* c,
                            int ldc);

  int threads_;
  std::unique_ptr<cpu::ThreadPool> pool_;
  bool batch_invariant_ = false;
  Precision precision_ = Precision::FP32;
  // Made on the first BF16 product.
  std::unique_ptr<cpu::DnnlMatmul, void (*)(cpu::DnnlMatmul*) noexcept> matmul_{
      nullptr, &cpu::destroy_dnnl_matmul};

  // Convolution library and oneDNN's primitive cache (cheap to create: primitives are made on
  // first use of each shape). The deleter is a function so this header need not define DnnlConv.
  ConvLibrary conv_library_ = has_dnnl() ? ConvLibrary::Dnnl : ConvLibrary::Gemm;
  std::unique_ptr<cpu::DnnlConv, void (*)(cpu::DnnlConv*) noexcept> dnnl_{
      has_dnnl() ? cpu::make_dnnl_conv() : nullptr, &cpu::destroy_dnnl_conv};
};

}  // namespace nn
