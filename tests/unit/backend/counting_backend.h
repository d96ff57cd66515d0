// A Backend that forwards every operation to a CpuBackend and counts the calls that matter for
// device backends: allocations, transfers, and the operations that return a value to the host
// (each one a synchronisation on a GPU). With `host_memory` false it poses as a device backend,
// so code that reads back less often on a GPU (the trainer's loss sums) can be tested here. With
// a ThreadProbe it also poses as a backend that must not be shared between threads (as CUDA's):
// it notes calls that overlap another thread's, and make_peer() can hand out peers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/math/bf16_math.h"

namespace nn::test {

class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(bool host_memory = true, int threads = 2)
      : inner_(std::make_unique<CpuBackend>(threads)), host_memory_(host_memory) {}

  // Counters (reset with clear()).
  size_t allocations = 0, uploads = 0, downloads = 0;
  size_t value_returns = 0;  // loss, loss_and_delta, sum_squares, sum_abs, sparseness_penalty
  size_t fused_losses = 0;   // activate_loss_accumulate
  size_t gemms = 0, bf16_conversions = 0, bf16_b_gemms = 0;  // gemm, convert_to_bf16, gemm_bf16_b
  size_t bf16_ab_gemms = 0;                                  // gemm_bf16_ab
  size_t bf16_copies_written = 0;  // optimizer_step_multi tensors with a BF16 copy (w_bf16)
  size_t optimizer_launches = 0;   // optimizer_step and optimizer_step_multi calls
  size_t synchronizations = 0;     // synchronize() calls (a host wait for the stream on a GPU)
  void clear() {
    allocations = uploads = downloads = value_returns = fused_losses = 0;
    gemms = bf16_conversions = bf16_b_gemms = optimizer_launches = synchronizations = 0;
    bf16_ab_gemms = bf16_copies_written = 0;
    releases = nnz_reads = 0;
  }
  size_t releases = 0;   // release() calls
  size_t nnz_reads = 0;  // sparse calls whose view lacks its count of non-zeros (a read on CUDA)

  // Step graphs: with record_steps it poses as a backend that records training steps as graphs
  // (begin_step_graph returns ""; the work still runs at once). It counts the steps begun, ended
  // and abandoned, and, inside recorded steps, the calls that would split a CUDA graph: `splits`
  // all of them (allocations and frees included), `wait_splits` those that wait for the stream
  // or read a value back.
  bool record_steps = false;
  size_t steps_begun = 0, steps_ended = 0, steps_abandoned = 0, splits = 0, wait_splits = 0;
  bool in_step = false;
  std::string begin_step_graph() override {
    if (!record_steps) return inner_->begin_step_graph();
    if (in_step) throw std::logic_error("begin_step_graph inside a recorded step");
    in_step = true;
    ++steps_begun;
    split_base_ = splitting_calls();
    wait_base_ = waiting_calls();
    return "";
  }
  void end_step_graph() override {
    if (!in_step) throw std::logic_error("end_step_graph outside a recorded step");
    in_step = false;
    ++steps_ended;
    splits += splitting_calls() - split_base_;
    wait_splits += waiting_calls() - wait_base_;
  }
  // Uploads beside the stream: with side_stream it numbers its marks 1, 2, ... (else 0, as the
  // CPU backend), lists each begin_side_uploads' mark (side_waits) and counts the uploads made
  // between begin and end (side_uploads).
  bool side_stream = false;
  uint64_t marks = 0;
  std::vector<uint64_t> side_waits;
  size_t side_uploads = 0;
  bool in_side = false;
  uint64_t stream_mark() override { return side_stream ? ++marks : 0; }
  void begin_side_uploads(uint64_t after) override {
    if (in_side) throw std::logic_error("begin_side_uploads twice");
    if (after > marks) throw std::logic_error("begin_side_uploads: no such mark");
    in_side = true;
    side_waits.push_back(after);
  }
  void end_side_uploads() override { in_side = false; }
  void abandon_step_graph() noexcept override {
    if (!in_step) return;
    in_step = false;
    ++steps_abandoned;
  }

