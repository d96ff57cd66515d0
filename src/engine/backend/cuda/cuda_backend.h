// The CUDA backend: device memory, one stream, cuBLAS for dense products, cuDNN for convolution,
// LRN and batch normalisation, and own kernels for the rest. One kernel family per file, each
// named as its CPU twin (cuda/<family>.cu <-> cpu/<family>.cpp); CUDA-only helpers: cuda_check,
// cuda_sort, cuda_reduce.cuh, cudnn_support, device_probe. Every kernel's per-element arithmetic
// is a __host__ __device__ function in backend/math/, which the CPU backend's loops call too;
// the wrappers here are thin and check every status (cuda_check.h).
//
// Ordering: every kernel, copy and cuBLAS call runs on stream_, so they execute in call order.
// Calls that return a value to the host (losses, reductions, download) wait for the stream; the
// *_accumulate forms add into a device double instead and do not (read it back when needed).
// Uploads are staged through pinned memory and do not wait either (staging_slot()).
// Determinism: no kernel uses floating-point atomics; every sum has a fixed order (see each
// file), so repeated runs give identical bits.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cudnn_choice.h"

namespace nn {
namespace cuda {
class Cudnn;
class LtPlans;
class StepGraphs;
}  // namespace cuda

class CudaBackend final : public Backend {
 public:
  // Sets up device `device`: a non-blocking stream, a cuBLAS handle on it (TF32 tensor-core
  // math when tf32, FP32 otherwise) and a small pinned buffer for results read back. `cudnn`:
  // how convolution algorithms are chosen (cudnn_choice.h).
  CudaBackend(int device, bool tf32, const cuda::CudnnSettings& cudnn = {});
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string name() const override { return "cuda"; }
  int device() const { return device_; }
  bool tf32() const { return tf32_; }

  void* allocate(size_t bytes) override;
  void release(void* ptr) noexcept override;
  void upload(void* dst, const void* host_src, size_t bytes) override;
  void download(void* host_dst, const void* src, size_t bytes) override;
  void copy(void* dst, const void* src, size_t bytes) override;
  void synchronize() override;
  // A second backend on this device with its own stream, staging, scratch and read-back buffer,
  // for another thread (backend.h).
  std::unique_ptr<Backend> make_peer() override;
  bool shareable_between_threads() const override { return false; }
  // Events on stream_, resolved when complete, and NVTX ranges (cuda/profile_clock.cu).
  std::unique_ptr<ProfileClock> make_profile_clock() override;

  void fill(float* x, size_t n, float value) override;
  void axpy(size_t n, float a, const float* x, float* y) override;
  void scale(float* x, size_t n, float a) override;
  double sum_squares(const float* x, size_t n) override;
  double sum_abs(const float* x, size_t n) override;
  // Sums kept on the device (backend.h): each adds into `sum` with a fixed-order kernel and
  // returns without waiting for the stream.
  void sum_squares_accumulate(const float* x, size_t n, double scale, double* sum) override;
  void sum_abs_accumulate(const float* x, size_t n, double scale, double* sum) override;
  void fold_loss_sums(double* sums, uint64_t batch) override;
  bool host_memory() const override { return false; }
  // How many product shapes gemm_bias planned with cuBLASLt's bias epilogue and how many fell
  // back to broadcast_bias + gemm (cuda/dense_lt.cpp).
  // The bias epilogue's shapes (cuda/dense_lt.cpp) and, when they are on, the step graphs.
  std::vector<std::string> path_notes() const override;
  // Training steps recorded as CUDA graphs (cuda/step_graph.h) unless NN_CUDA_GRAPHS=0.
  std::string begin_step_graph() override;
  void end_step_graph() override;
  void abandon_step_graph() noexcept override;
  // Uploads beside the stream (backend.h): copies on a second stream, ordered by events.
  uint64_t stream_mark() override;
  void begin_side_uploads(uint64_t after) override;
  void end_side_uploads() override;

  void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) override;
  // BF16 products (cuda/dense.cu): cublasGemmEx with CUDA_R_16BF operands and
  // CUBLAS_COMPUTE_32F; set_precision(BF16) needs compute capability 8.0 or newer.
  void set_precision(Precision p) override;
  Precision precision() const override { return precision_; }
  void convert_to_bf16(const float* src, uint16_t* dst, size_t n) override;
  void gemm_bf16_b(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                   int lda, const uint16_t* b16, int ldb, float beta, float* c, int ldc) override;
  void gemm_bf16_ab(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                    const uint16_t* a16, int lda, const uint16_t* b16, int ldb, float beta,
                    float* c, int ldc) override;
  // One cuBLASLt matmul with a bias epilogue (cuda/dense_lt.cpp), planned once per shape; the
  // base class's broadcast_bias + gemm where cuBLASLt has no algorithm for the shape, or when the
  // environment sets NN_CUDA_BIAS_EPILOGUE=0 (for comparisons).
  void gemm_bias(bool trans_a, bool trans_b, int m, int n, int k, const float* a,
                 const uint16_t* a16, int lda, const float* b, const uint16_t* b16, int ldb,
                 const float* bias, float* c) override;
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
  // One kernel per batch: the loss kernels computing the activations from z in their own sweep.
  void activate_loss_accumulate(const ActivationParams& act, const LossParams& p, float* z_to_a,
                                const TargetView& t, uint32_t rows, uint32_t cols, float* delta,
                                double* sum) override;

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
  // One kernel for every tensor (cuda/optimizer.cu): blocks take fixed chunks of the tensors
  // from a table on the device, uploaded again only when the tensors change; the BF16 copies
  // (OptimizerTensor::w_bf16) are written by the same threads from the updated values.
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

