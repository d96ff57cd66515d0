// CpuBackend losses and output deltas: one pass over the activations computes the summed error
// and, optionally, dE/dz. Per-unit formulas: backend/math/loss_math.h and loss_row_math.h, the
// steps the CUDA kernels (cuda/loss.cu) run too; this file keeps the CPU's own row loops.
//
// Sparse targets are never densified: each row is swept with t = 0 (vectorised), then the
// stored entries are patched (their t = 0 error is subtracted and the real one added, their
// delta overwritten). Duplicated indices in a row merge: values add (analog), or t = 1 (Boolean).
// Where the t = 0 error is a log (CrossEntropy and the marginal cross-entropies), the sweep
// multiplies the units' factors and takes one log per lane (cpu/log_product.h) instead of a log
// per unit; the CUDA kernels take a log per unit, so the two backends' errors agree to the fast
// log's rounding (~3e-7 relative per unit), the deltas bit for bit.
//
// SoftMax outputs: CrossEntropy uses the closed form delta = w*(a*sum(t) - t), with sparse
// targets normalised to sum 1 (multinomial); ScaledMarginalCrossEntropy uses DSSTNE's
// rule (loss_math.h); every other error function applies the softmax Jacobian to dE/da, so the
// delta is the true gradient. With SparseIgnoreZero only stored units contribute to the error;
// for SoftMax the delta stays the true gradient of that error (non-stored units move through
// the normalisation), elsewhere non-stored deltas are 0.
//
// Example weights come from the sparse view's row_weight, else TargetView::row_weight. DeltaBoost
// (Sigmoid outputs, sparse targets, L2 or CrossEntropy) scales the deltas of non-stored units by
// delta_boost_zero and of stored ones by delta_boost_one; errors are not boosted.
//
// Determinism: one error per row (double), rows summed in order; rows are independent, so the
// result does not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/log_product.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/loss_kernel_choice.h"
#include "backend/math/loss_math.h"
#include "backend/math/loss_row_math.h"
#include "backend/math/loss_sums.h"
#include "backend/math/sparse_math.h"
#include "core/error.h"