  // Thread probe: the calls of a forward pass (transfers, products, activations, top-K) note when
  // another thread is inside the same backend (overlaps, summed over a backend and its peers),
  // each call held open for 100 us so that threads sharing a backend do meet. With give_peers,
  // make_peer() returns a new CountingBackend with the same probe (as a device backend would);
  // without, null (share me).
  // shareable false: the backend says it may not be shared between threads (as CUDA's), so users
  // without a peer take turns on it.
  struct ThreadProbe {
    bool give_peers = true;
    bool shareable = true;
    std::atomic<int> overlaps{0}, peers{0};
  };
  std::shared_ptr<ThreadProbe> probe;

  // "cuda" makes engine code that asks the backend's name treat it as the CUDA backend (row-sparse
  // updates: train/row_sparse.h).
  std::string posed_name = "counting-cpu";
  std::string name() const override { return posed_name; }
  bool host_memory() const override { return host_memory_; }

  void* allocate(size_t bytes) override {
    ++allocations;
    return inner_->allocate(bytes);
  }
  void release(void* ptr) noexcept override {
    ++releases;
    inner_->release(ptr);
  }
  void upload(void* dst, const void* src, size_t bytes) override {
    const Inside inside(*this);
    ++uploads;
    if (in_side) ++side_uploads;
    inner_->upload(dst, src, bytes);
  }
  void download(void* dst, const void* src, size_t bytes) override {
    const Inside inside(*this);
    ++downloads;
    inner_->download(dst, src, bytes);
  }
  void copy(void* dst, const void* src, size_t bytes) override { inner_->copy(dst, src, bytes); }
  void synchronize() override {
    ++synchronizations;
    inner_->synchronize();
  }
  bool shareable_between_threads() const override { return !probe || probe->shareable; }
  std::unique_ptr<Backend> make_peer() override {
    if (!probe || !probe->give_peers) return nullptr;
    auto peer = std::make_unique<CountingBackend>(host_memory_, 1);
    peer->probe = probe;
    ++probe->peers;
    return peer;
  }
  std::unique_ptr<ProfileClock> make_profile_clock() override {
    return inner_->make_profile_clock();
  }