  // Norms and the sparseness penalty (cuda/norm.cu), batch normalisation (cuda/batch_norm.cu),
  // transposed sparse weights (cuda/sparse_transposed.cu).
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
  // Convolution (cuda/conv.cu), pooling (cuda/pool.cu), LRN (cuda/lrn.cu).
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
  // DotProduct and Cosine pooling (cuda/similarity.cu).
  void similarity_forward(PoolingFunction f, uint32_t rows, uint32_t cols, const float* a,
                          const float* b, float* y, uint32_t y_stride) override;
  void similarity_backward(PoolingFunction f, uint32_t rows, uint32_t cols, const float* a,
                           const float* b, const float* dy, uint32_t dy_stride, float* da,
                           float* db) override;
  // Variational layers (cuda/variational.cu).
  void variational_forward(const float* q, uint32_t rows, uint32_t n, bool sample, uint64_t seed,
                           uint64_t stream, float* a) override;
  void variational_backward(const float* q, const float* da, uint32_t rows, uint32_t n, bool sample,
                            float beta, uint64_t seed, uint64_t stream, float* dq) override;
  void variational_kl_accumulate(const float* q, uint32_t rows, uint32_t n, float beta,
                                 double* sum) override;

  // ---- for the kernel files -------------------------------------------------------------------
  cudaStream_t stream() const { return stream_; }
  // While a step is being recorded (begin_step_graph), a call that waits for the stream, or
  // allocates or frees device memory, cannot be part of a graph: for the lifetime of this object
  // the part recorded so far is launched and recording is paused; it resumes afterwards (the
  // step's next segment). Does nothing when no step is being recorded.
  class CaptureBreak {
   public:
    CaptureBreak(CudaBackend& b, const char* why);
    ~CaptureBreak();
    CaptureBreak(const CaptureBreak&) = delete;
    CaptureBreak& operator=(const CaptureBreak&) = delete;

   private:
    CudaBackend& b_;
    bool paused_ = false;
  };
  // Scratch device memory of at least `bytes`, one buffer per slot, kept between calls and grown
  // with 50% spare capacity (a batch with more non-zeros than any before rarely reallocates).
  // Contents are undefined; a slot is valid until the next scratch() call for the same slot.
  // kSlotBf16A/B hold the BF16 copies of gemm's operands in BF16 precision (cuda/dense.cu).
  enum Slot {
    kSlotA,
    kSlotB,
    kSlotC,
    kSlotD,
    kSlotE,
    kSlotF,
    kSlotTemp,
    kSlotBf16A,
    kSlotBf16B,
    kSlotLtWorkspace,  // cuBLASLt's workspace (gemm_bias)
    kSlotCount
  };
  void* scratch(Slot slot, size_t bytes);
  // The FP32 operand x (rows x cols, leading dimension ld) rounded to BF16 into scratch slot
  // `slot`, in the same layout (cuda/dense.cu).
  const uint16_t* bf16_operand(Slot slot, const float* x, int rows, int cols, int ld);
  // The bytes scratch slot `slot` holds now (0 before its first use).
  size_t scratch_capacity(Slot slot) const { return scratch_[slot].bytes; }
  // Number of stored entries of a CSR view: x.nnz when the caller set it, else row_ptr[rows]
  // read back from the device.
  uint64_t nnz_of(const SparseView& x);
  // Reads `count` doubles from device memory into pinned memory and waits for the stream.
  const double* read_back(const double* device_values, size_t count);
  // Data errors found by kernels (an index outside its range) are recorded on the device as
  // (row << 32 | index) with atomicMin (so the first bad row is reported, whatever the thread
  // order) and thrown as DataError by the next call that waits for the stream. A launcher that
  // may raise one first says how to word it: "<prefix><row>: index <index><suffix>".
  unsigned long long* error_flag() const { return error_flag_; }
  // Sparse targets whose rows the host found ascending skip the sort (backend/cuda_paths.h).
  bool presorted_targets() const { return presorted_; }
  void arm_data_error(std::string prefix, std::string suffix);
  void check_data_errors();
  // Sums `count` doubles on the device in a fixed order into *out (device): in parallel over
  // math::sum_blocks(count) blocks, then one block over their totals (backend/math/reduce_math.h).
  void sum_doubles(const double* values, size_t count, double* out);
  // The same sum s, added: *out += scale * s (math::add_scaled), for the *_accumulate forms.
  void add_sum_doubles(const double* values, size_t count, double scale, double* out);
  // The cuDNN handle on stream_ and the cached convolution plans, created on first use (so a
  // network without convolutions, LRN or batch norm never loads cuDNN); cudnn_support.cpp.
  cuda::Cudnn& cudnn();