namespace nn {
namespace {

using math::DerivKind;
using math::Form;
using math::form_of;

constexpr size_t kParallelMin = size_t(1) << 14;

// A row's stored targets, merged by index.
struct RowTargets {
  std::vector<std::pair<uint32_t, uint32_t>> keys;  // (index, entry position) for a stable merge
  std::vector<uint32_t> index;
  std::vector<float> value;
};

// Collects row r's targets; returns false (and the offending index in bad_index) when an index
// is out of range.
bool gather_targets(const SparseView& sp, uint32_t r, uint32_t cols, bool normalise,
                    const float* row_sum, RowTargets& out, uint32_t& bad_index) {
  const uint32_t lo = sp.row_ptr[r], hi = sp.row_ptr[r + 1];
  out.keys.clear();
  out.index.clear();
  out.value.clear();
  for (uint32_t e = lo; e < hi; ++e) {
    if (sp.index[e] >= cols) {
      bad_index = sp.index[e];
      return false;
    }
    out.keys.emplace_back(sp.index[e], e);
  }
  std::sort(out.keys.begin(), out.keys.end());
  for (size_t i = 0; i < out.keys.size(); ++i) {
    const uint32_t idx = out.keys[i].first;
    const float v = math::entry_value(sp.value, out.keys[i].second);
    if (!out.index.empty() && out.index.back() == idx) {
      if (sp.value) out.value.back() += v;
    } else {
      out.index.push_back(idx);
      out.value.push_back(v);
    }
  }
  if (normalise) {
    double sum = 0.0;
    for (float v : out.value) sum += v;
    if (row_sum) sum = row_sum[r];  // the whole row's, when these are some of its columns
    for (float& v : out.value) v = math::normalised_target(v, sum);
  }
  return true;
}

struct RowInput {
  const float* a;
  const float* dense_t;    // dense targets of the row, or nullptr
  const RowTargets* sp_t;  // merged sparse targets, or nullptr
  float w;
  float* d;  // deltas of the row, or nullptr
  // SoftMax over a slice of the row's columns: sum(t) over the whole row (after the sparse
  // normalisation), else negative (sum the columns at hand).
  double t_total = -1.0;
};

using Options = math::LossRowConsts;

double sum_lanes(const double* lanes) {
  double s = 0.0;
  for (size_t k = 0; k < cpu::kChunk; ++k) s += lanes[k];
  return s;
}

// Runs chunk(b, end) over a row's units in chunks of cpu::kChunk, prefetching the activations
// (and, with kDelta, the deltas) ahead of them (see stream.h): the frame of every sweep below.
template <bool kDelta, typename Chunk>
NN_FORCE_INLINE void sweep_chunks(const float* a, float* d, uint32_t cols, const Chunk& chunk) {
  for (uint32_t b = 0; b < cols; b += cpu::kChunk) {
    cpu::prefetch_ahead(a, b);
    if constexpr (kDelta) cpu::prefetch_ahead<1>(d, b);
    chunk(b, std::min<uint32_t>(cols, b + cpu::kChunk));
  }
}

// The sparse sweep (t = 0 at every unit) of a form whose error there is a log
// (math::kZeroErrorIsLog): the deltas as loss_sweep_unit gives them, the error as the log of the
// factors' product (cpu/log_product.h; its log per unit is left unused and compiled away).
template <Form F, DerivKind D, bool kDelta>
double log_error_sweep(const Options& o, const float* a, float* d, float w, uint32_t cols) {
  Options zeros = o;
  zeros.ignore_zero = false;
  cpu::LogProductLanes product;
  double* lanes = product.lanes();
  sweep_chunks<kDelta>(a, d, cols, [&](uint32_t b, uint32_t end) {
#pragma omp simd
    for (uint32_t j = b; j < end; ++j) {
      lanes[j - b] *= double(math::zero_log_factor<F>(zeros, a[j]));
      if constexpr (kDelta) {
        float dz;
        (void)math::loss_sweep_unit<F, D>(zeros, a[j], 0.0f, w, true, dz);
        d[j] = dz;
      }
    }
    product.end_chunk();
  });
  return -double(w) * double(math::zero_log_scale<F>(zeros)) * product.sum_of_logs();
}

// Elementwise activation family D (also SmceSoftMax): error of one row, deltas when kDelta.
// Per unit: math::loss_sweep_unit over the row, then math::loss_patch_unit for every stored
// sparse target (the steps the CUDA kernel runs, cuda/loss.cu).
template <Form F, DerivKind D, bool kDelta>
double elementwise_row(const Options& o, const RowInput& in, uint32_t cols) {
  const float* a = in.a;
  float* d = in.d;
  const float w = in.w;
  // Chunked with software prefetch (see stream.h); rows are contiguous, so prefetching past a
  // row's end warms the next row. Errors go to one double accumulator per position in the chunk
  // (independent adds, no loop-carried latency chain), summed in order at the end of the row.
  // The sweeps take local copies of the options: the compiler then knows they do not change
  // in the loop (and, for the sparse sweep, that SparseIgnoreZero is off), so it vectorises.
  alignas(64) double lanes[cpu::kChunk] = {};
  if (in.dense_t) {
    const float* t = in.dense_t;
    const Options dense = o;
    for (uint32_t b = 0; b < cols; b += cpu::kChunk) {
      const uint32_t end = std::min<uint32_t>(cols, b + cpu::kChunk);
      cpu::prefetch_ahead(a, b);
      cpu::prefetch_ahead(t, b);
      if constexpr (kDelta) cpu::prefetch_ahead<1>(d, b);
#pragma omp simd
      for (uint32_t j = b; j < end; ++j) {
        float dz;
        lanes[j - b] += math::loss_sweep_unit<F, D>(dense, a[j], t[j], w, false, dz);
        if constexpr (kDelta) d[j] = dz;
      }
    }
    return sum_lanes(lanes);
  }
  double acc = 0.0;
  if (o.ignore_zero) {
    if constexpr (kDelta) std::fill(d, d + cols, 0.0f);  // the sweep's result, without a sweep
  } else if constexpr (math::kZeroErrorIsLog<F>) {
    acc = log_error_sweep<F, D, kDelta>(o, a, d, w, cols);
  } else {
    Options zeros = o;
    zeros.ignore_zero = false;
    sweep_chunks<kDelta>(a, d, cols, [&](uint32_t b, uint32_t end) {
#pragma omp simd
      for (uint32_t j = b; j < end; ++j) {
        float dz;
        lanes[j - b] += math::loss_sweep_unit<F, D>(zeros, a[j], 0.0f, w, true, dz);
        if constexpr (kDelta) d[j] = dz;
      }
    });
    acc = sum_lanes(lanes);
  }
  const RowTargets& tg = *in.sp_t;
  for (size_t i = 0; i < tg.index.size(); ++i) {
    const uint32_t j = tg.index[i];
    float e, e0, dz;
    math::loss_patch_unit<F, D>(o, a[j], tg.value[i], w, e, e0, dz);
    acc += e;
    acc -= e0;
    if constexpr (kDelta) d[j] = dz;
  }
  return acc;
}

// SoftMax + CrossEntropy: e = -w * sum t ln a, delta = w * (a * sum(t) - t).
template <bool kDelta>
double softmax_ce_row(const Options& o, const RowInput& in, uint32_t cols) {
  const float* a = in.a;
  float* d = in.d;
  const float w = in.w;
  double acc = 0.0;
  if (in.dense_t) {
    const float* t = in.dense_t;
    double tsum = 0.0;
#pragma omp simd reduction(+ : acc, tsum)
    for (uint32_t j = 0; j < cols; ++j) {
      const float tj = t[j];
      acc += math::softmax_ce_error(a[j], tj, w);
      tsum += tj;
    }
    if constexpr (kDelta) {
      const float s = static_cast<float>(in.t_total >= 0.0 ? in.t_total : tsum);
#pragma omp simd
      for (uint32_t j = 0; j < cols; ++j) d[j] = math::softmax_ce_delta(a[j], t[j], w, s);
    }
    return acc;
  }
  const RowTargets& tg = *in.sp_t;
  double tsum = 0.0;
  for (size_t i = 0; i < tg.index.size(); ++i) {
    acc += math::softmax_ce_stored_error(a[tg.index[i]], tg.value[i], w);
    tsum += tg.value[i];
  }
  if constexpr (kDelta) {
    const float s = static_cast<float>(in.t_total >= 0.0 ? in.t_total : tsum);
#pragma omp simd
    for (uint32_t j = 0; j < cols; ++j) d[j] = math::softmax_ce_delta_zero(a[j], w, s);
    for (size_t i = 0; i < tg.index.size(); ++i) {
      const uint32_t j = tg.index[i];
      d[j] = math::softmax_ce_delta(a[j], tg.value[i], w, s);
    }
  }
  return acc;
}

// SoftMax + any other error function: g = dE/da per unit, then delta = a * (g - sum(g * a)).
template <Form F, bool kDelta>
double softmax_jacobian_row(const Options& o, const RowInput& in, uint32_t cols) {
  // Computing g through the One family leaves it as dE/da.
  const double acc = elementwise_row<F, DerivKind::One, kDelta>(o, in, cols);
  if constexpr (kDelta) {
    const float* a = in.a;
    float* d = in.d;
    double dot = 0.0;
#pragma omp simd reduction(+ : dot)
    for (uint32_t j = 0; j < cols; ++j) dot += double(d[j]) * a[j];
    const float s = static_cast<float>(dot);
#pragma omp simd
    for (uint32_t j = 0; j < cols; ++j) d[j] = math::softmax_jacobian(a[j], d[j], s);
  }
  return acc;
}

using RowFn = double (*)(const Options&, const RowInput&, uint32_t);

// The row functions math::choose_loss_kernel picks among (the table the CUDA kernels use too):
// a Jacobian instance is the SoftMax Jacobian row of its error function.
template <bool kDelta>
struct RowPicker {
  template <Form F, DerivKind D, bool kJacobian>
  static RowFn rows() {
    if constexpr (kJacobian)
      return &softmax_jacobian_row<F, kDelta>;
    else
      return &elementwise_row<F, D, kDelta>;
  }
  static RowFn softmax_ce() { return &softmax_ce_row<kDelta>; }
};

}  // namespace

double CpuBackend::loss_impl(const LossParams& p, const float* a, const TargetView& t,
                             uint32_t rows, uint32_t cols, float* delta) {
  if (rows == 0 || cols == 0) return 0.0;
  NN_CHECK(t.sparse ? t.sp.row_ptr != nullptr && t.sp.rows >= rows : t.dense != nullptr,
           "loss: target view does not cover the batch");
  const Form form = form_of(p.function);
  const bool softmax = p.activation.kind == Activation::SoftMax;
  const DerivKind dk = math::deriv_kind(p.activation.kind);
  const RowFn fn = delta ? math::choose_loss_kernel<RowPicker<true>>(form, dk, softmax)
                         : math::choose_loss_kernel<RowPicker<false>>(form, dk, softmax);
  NN_CHECK(fn != nullptr, "loss: no kernel for this error function and activation");

  const Options o = math::loss_row_consts(p, t);
  const bool normalise = math::normalised_targets(form, softmax, p.raw_softmax_targets);
  const float* weights = t.sparse && t.sp.row_weight ? t.sp.row_weight : t.row_weight;

  // Padded rows: a and delta rows `stride` apart, the units in the first cols of each.
  const size_t stride = p.row_stride ? p.row_stride : cols;
  NN_CHECK(stride >= cols, "loss: row_stride below the columns");
  std::vector<double> row_error(rows, 0.0);
  std::vector<int64_t> bad(rows, -1);
  auto range = [&](size_t lo, size_t hi) {
    RowTargets scratch;
    for (size_t r = lo; r < hi; ++r) {
      RowInput in{a + r * stride, nullptr, nullptr, math::example_weight(weights, r),
                  delta ? delta + r * stride : nullptr};
      if (t.row_sum)  // normalised sparse targets sum to 1 over the whole row (0 when none)
        in.t_total = t.sparse && normalise ? (t.row_sum[r] > 0.0f ? 1.0 : 0.0) : t.row_sum[r];
      if (t.sparse) {
        uint32_t bad_index = 0;
        if (!gather_targets(t.sp, uint32_t(r), cols, normalise, t.row_sum, scratch, bad_index)) {
          bad[r] = bad_index;
          continue;
        }
        in.sp_t = &scratch;
      } else {
        in.dense_t = t.dense + r * cols;
      }
      row_error[r] = fn(o, in, cols);
    }
  };
  if (size_t(rows) * cols >= kParallelMin)
    cpu::parallel_ranges(*pool_, rows, std::max<size_t>(1, cpu::kMinTaskFloats / cols), range);
  else
    range(0, rows);
  for (uint32_t r = 0; r < rows; ++r)
    if (bad[r] >= 0)
      throw DataError("loss: sparse targets of batch row " + std::to_string(r) + ": index " +
                      std::to_string(bad[r]) + " is outside the output layer's " +
                      std::to_string(cols) + " units");
  double sum = 0.0;
  for (double e : row_error) sum += e;
  return sum;
}

double CpuBackend::loss(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                        uint32_t cols) {
  return loss_impl(p, a, t, rows, cols, nullptr);
}

void CpuBackend::output_delta(const LossParams& p, const float* a, const TargetView& t,
                              uint32_t rows, uint32_t cols, float* delta) {
  loss_impl(p, a, t, rows, cols, delta);
}

double CpuBackend::loss_and_delta(const LossParams& p, const float* a, const TargetView& t,
                                  uint32_t rows, uint32_t cols, float* delta) {
  return loss_impl(p, a, t, rows, cols, delta);
}

void CpuBackend::loss_accumulate(const LossParams& p, const float* a, const TargetView& t,
                                 uint32_t rows, uint32_t cols, float* delta, double* sum) {
  math::add_scaled(sum, 1.0, loss_impl(p, a, t, rows, cols, delta));
}

}  // namespace nn