  void fill(float* x, size_t n, float value) override { inner_->fill(x, n, value); }
  void axpy(size_t n, float a, const float* x, float* y) override { inner_->axpy(n, a, x, y); }
  void scale(float* x, size_t n, float a) override { inner_->scale(x, n, a); }
  double sum_squares(const float* x, size_t n) override {
    ++value_returns;
    return inner_->sum_squares(x, n);
  }
  double sum_abs(const float* x, size_t n) override {
    ++value_returns;
    return inner_->sum_abs(x, n);
  }

  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) override {
    const Inside inside(*this);
    ++gemms;
    inner_->gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  // With pose_bf16 it poses as a CPU that runs BF16: set_precision(BF16) is accepted and
  // remembered instead of passed on (gemm then still computes in FP32), and gemm_bf16_ab widens
  // its operands and multiplies them in FP32.
  bool pose_bf16 = false;
  void set_precision(Precision p) override {
    if (pose_bf16)
      posed_precision_ = p;
    else
      inner_->set_precision(p);
  }
  Precision precision() const override {
    return pose_bf16 ? posed_precision_ : inner_->precision();
  }
  void convert_to_bf16(const float* src, uint16_t* dst, size_t n) override {
    ++bf16_conversions;
    inner_->convert_to_bf16(src, dst, n);
  }
  void gemm_bf16_b(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
                   const uint16_t* b16, int ldb, float beta, float* c, int ldc) override {
    ++bf16_b_gemms;
    inner_->gemm_bf16_b(ta, tb, m, n, k, alpha, a, lda, b16, ldb, beta, c, ldc);
  }
  void gemm_bf16_ab(bool ta, bool tb, int m, int n, int k, float alpha, const uint16_t* a16,
                    int lda, const uint16_t* b16, int ldb, float beta, float* c, int ldc) override {
    const Inside inside(*this);
    ++bf16_ab_gemms;
    if (!pose_bf16)
      return inner_->gemm_bf16_ab(ta, tb, m, n, k, alpha, a16, lda, b16, ldb, beta, c, ldc);
    // Posing: the BF16 operands widened to FP32 (exactly) and multiplied in FP32, the arithmetic
    // of BF16 products with FP32 accumulation (in the FP32 product's order of summation).
    std::vector<float> a(math::operand_span(ta ? k : m, ta ? m : k, lda)),
        b(math::operand_span(tb ? n : k, tb ? k : n, ldb));
    for (size_t i = 0; i < a.size(); ++i) a[i] = math::bf16_to_float(a16[i]);
    for (size_t i = 0; i < b.size(); ++i) b[i] = math::bf16_to_float(b16[i]);
    inner_->gemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c, ldc);
  }
  void broadcast_bias(float* z, const float* bias, uint32_t rows, uint32_t cols,
                      bool accumulate) override {
    const Inside inside(*this);
    inner_->broadcast_bias(z, bias, rows, cols, accumulate);
  }
  void column_sums(const float* x, uint32_t rows, uint32_t cols, float alpha, float beta,
                   float* out) override {
    inner_->column_sums(x, rows, cols, alpha, beta, out);
  }
  void sparse_matmul(const SparseView& x, const float* w, uint32_t n_out, float* z) override {
    const Inside inside(*this);
    inner_->sparse_matmul(x, w, n_out, z);
  }
  void sparse_weight_gradient(const SparseView& x, const float* delta, uint32_t n_out, float alpha,
                              float* g) override {
    if (x.rows > 0 && x.nnz == 0) ++nnz_reads;
    inner_->sparse_weight_gradient(x, delta, n_out, alpha, g);
  }
  void activate(const ActivationParams& p, float* x, uint32_t rows, uint32_t cols) override {
    const Inside inside(*this);
    inner_->activate(p, x, rows, cols);
  }
  void activation_backward(const ActivationParams& p, const float* a, float* delta, uint32_t rows,
                           uint32_t cols) override {
    inner_->activation_backward(p, a, delta, rows, cols);
  }
  void maxout_forward(const float* z, size_t groups, uint32_t k, uint32_t inner, float* a,
                      uint32_t* arg) override {
    inner_->maxout_forward(z, groups, k, inner, a, arg);
  }
  void maxout_backward(const float* da, const uint32_t* arg, size_t groups, uint32_t k,
                       uint32_t inner, float* dz) override {
    inner_->maxout_backward(da, arg, groups, k, inner, dz);
  }

  double loss(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
              uint32_t cols) override {
    ++value_returns;
    return inner_->loss(p, a, t, rows, cols);
  }
  void output_delta(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                    uint32_t cols, float* delta) override {
    inner_->output_delta(p, a, t, rows, cols, delta);
  }
  double loss_and_delta(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                        uint32_t cols, float* delta) override {
    ++value_returns;
    return inner_->loss_and_delta(p, a, t, rows, cols, delta);
  }
  void loss_accumulate(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                       uint32_t cols, float* delta, double* sum) override {
    if (t.sparse && rows > 0 && (t.sp.nnz == 0 || t.sp.rows != rows)) ++nnz_reads;
    inner_->loss_accumulate(p, a, t, rows, cols, delta, sum);
  }
  void activate_loss_accumulate(const ActivationParams& act, const LossParams& p, float* z_to_a,
                                const TargetView& t, uint32_t rows, uint32_t cols, float* delta,
                                double* sum) override {
    ++fused_losses;
    if (t.sparse && rows > 0 && (t.sp.nnz == 0 || t.sp.rows != rows)) ++nnz_reads;
    inner_->activate_loss_accumulate(act, p, z_to_a, t, rows, cols, delta, sum);
  }
  void sum_squares_accumulate(const float* x, size_t n, double scale, double* sum) override {
    inner_->sum_squares_accumulate(x, n, scale, sum);
  }
  void sum_abs_accumulate(const float* x, size_t n, double scale, double* sum) override {
    inner_->sum_abs_accumulate(x, n, scale, sum);
  }
  void fold_loss_sums(double* sums, uint64_t batch) override {
    inner_->fold_loss_sums(sums, batch);
  }

  void dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream) override {
    inner_->dropout(x, n, p, seed, stream);
  }
  void dropout_backward(float* delta, size_t n, float p, uint64_t seed, uint64_t stream) override {
    inner_->dropout_backward(delta, n, p, seed, stream);
  }
  void scale_columns(float* x, uint32_t rows, uint32_t cols, const float* w) override {
    inner_->scale_columns(x, rows, cols, w);
  }
  void scale_rows(float* x, uint32_t rows, uint32_t cols, const float* w) override {
    inner_->scale_rows(x, rows, cols, w);
  }
  void gather_rows(const float* src, uint32_t width, const uint32_t* index, uint32_t count,
                   float* dst) override {
    inner_->gather_rows(src, width, index, count, dst);
  }
  void scatter_rows(const float* src, uint32_t width, const uint32_t* index, uint32_t count,
                    float* dst) override {
    inner_->scatter_rows(src, width, index, count, dst);
  }
  void transpose(const float* src, uint32_t rows, uint32_t cols, float* dst) override {
    inner_->transpose(src, rows, cols, dst);
  }
  void optimizer_step(const OptimizerParams& p, float* w, const float* g, float* s0, float* s1,
                      size_t n) override {
    ++optimizer_launches;
    inner_->optimizer_step(p, w, g, s0, s1, n);
  }
  void optimizer_step_multi(const OptimizerParams& p, const OptimizerTensor* tensors,
                            size_t count) override {
    ++optimizer_launches;
    for (size_t i = 0; i < count; ++i) bf16_copies_written += tensors[i].w_bf16 != nullptr;
    inner_->optimizer_step_multi(p, tensors, count);
  }
  void optimizer_step_rows(const OptimizerParams& p, float* w, const float* g, float* s0, float* s1,
                           uint32_t width, const uint32_t* rows, uint32_t count) override {
    inner_->optimizer_step_rows(p, w, g, s0, s1, width, rows, count);
  }
  void optimizer_skip_rows(OptimizerKind kind, float* w, float* s0, float* s1, uint32_t width,
                           const uint32_t* rows, const float* factors, uint32_t count) override {
    inner_->optimizer_skip_rows(kind, w, s0, s1, width, rows, factors, count);
  }
  void top_k(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols, uint32_t k,
             float* values, uint32_t* indices) override {
    inner_->top_k(x, rows, cols, valid_cols, k, values, indices);
  }
  void top_k_filtered(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols, uint32_t k,
                      const TopKFilter& filter, float* values, uint32_t* indices) override {
    const Inside inside(*this);
    inner_->top_k_filtered(x, rows, cols, valid_cols, k, filter, values, indices);
  }
  double sparseness_penalty(const float* a, uint32_t rows, uint32_t cols, float p, float beta,
                            float* delta) override {
    if (!delta) ++value_returns;  // with a delta it is the backward pass; the value is unused
    return inner_->sparseness_penalty(a, rows, cols, p, beta, delta);
  }
  void sparseness_penalty_accumulate(const float* a, uint32_t rows, uint32_t cols, float p,
                                     float beta, float* delta, double* sum) override {
    inner_->sparseness_penalty_accumulate(a, rows, cols, p, beta, delta, sum);
  }

  // Layer features, convolution, pooling, LRN and similarity: forwarded uncounted.
  void clip_row_norms(float* x, uint32_t rows, uint32_t cols, float max_norm) override {
    inner_->clip_row_norms(x, rows, cols, max_norm);
  }
  void clip_column_norms(float* w, uint32_t rows, uint32_t cols, float max_norm) override {
    inner_->clip_column_norms(w, rows, cols, max_norm);
  }
  void batch_norm_forward_training(const BatchNormParams& p, const float* x, float* y,
                                   const float* scale, const float* bias, float* running_mean,
                                   float* running_var, float* save_mean,
                                   float* save_inv_std) override {
    inner_->batch_norm_forward_training(p, x, y, scale, bias, running_mean, running_var, save_mean,
                                        save_inv_std);
  }
  void batch_norm_forward_inference(const BatchNormParams& p, const float* x, float* y,
                                    const float* scale, const float* bias,
                                    const float* running_mean, const float* running_var) override {
    inner_->batch_norm_forward_inference(p, x, y, scale, bias, running_mean, running_var);
  }
  void batch_norm_backward(const BatchNormParams& p, const float* x, const float* dy,
                           const float* scale, const float* save_mean, const float* save_inv_std,
                           float alpha, float* dx, float* dscale, float* dbias) override {
    inner_->batch_norm_backward(p, x, dy, scale, save_mean, save_inv_std, alpha, dx, dscale, dbias);
  }
  void batch_norm_backward_inference(const BatchNormParams& p, const float* x, const float* dy,
                                     const float* scale, const float* running_mean,
                                     const float* running_var, float alpha, float* dx,
                                     float* dscale, float* dbias) override {
    inner_->batch_norm_backward_inference(p, x, dy, scale, running_mean, running_var, alpha, dx,
                                          dscale, dbias);
  }
  void sparse_matmul_transposed(const SparseView& x, const float* w, uint32_t n_out,
                                float* z) override {
    inner_->sparse_matmul_transposed(x, w, n_out, z);
  }
  void sparse_weight_gradient_transposed(const SparseView& x, const float* delta, uint32_t n_out,
                                         float alpha, float* g) override {
    if (x.rows > 0 && x.nnz == 0) ++nnz_reads;
    inner_->sparse_weight_gradient_transposed(x, delta, n_out, alpha, g);
  }
  void conv_forward(const ConvGeometry& g, uint32_t rows, const float* x, const float* w,
                    const float* bias, bool accumulate, float* y) override {
    inner_->conv_forward(g, rows, x, w, bias, accumulate, y);
  }
  void conv_backward_data(const ConvGeometry& g, uint32_t rows, const float* dy, const float* w,
                          float* dx) override {
    inner_->conv_backward_data(g, rows, dy, w, dx);
  }
  void conv_backward_filter(const ConvGeometry& g, uint32_t rows, const float* x, const float* dy,
                            float alpha, float* dw, float* dbias) override {
    inner_->conv_backward_filter(g, rows, x, dy, alpha, dw, dbias);
  }
  void pool_forward(const PoolParams& p, uint32_t rows, const float* x, bool accumulate,
                    float* y) override {
    inner_->pool_forward(p, rows, x, accumulate, y);
  }
  void pool_backward(const PoolParams& p, uint32_t rows, const float* x, const float* dy,
                     float* dx) override {
    inner_->pool_backward(p, rows, x, dy, dx);
  }
  void lrn_forward(const LrnParams& p, uint32_t rows, const float* x, bool accumulate,
                   float* y) override {
    inner_->lrn_forward(p, rows, x, accumulate, y);
  }
  void lrn_backward(const LrnParams& p, uint32_t rows, const float* x, const float* dy,
                    float* dx) override {
    inner_->lrn_backward(p, rows, x, dy, dx);
  }
  void variational_forward(const float* q, uint32_t rows, uint32_t n, bool sample, uint64_t seed,
                           uint64_t stream, float* a) override {
    inner_->variational_forward(q, rows, n, sample, seed, stream, a);
  }
  void variational_backward(const float* q, const float* da, uint32_t rows, uint32_t n, bool sample,
                            float beta, uint64_t seed, uint64_t stream, float* dq) override {
    inner_->variational_backward(q, da, rows, n, sample, beta, seed, stream, dq);
  }
  void variational_kl_accumulate(const float* q, uint32_t rows, uint32_t n, float beta,
                                 double* sum) override {
    inner_->variational_kl_accumulate(q, rows, n, beta, sum);
  }
  void similarity_forward(PoolingFunction f, uint32_t rows, uint32_t cols, const float* a,
                          const float* b, float* y, uint32_t y_stride) override {
    inner_->similarity_forward(f, rows, cols, a, b, y, y_stride);
  }
  void similarity_backward(PoolingFunction f, uint32_t rows, uint32_t cols, const float* a,
                           const float* b, const float* dy, uint32_t dy_stride, float* da,
                           float* db) override {
    inner_->similarity_backward(f, rows, cols, a, b, dy, dy_stride, da, db);
  }

 private:
  // Marks a call of the probe's: an overlap when another thread is inside already.
  class Inside {
   public:
    explicit Inside(CountingBackend& b) : b_(b) {
      if (!b_.probe) return;
      if (b_.active_.fetch_add(1) > 0) ++b_.probe->overlaps;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    ~Inside() {
      if (b_.probe) b_.active_.fetch_sub(1);
    }

   private:
    CountingBackend& b_;
  };

  // Calls that wait for the stream or read a value back; with allocations and frees, every call
  // that splits a recorded step on CUDA.
  size_t waiting_calls() const { return downloads + synchronizations + value_returns + nnz_reads; }
  size_t splitting_calls() const { return waiting_calls() + allocations + releases; }
  size_t split_base_ = 0, wait_base_ = 0;
  std::unique_ptr<CpuBackend> inner_;
  bool host_memory_;
  Precision posed_precision_ = Precision::FP32;
  std::atomic<int> active_{0};  // threads inside a probed call
};

}  // namespace nn::test