 private:
  int device_ = 0;
  bool tf32_ = false;
  Precision precision_ = Precision::FP32;
  cuda::CudnnSettings cudnn_settings_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  double* pinned_ = nullptr;  // kPinnedDoubles doubles of page-locked host memory
  static constexpr size_t kPinnedDoubles = 64;
  static constexpr size_t kBlasWorkspaceBytes = size_t(32) << 20;
  // Uploads go through a ring of page-locked staging buffers, so cudaMemcpyAsync really is
  // asynchronous (from pageable memory it may wait for the stream) and the caller's host memory
  // may be reused at once. Each slot's event is recorded after its copy; a slot is refilled only
  // after its event completed, so a copy in flight never reads a buffer being rewritten. Larger
  // transfers go through several slots, kStagingChunk bytes each. Slots grow on demand (up to
  // kStagingChunk) and are released with the backend.
  struct Staging {
    void* host = nullptr;  // page-locked
    size_t bytes = 0;
    cudaEvent_t done = nullptr;  // recorded after the last copy that read `host`
    bool pending = false;
  };
  static constexpr size_t kStagingSlots = 16;
  static constexpr size_t kStagingChunk = size_t(4) << 20;
  Staging staging_[kStagingSlots];
  size_t next_staging_ = 0;
  // A slot ready to take `bytes` (<= kStagingChunk): the next in the ring, waited for and grown.
  Staging& staging_slot(size_t bytes);
  unsigned long long* error_flag_ = nullptr;  // device; ~0ull when no error
  // sum_doubles' first pass: math::kSumMaxBlocks block totals (device), and the pass itself (the
  // values unchanged when one block suffices, else the block totals, *count updated).
  double* sum_partial_ = nullptr;
  const double* sum_partials(const double* values, size_t* count);
  std::string error_prefix_, error_suffix_;
  struct Buffer {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  Buffer scratch_[kSlotCount];
  std::unique_ptr<cuda::Cudnn> cudnn_;
  std::unique_ptr<cuda::LtPlans> lt_;  // gemm_bias's plans, made on first use
  std::string lt_note() const;         // the epilogue's line of path_notes (cuda/dense_lt.cpp)
  // Graphs on (NN_CUDA_GRAPHS unset or 1): steps are recorded (graphs_, made with the first),
  // cuBLAS works in its own fixed workspace (blas_workspace_) so that it allocates nothing while
  // capturing.
  bool graphs_enabled_ = false;
  // Uploads beside the stream: side_ (made on first use), marks_ a ring of events recorded on
  // stream_ (mark m in slot m % kMarks: waiting for an old mark whose slot was recorded again
  // waits for a later point, which is safe), side_done_ recorded after a group of side copies.
  cudaStream_t side_ = nullptr;
  static constexpr uint64_t kMarks = 8;
  cudaEvent_t marks_[kMarks] = {};
  uint64_t next_mark_ = 1;
  cudaEvent_t side_done_ = nullptr;
  bool side_active_ = false;
  bool side_enabled_ = false;  // uploads beside the stream (off: every upload on stream_)
  std::unique_ptr<cuda::StepGraphs> graphs_;
  void* blas_workspace_ = nullptr;
  // The opt-in paths (backend/cuda_paths.h), read once at construction; a peer has its owner's.
  bool bias_epilogue_ = false;   // z = xW + b through cuBLASLt's bias epilogue
  bool multi_tensor_ = false;    // optimizer_step_multi in one launch
  bool sync_free_loss_ = false;  // output_delta does not wait for sparse targets
  bool presorted_ = false;       // ascending sparse target rows skip the sort
  bool peers_ = false;           // make_peer gives a peer (else null: evaluators take turns)
  // optimizer_step_multi's device table (tensors, then chunks) and the tensors it was built for.
  std::vector<OptimizerTensor> multi_tensors_;
  void* multi_table_ = nullptr;
  size_t multi_table_bytes_ = 0;
  uint32_t multi_chunks_ = 0;
};

// Threads per block of the elementwise kernels, and a grid that covers n elements with a
// grid-stride loop (capped: the loop does the rest).
constexpr int kThreads = 256;
inline unsigned grid_for(size_t n) {
  const size_t blocks = (n + kThreads - 1) / kThreads;
  return unsigned(blocks < 65535 * 8 ? (blocks ? blocks : 1) : 65535 * 8);
}

}  // namespace nn
