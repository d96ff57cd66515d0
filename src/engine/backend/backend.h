// The compute seam. A Backend owns memory and runs every kernel family the model needs; layers
// call it with backend pointers and never see BLAS, OpenMP or CUDA. Every operation is pure
// virtual: both backends implement all of them, one kernel family per file with the same base
// name on each side (cpu/<family>.cpp, cuda/<family>.cu; docs/cuda-backend.md lists the pairs and
// the one-sided helpers), and their per-element formulas are one set of functions in
// backend/math/. The backend tests hold both to references of their own (tests/unit/backend/).
//
// Conventions:
//  * Matrices are row-major. Activations/deltas are [rows = batch][cols = units].
//  * Fully connected weights are W[in][out] (DSSTNE's layout), biases [out].
//  * Losses return the SUM over the batch of per-example errors (example weights applied).
//  * output_delta writes d(error_b)/dz for each example b (not divided by the batch size);
//    the model scales weight gradients by 1/batch.
//  * Optimizers minimise: w -= alpha * (g + lambda*w + lambda1*sign(w)) for SGD, and so on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "backend/conv_params.h"
#include "backend/kernel_params.h"
#include "config/enums.h"
#include "core/profile_clock.h"
#include "nn/error.h"

namespace nn {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;

  // ---- memory -------------------------------------------------------------------------------
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* ptr) noexcept = 0;
  virtual void upload(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void download(void* host_dst, const void* src, size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void synchronize() = 0;

  // ---- threads -------------------------------------------------------------------------------
  // A backend for another thread, or null when this one may be called from several threads at
  // once. The CPU backend may (its thread pool runs one job at a time and runs a second caller's
  // tasks inline; no kernel keeps scratch between calls): null. A CUDA backend keeps one stream,
  // a staging ring, scratch slots and a pinned read-back buffer, none of them locked: its peer is
  // a second backend on the same device with its own of each, and the same settings (precision,
  // TF32, cuDNN's), whose calls may use this backend's arrays (every stream of a device sees its
  // memory). This backend synchronizes first, so all it has written is there for the peer.
  // api::Evaluator gives each evaluator a peer where there is one (nn-serve's workers). Until a
  // GPU run passes them, CUDA's peers are opt-in (NN_CUDA_PEER_BACKENDS=1, backend/cuda_paths.h):
  // without them make_peer gives null although the backend may not be shared, and the
  // evaluators on it take turns (shareable_between_threads).
  virtual std::unique_ptr<Backend> make_peer() = 0;
  // Whether calls from several threads may run in this backend at once (the CPU's: yes; CUDA's:
  // no, see make_peer). Users that share a backend that may not be shared take turns on it.
  virtual bool shareable_between_threads() const { return true; }

  // ---- profiling (core/profiler.h, docs/performance.md) ---------------------------------------
  // A clock whose marks follow this backend's order of work, for nn-train --profile: the host's
  // steady clock where the backend is synchronous (CPU); events recorded on the stream where it
  // is not (CUDA, which also names the ranges for Nsight Systems through NVTX), read without
  // waiting for the device until the profiler asks for every mark. Made only when profiling.
  virtual std::unique_ptr<ProfileClock> make_profile_clock() = 0;

  // ---- step graphs (docs/performance.md, "CUDA Graphs") ---------------------------------------
  // A device backend may record the work of one training step as graphs instead of launching
  // each call (CUDA Graphs: the device then runs the step's kernels back to back, without a
  // launch from the host between them). begin_step_graph() starts recording and returns "", or
  // says why this backend records nothing (and then nothing changes). end_step_graph() runs what
  // was recorded; abandon_step_graph() drops it (the step threw). In between, every call is made
  // as usual and has the same effect, in the same order, as without a graph; a call that must
  // wait for the device (a read-back, an allocation) runs the part recorded so far first, so it
  // splits the step into several graphs. Uploads copy the caller's memory at once, as always.
  // (Inline: the CUDA module carries no engine object for them.)
  virtual std::string begin_step_graph() {
    return "the " + name() + " backend runs each call as it is made";
  }
  virtual void end_step_graph() {}
  virtual void abandon_step_graph() noexcept {}

  // ---- uploads beside the stream (docs/performance.md, "Uploads beside the step") -------------
  // A device backend may copy the next step's inputs on a second stream while the kernels of
  // the current step run. stream_mark() names the point the work queued so far reaches (0 on a
  // synchronous backend). Between begin_side_uploads(after) and end_side_uploads(), upload()
  // copies on that second stream: the copies start once the work queued before mark `after` is
  // done (0: at once), and the work queued after end_side_uploads() starts once they are done.
  // The caller must not let them write memory that work queued after `after` still reads (the
  // training loop gives its inputs two sets of buffers, one per step parity). Elsewhere, and on
  // the CPU backend, upload() is as always. (Inline: the CUDA module carries no engine object
  // for them.)
  virtual uint64_t stream_mark() { return 0; }
  virtual void begin_side_uploads(uint64_t after) { (void)after; }
  virtual void end_side_uploads() {}

  // ---- padded rows (docs/performance.md, "Padded rows") -----------------------------------------
  // The multiple of floats a wide layer's rows should come in for this backend's dense products
  // to run at full speed: cuBLAS's tensor-core kernels need every row of every operand 16-byte
  // aligned (8 floats also align the rows of the BF16 copies). The Network pads the rows of the
  // output layers that can be padded (model/network.h) to it; 1: no padding. The CPU backend's
  // default is 1, the CUDA backend's 1 until padded rows pass on a GPU (8 with
  // NN_CUDA_ROW_ALIGN=8, backend/cuda_paths.h); NN_CPU_ROW_ALIGN and NN_CUDA_ROW_ALIGN set another
  // (row_alignment_from_env), and set_row_alignment() (0 is taken as 1) changes it for the
  // networks built after it. A peer backend (make_peer) has the same.
  // (Inline: the CUDA module carries no engine object for them.)
  uint32_t row_alignment() const { return row_alignment_; }
  void set_row_alignment(uint32_t floats) { row_alignment_ = floats ? floats : 1; }

  // ---- elementwise / reductions --------------------------------------------------------------
  virtual void fill(float* x, size_t n, float value) = 0;
  virtual void axpy(size_t n, float a, const float* x, float* y) = 0;  // y += a*x
  virtual void scale(float* x, size_t n, float a) = 0;                 // x *= a
  virtual double sum_squares(const float* x, size_t n) = 0;
  virtual double sum_abs(const float* x, size_t n) = 0;

  // ---- dense linear algebra ------------------------------------------------------------------
  // C[m][n] = alpha * op(A)[m][k] * op(B)[k][n] + beta * C, row-major with leading dimensions.
  virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc) = 0;
  // Columns at which gemm cuts C into separately computed tiles: with t = this value (> 0), a
  // product whose C has columns [c0, c0 + w) of a larger product's C, c0 a multiple of t, w >= t
  // and c0 + w a multiple of t or the larger C's last column, gives those columns the larger
  // product's bits (predict/blocked_top_k.h scores wide layers in such blocks). 0: no such
  // promise (cuBLAS picks its kernels by shape).
  virtual uint32_t gemm_column_tile() const { return 0; }

  // ---- precision of the dense products (docs/wide-outputs.md, "BF16 arithmetic") -----------
  // FP32 (the default): gemm is FP32 throughout. BF16: gemm rounds both operands to BF16
  // (nearest, ties to even: math::float_to_bf16) and accumulates the products in FP32; C, alpha,
  // beta and everything outside gemm stay FP32. set_precision(BF16) throws ConfigError where this
  // backend cannot do BF16 products natively (the message says what is missing); the sparse
  // products, convolutions and all other kernels are unaffected.
  virtual void set_precision(Precision p) = 0;
  virtual Precision precision() const = 0;
  // dst[i] = math::float_to_bf16(src[i]) for i < n (both in backend memory): a layer converts its
  // weights (unless the optimizer wrote their copy: OptimizerTensor::w_bf16), its input and its
  // delta once per pass and hands the copies to gemm_bf16_ab.
  virtual void convert_to_bf16(const float* src, uint16_t* dst, size_t n) = 0;
  // gemm whose B is given in BF16 (b16: convert_to_bf16 of an FP32 B with the same layout and
  // ldb): A is rounded to BF16, products accumulate in FP32, C = alpha * op(A) op(B) + beta * C.
  // The same arithmetic as gemm in BF16 mode, without converting B again; any precision setting.
  virtual void gemm_bf16_b(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                           const float* a, int lda, const uint16_t* b16, int ldb, float beta,
                           float* c, int ldc) = 0;
  // gemm with both operands given in BF16 (a16, b16: convert_to_bf16 copies of FP32 operands with
  // the same layouts and leading dimensions): products accumulate in FP32, C = alpha * op(A)
  // op(B) + beta * C. The same arithmetic, bit for bit, as gemm in BF16 mode on the FP32
  // operands, without converting either again; any precision setting.
  virtual void gemm_bf16_ab(bool trans_a, bool trans_b, int m, int n, int k, float alpha,
                            const uint16_t* a16, int lda, const uint16_t* b16, int ldb, float beta,
                            float* c, int ldc) = 0;
  // C[m][n] (leading dimension n) = op(A) op(B) + bias, bias[j] added to every row's column j,
  // C's earlier contents unused: a fully connected layer's z. The operands are FP32 (a, b, as
  // gemm takes them, in the current precision) or both BF16 copies (a16, b16, as gemm_bf16_ab
  // takes them; a and b are then unused). The base class writes the bias (broadcast_bias) and
  // adds the product to it (gemm with beta = 1); the CUDA backend runs one cuBLASLt matmul with a
  // bias epilogue, which neither writes C first nor reads it back.
  // (Inline: the CUDA module carries no engine object for it.)
  virtual void gemm_bias(bool trans_a, bool trans_b, int m, int n, int k, const float* a,
                         const uint16_t* a16, int lda, const float* b, const uint16_t* b16, int ldb,
                         const float* bias, float* c) {
    if (m <= 0 || n <= 0) return;
    broadcast_bias(c, bias, uint32_t(m), uint32_t(n), /*accumulate=*/false);
    if (a16 && b16)
      gemm_bf16_ab(trans_a, trans_b, m, n, k, 1.0f, a16, lda, b16, ldb, 1.0f, c, n);
    else
      gemm(trans_a, trans_b, m, n, k, 1.0f, a, lda, b, ldb, 1.0f, c, n);
  }
  // z[r][c] = bias[c] (accumulate=false) or z[r][c] += bias[c].
  virtual void broadcast_bias(float* z, const float* bias, uint32_t rows, uint32_t cols,
                              bool accumulate) = 0;
  // out[c] = beta*out[c] + alpha * sum_r x[r][c].
  virtual void column_sums(const float* x, uint32_t rows, uint32_t cols, float alpha, float beta,
                           float* out) = 0;

  // ---- sparse inputs (never densified) -------------------------------------------------------
  // z[r][o] += sum_{entries e of row r} v_e * w_r * W[index_e][o]   (W is [x.cols][n_out])
  virtual void sparse_matmul(const SparseView& x, const float* w, uint32_t n_out, float* z) = 0;
  // g[index_e][o] += alpha * v_e * w_r * delta[r][o]   (g is [x.cols][n_out])
  virtual void sparse_weight_gradient(const SparseView& x, const float* delta, uint32_t n_out,
                                      float alpha, float* g) = 0;

  // ---- activations ---------------------------------------------------------------------------
  // In place: x = f(x). SoftMax normalises each row.
  virtual void activate(const ActivationParams& p, float* x, uint32_t rows, uint32_t cols) = 0;
  // In place: delta *= f'(z) expressed through the activation a = f(z).
  virtual void activation_backward(const ActivationParams& p, const float* a, float* delta,
                                   uint32_t rows, uint32_t cols) = 0;
  // MaxOut over groups of k pieces. z is [groups][k][inner]: piece i of output (g, s) is
  // z[(g*k + i)*inner + s]; a is [groups][inner]. a = the largest piece (NaN if any piece is
  // NaN, so divergence shows); arg = its i (the first on ties), kept for the backward pass.
  virtual void maxout_forward(const float* z, size_t groups, uint32_t k, uint32_t inner, float* a,
                              uint32_t* arg) = 0;
  // dz (overwritten, [groups][k][inner]) = da routed to the winning piece, 0 elsewhere.
  virtual void maxout_backward(const float* da, const uint32_t* arg, size_t groups, uint32_t k,
                               uint32_t inner, float* dz) = 0;

  // ---- losses -------------------------------------------------------------------------------
  virtual double loss(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                      uint32_t cols) = 0;
  virtual void output_delta(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                            uint32_t cols, float* delta) = 0;
  // Both in one pass over the activations (the training hot path); returns the summed error.
  virtual double loss_and_delta(const LossParams& p, const float* a, const TargetView& t,
                                uint32_t rows, uint32_t cols, float* delta) {
    output_delta(p, a, t, rows, cols, delta);
    return loss(p, a, t, rows, cols);
  }

  // ---- sums kept in backend memory (read back once per reporting interval) -------------------
  // The double-returning losses and reductions above wait for the device on CUDA: one hidden
  // synchronisation per call. The *_accumulate forms instead add their value into a double in
  // this backend's memory (`sum`, from allocate()), in one addition: *sum += value, where value
  // is exactly what the double-returning form returns (scale * sum_squares(x, n) etc.), so a sum
  // built with them has the bits of the same values added on the host in the same order (on the
  // CPU backend; CUDA sums in its own fixed order). Read the sums with download(), once per
  // reporting interval. On CUDA a data error found by the loss (a sparse target index outside the
  // layer) is thrown by that read, not by the call.
  virtual void loss_accumulate(const LossParams& p, const float* a, const TargetView& t,
                               uint32_t rows, uint32_t cols, float* delta, double* sum) = 0;
  // An output layer's training step in one operation: z_to_a = f(z) in place (activation `act`,
  // as activate()), then loss_accumulate over those activations (p.activation is the same
  // activation, seen by the loss). The results are exactly those of the two calls in that order;
  // this default is that composition (the CPU backend keeps it). A device backend fuses both into
  // one pass over the row, so the wide output layer is read and written once instead of twice.
  virtual void activate_loss_accumulate(const ActivationParams& act, const LossParams& p,
                                        float* z_to_a, const TargetView& t, uint32_t rows,
                                        uint32_t cols, float* delta, double* sum) {
    activate(act, z_to_a, rows, cols);
    loss_accumulate(p, z_to_a, t, rows, cols, delta, sum);
  }
  virtual void sum_squares_accumulate(const float* x, size_t n, double scale, double* sum) = 0;
  virtual void sum_abs_accumulate(const float* x, size_t n, double scale, double* sum) = 0;
  // Training-loss bookkeeping over kLossSumCount doubles laid out as in backend/math/loss_sums.h:
  // moves the batch's data and penalty sums into the running total and remembers the first
  // batch (1-based `batch`) whose error was NaN or infinite (math::fold_loss_sums).
  virtual void fold_loss_sums(double* sums, uint64_t batch) = 0;
  // True when allocate() returns host memory, so reading a sum back costs no synchronisation
  // (the trainer then checks for divergence after every batch).
  virtual bool host_memory() const = 0;
  // Lines on how the backend ran what it was asked (for benchmark logs and --profile): e.g. which
  // products a faster library path took and which fell back. Empty by default.
  // (Inline: the CUDA module carries no engine object for it.)
  virtual std::vector<std::string> path_notes() const { return {}; }

  // ---- regularisation noise -------------------------------------------------------------------
  // Inverted dropout with a counter-based mask: element i is dropped when
  // uniform_at(seed, stream, i) < p; dropped => 0, kept => x / (1 - p). The backward variant
  // applies the identical mask to a delta.
  virtual void dropout(float* x, size_t n, float p, uint64_t seed, uint64_t stream) = 0;
  virtual void dropout_backward(float* delta, size_t n, float p, uint64_t seed,
                                uint64_t stream) = 0;

  // ---- optimizers ----------------------------------------------------------------------------
  // One update of n parameters from gradient g (true gradient of the mean loss).
  // state0/state1 hold optimizer_state_count(p.kind) arrays of n floats (may be null if unused).
  virtual void optimizer_step(const OptimizerParams& p, float* w, const float* g, float* state0,
                              float* state1, size_t n) = 0;
  // Several parameter arrays in one call (a multi-tensor step): tensors[i] takes the update
  // optimizer_step would give it with `p`, its lambda and lambda1 zero where !regularize, element
  // for element the same arithmetic, and its BF16 copy written where w_bf16 is set. The base
  // class calls optimizer_step (then convert_to_bf16) once per tensor; the CUDA backend updates
  // them all, copies included, in one kernel launch.
  // (Inline: the CUDA module carries no engine object for it.)
  virtual void optimizer_step_multi(const OptimizerParams& p, const OptimizerTensor* tensors,
                                    size_t count) {
    for (size_t i = 0; i < count; ++i) {
      const OptimizerTensor& t = tensors[i];
      OptimizerParams q = p;
      if (!t.regularize) q.lambda = q.lambda1 = 0.0f;
      optimizer_step(q, t.w, t.g, t.state0, t.state1, t.n);
      if (t.w_bf16) convert_to_bf16(t.w, t.w_bf16, t.n);
    }
  }
  // Row-sparse form (train/row_sparse.h): w, state0 and state1 viewed as [*][width]; rows
  // rows[0..count) (distinct, backend memory) take the update optimizer_step would give them with
  // gradient g ([count][width], compact), element for element the same arithmetic; every other
  // row and its state are left alone.
  virtual void optimizer_step_rows(const OptimizerParams& p, float* w, const float* g,
                                   float* state0, float* state1, uint32_t width,
                                   const uint32_t* rows, uint32_t count) = 0;
  // Steps a row-sparse update skipped, caught up in closed form (math::skip_unit): row rows[i]
  // (row i when rows is null) of the [*][width] arrays with factors[2i], factors[2i + 1]
  // (math::SkipFactors, computed on the host; backend memory). Rules whose skipped steps change
  // nothing, or have no closed form, do nothing.
  virtual void optimizer_skip_rows(OptimizerKind kind, float* w, float* state0, float* state1,
                                   uint32_t width, const uint32_t* rows, const float* factors,
                                   uint32_t count) = 0;

  // ---- sampled outputs (train/sampled_output.h) -----------------------------------------------
  // scale_columns multiplies x[r][k] of x[rows][cols] by w[k], scale_rows by w[r] (w in backend
  // memory).
  virtual void scale_columns(float* x, uint32_t rows, uint32_t cols, const float* w) = 0;
  virtual void scale_rows(float* x, uint32_t rows, uint32_t cols, const float* w) = 0;
  // Rows of a row-major matrix by index (a sampled layer holds its weights transposed while it
  // trains, so that a sampled column is one contiguous row): gather_rows writes
  // dst[k][:] = src[index[k]][:] (src[*][width], dst[count][width]); scatter_rows the reverse,
  // dst[index[k]][:] = src[k][:] (the indices distinct). `index` is in backend memory.
  virtual void gather_rows(const float* src, uint32_t width, const uint32_t* index, uint32_t count,
                           float* dst) = 0;
  virtual void scatter_rows(const float* src, uint32_t width, const uint32_t* index, uint32_t count,
                            float* dst) = 0;
  // dst[c][r] = src[r][c] for src[rows][cols] (dst[cols][rows]; the two must not overlap).
  virtual void transpose(const float* src, uint32_t rows, uint32_t cols, float* dst) = 0;

  // ---- prediction ----------------------------------------------------------------------------
  // Per row, the k largest values (descending; ties by lower index) and their column indices.
  // Columns with index >= valid_cols are ignored. Entries past the row's count get index
  // UINT32_MAX and value -inf.
  virtual void top_k(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols, uint32_t k,
                     float* values, uint32_t* indices) = 0;
  // top_k for serving, after per-row filters (TopKFilter, kernel_params.h): a row's scaled
  // columns are multiplied first; excluded columns and NaN scores are then left out (not ranked
  // last), and values are the scaled scores. Otherwise as top_k: descending, ties to the lower
  // column, columns >= valid_cols ignored, -inf / UINT32_MAX past the row's candidates. Only
  // rows * k results are written, so a caller reading them back moves k per row, not the row.
  virtual void top_k_filtered(const float* x, uint32_t rows, uint32_t cols, uint32_t valid_cols,
                              uint32_t k, const TopKFilter& filter, float* values,
                              uint32_t* indices) = 0;

  // ---- layer features: norms, sparseness penalty, batch norm, transposed sparse weights -------
  // DeltaNorm: every row of x[rows][cols] whose Euclidean length exceeds max_norm is rescaled
  // to length max_norm; shorter rows are left untouched.
  virtual void clip_row_norms(float* x, uint32_t rows, uint32_t cols, float max_norm) = 0;
  // WeightNorm: the same for every column of w[rows][cols] (with W[in][out], a column is one
  // output unit's incoming weights).
  virtual void clip_column_norms(float* w, uint32_t rows, uint32_t cols, float max_norm) = 0;
  // Sparseness penalty on activations a[rows][cols]: rho_j = mean over rows of a[.][j], clamped
  // to [1e-6, 1 - 1e-6]. Returns rows * beta * sum_j KL(p || rho_j) (the penalty summed over
  // the batch, like losses). When delta != nullptr, adds its derivative
  // beta * (-p / rho_j + (1 - p) / (1 - rho_j)) to delta[r][j] for every row r.
  virtual double sparseness_penalty(const float* a, uint32_t rows, uint32_t cols, float p,
                                    float beta, float* delta) = 0;
  // *sum += sparseness_penalty(a, rows, cols, p, beta, delta), kept in backend memory (see the
  // *_accumulate forms above).
  virtual void sparseness_penalty_accumulate(const float* a, uint32_t rows, uint32_t cols, float p,
                                             float beta, float* delta, double* sum) = 0;
  // Batch normalisation (layout in BatchNormParams): y = scale * (x - mean) / sqrt(var + eps)
  // + bias per channel. Training uses the batch mean and (biased) variance, saves the mean and
  // 1/sqrt(var + eps) for backward and updates the running statistics; y may alias x.
  virtual void batch_norm_forward_training(const BatchNormParams& p, const float* x, float* y,
                                           const float* scale, const float* bias,
                                           float* running_mean, float* running_var,
                                           float* save_mean, float* save_inv_std) = 0;
  // Inference: the running statistics instead of the batch's; y may alias x.
  virtual void batch_norm_forward_inference(const BatchNormParams& p, const float* x, float* y,
                                            const float* scale, const float* bias,
                                            const float* running_mean,
                                            const float* running_var) = 0;
  // Backward of the training forward: dx = dE/dx from dy = dE/dy (dx may alias dy);
  // dscale = alpha * sum(dy * x_hat), dbias = alpha * sum(dy) per channel (overwritten).
  virtual void batch_norm_backward(const BatchNormParams& p, const float* x, const float* dy,
                                   const float* scale, const float* save_mean,
                                   const float* save_inv_std, float alpha, float* dx, float* dscale,
                                   float* dbias) = 0;
  // Backward of the inference forward (a fixed affine map per channel): dx = dy * scale /
  // sqrt(running_var + eps) (dx may alias dy); dscale = alpha * sum(dy * x_hat) with x_hat from
  // the running statistics, dbias = alpha * sum(dy) (overwritten). For gradient checks in
  // inference mode and for fine-tuning with frozen statistics.
  virtual void batch_norm_backward_inference(const BatchNormParams& p, const float* x,
                                             const float* dy, const float* scale,
                                             const float* running_mean, const float* running_var,
                                             float alpha, float* dx, float* dscale,
                                             float* dbias) = 0;
  // Sparse inputs through a transposed (shared) weight matrix w[n_out][x.cols]:
  // z[r][o] += sum_{entries e of row r} v_e * w_r * w[o][index_e].
  virtual void sparse_matmul_transposed(const SparseView& x, const float* w, uint32_t n_out,
                                        float* z) = 0;
  // g[o][index_e] += alpha * v_e * w_r * delta[r][o]   (g is [n_out][x.cols]).
  virtual void sparse_weight_gradient_transposed(const SparseView& x, const float* delta,
                                                 uint32_t n_out, float alpha, float* g) = 0;

  // ---- convolution, pooling, local response normalisation ------------------------------------
  // Shapes and layouts in backend/conv_params.h: batches are [rows][channels][z][y][x]. Backward
  // kernels ADD into dx (a layer's delta sums its consumers).
  //
  // y = x (*) w + bias per output channel; accumulate adds to y instead of overwriting it.
  virtual void conv_forward(const ConvGeometry& g, uint32_t rows, const float* x, const float* w,
                            const float* bias, bool accumulate, float* y) = 0;
  // dx += the gradient of sum(dy * y) with respect to x.
  virtual void conv_backward_data(const ConvGeometry& g, uint32_t rows, const float* dy,
                                  const float* w, float* dx) = 0;
  // dw = alpha * dE/dw and dbias = alpha * (sum of dy per output channel), overwritten.
  virtual void conv_backward_filter(const ConvGeometry& g, uint32_t rows, const float* x,
                                    const float* dy, float alpha, float* dw, float* dbias) = 0;
  // Max / Average pooling: y = pool(x) (or y += pool(x)); dx += its gradient (from x alone: Max
  // routes each window's dy to its first largest input).
  virtual void pool_forward(const PoolParams& p, uint32_t rows, const float* x, bool accumulate,
                            float* y) = 0;
  virtual void pool_backward(const PoolParams& p, uint32_t rows, const float* x, const float* dy,
                             float* dx) = 0;
  // Cross-channel LRN: y = lrn(x) (or y += lrn(x)); dx += its gradient (from x alone).
  virtual void lrn_forward(const LrnParams& p, uint32_t rows, const float* x, bool accumulate,
                           float* y) = 0;
  virtual void lrn_backward(const LrnParams& p, uint32_t rows, const float* x, const float* dy,
                            float* dx) = 0;

  // ---- variational layers (layers/variational_layer.h) ----------------------------------------
  // q is [rows][2n]: each example's means in columns [0, n) and log-variances in [n, 2n). The
  // noise of element (r, j) is math::gaussian_at(seed, stream, r * n + j), so the backward pass
  // re-derives the forward's draws (as dropout does) and backends draw the same numbers.
  //
  // a[r][j] = mean + noise * exp(logvar / 2) (sample), or a = mean (prediction).
  virtual void variational_forward(const float* q, uint32_t rows, uint32_t n, bool sample,
                                   uint64_t seed, uint64_t stream, float* a) = 0;
  // dq (overwritten, [rows][2n]) = the gradient with respect to q of the loss that reached a
  // (da = dE/da, [rows][n]) plus beta times the KL term:
  //   d mean = da + beta * mean,
  //   d logvar = da * noise * exp(logvar / 2) / 2 (when sample) + beta * (exp(logvar) - 1) / 2.
  virtual void variational_backward(const float* q, const float* da, uint32_t rows, uint32_t n,
                                    bool sample, float beta, uint64_t seed, uint64_t stream,
                                    float* dq) = 0;
  // *sum += beta * sum over rows and units of KL(N(mean, exp(logvar)) || N(0, 1)), each
  // (mean^2 + exp(logvar) - logvar - 1) / 2: the term's value, summed over the batch like the
  // losses (the *_accumulate convention above).
  virtual void variational_kl_accumulate(const float* q, uint32_t rows, uint32_t n, float beta,
                                         double* sum) = 0;

  // ---- similarity pooling: DotProduct and Cosine ----------------------------------------------
  // Pooling layers that score every additional source against source 0, one output unit per
  // additional source (docs/config-reference.md, "Convolutional and Pooling layers").
  //
  // Cosine guards zero vectors: each norm is clamped to at least kCosineEpsilon, so a zero row
  // scores 0 instead of NaN (and a nearly zero one gets large but finite gradients).
  static constexpr float kCosineEpsilon = 1e-8f;
  // For every row r of a[rows][cols] and b[rows][cols] (f is DotProduct or Cosine):
  //   y[r * y_stride] = a_r . b_r                                        (DotProduct)
  //   y[r * y_stride] = a_r . b_r / (max(|a_r|, eps) * max(|b_r|, eps))  (Cosine)
  // Overwritten; y_stride lets one call fill one column of a [rows][sources - 1] output.
  virtual void similarity_forward(PoolingFunction f, uint32_t rows, uint32_t cols, const float* a,
                                  const float* b, float* y, uint32_t y_stride) = 0;
  // Backward, from a and b alone: da[r] += dy[r * dy_stride] * d(score_r)/d(a_r), and likewise
  // db. Either may be null (no gradient wanted); they may be the same array.
  virtual void similarity_backward(PoolingFunction f, uint32_t rows, uint32_t cols, const float* a,
                                   const float* b, const float* dy, uint32_t dy_stride, float* da,
                                   float* db) = 0;

 private:
  uint32_t row_alignment_ = 1;
};

// The row alignment environment variable `variable` asks for: `fallback` when it is unset or
// empty, else its value, a count of floats from 1 to 4096 (ConfigError otherwise, naming it).
inline uint32_t row_alignment_from_env(const char* variable, uint32_t fallback) {
  const char* text = std::getenv(variable);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (*end != '\0' || v < 1 || v > 4096 || text[0] == '-' || text[0] == '+')
    throw ConfigError(std::string(variable) + "=" + text +
                      ": expected a count of floats from 1 to 4096 (1: rows unpadded)");
  return uint32_t(v);
}

// Creates a backend by name: "cpu", "cuda", or "auto" (cuda when this build has the CUDA backend
// and CUDA device `device` is usable, else cpu). `threads` = 0 uses every core (CPU backend);
// `device` is the CUDA device index (0-based; ignored by the CPU backend). Throws ConfigError for
// an unknown or unavailable backend or device.
std::unique_ptr<Backend> make_backend(const std::string& name, int threads = 0, int device = 0);

}  // namespace nn
