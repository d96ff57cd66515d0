// The per-unit steps of the row-wise loss kernels (cpu/loss.cpp's algorithm, split so that a GPU
// block can run each step over a row's units in parallel; the CPU's loops call the same steps):
//   sweep  every unit of a row with its dense target, or t = 0 for sparse targets;
//   patch  every stored sparse target (merged by index) after the sweep: its t = 0 error is
//          replaced by the real one and its delta overwritten;
//   softmax forms: the closed form of SoftMax + CrossEntropy and the SoftMax Jacobian.
// Sparse targets are read in an order sorted stably by index (so duplicates are adjacent and in
// entry order, as the CPU backend merges them). __host__ __device__ under nvcc; the backend tests
// check both backends against a reference of their own, and a host test runs the CUDA kernels'
// index space on the CPU.
#pragma once

#include <cstdint>

#include "backend/math/loss_math.h"

namespace nn::math {

struct LossRowConsts {
  LossConsts c;
  bool ignore_zero = false;                   // SparseIgnoreZero: only stored units count
  float boost_zero = 1.0f, boost_one = 1.0f;  // DeltaBoost (Sigmoid, sparse, L2 or CE)
};

// A loss's row constants (host side, every backend): the activation's derivative constants,
// the SMCE targets and scales, SparseIgnoreZero, and DeltaBoost where it applies (sparse
// targets through a Sigmoid with L2 or CrossEntropy).
inline LossRowConsts loss_row_consts(const LossParams& p, const TargetView& t) {
  LossRowConsts o;
  o.c.k = deriv_consts(p.activation);
  o.c.one_target = p.smce_one_target;
  o.c.zero_target = p.smce_zero_target;
  o.c.one_scale = p.smce_one_scale;
  o.c.zero_scale = p.smce_zero_scale;
  o.ignore_zero = t.sparse && t.ignore_zero;
  if (t.sparse && p.activation.kind == Activation::Sigmoid &&
      (p.function == ErrorFunction::L2 || p.function == ErrorFunction::CrossEntropy)) {
    o.boost_zero = p.delta_boost_zero;
    o.boost_one = p.delta_boost_one;
  }
  return o;
}

// Multinomial targets (normalised per row) for the SoftMax cross-entropy forms, unless the
// network asks for the raw targets (SoftMaxTargets Raw: LossParams::raw_softmax_targets).
inline bool normalised_targets(Form f, bool softmax, bool raw) {
  return softmax && !raw && (f == Form::CrossEntropy || f == Form::Smce);
}

// Sweep of unit (r, j) with target t (0 for sparse targets, whose stored units are patched
// afterwards): returns its error and sets d to its delta. With sparse targets DeltaBoost scales
// the delta by boost_zero, and under SparseIgnoreZero the unit counts for nothing.
template <Form F, DerivKind D>
NN_FORCE_INLINE float loss_sweep_unit(const LossRowConsts& o, float a, float t, float w,
                                      bool sparse, float& d) {
  if (sparse && o.ignore_zero) {
    d = 0.0f;
    return 0.0f;
  }
  float e, dz;
  unit_delta<F, D>(o.c, a, t, w, e, dz);
  d = sparse ? dz * o.boost_zero : dz;
  return e;
}

// Forms whose sweep error (t = 0) is a logarithm: -w * zero_log_scale * ln(zero_log_factor(a)),
// equal to loss_sweep_unit's error up to the rounding of the log. The CPU backend multiplies the
// factors and takes one log per lane (cpu/log_product.h) instead of a log per unit.
template <Form F>
constexpr bool kZeroErrorIsLog = F == Form::CrossEntropy || F == Form::Smce || F == Form::Dsmce;

// The factor of a unit with target 0 (floor_log's clamp; 1 where the unit does not count: the
// marginal forms count a zero unit only above zero_target).
template <Form F>
NN_FORCE_INLINE float zero_log_factor(const LossRowConsts& o, float a) {
  static_assert(kZeroErrorIsLog<F>, "no log in this form's zero-target error");
  const float f = fastmath::max_of(1.0f - a, kLogFloor);
  if constexpr (F == Form::CrossEntropy)
    return f;
  else
    return a > o.c.zero_target ? f : 1.0f;
}
template <Form F>
NN_FORCE_INLINE float zero_log_scale(const LossRowConsts& o) {
  static_assert(kZeroErrorIsLog<F>, "no log in this form's zero-target error");
  return F == Form::CrossEntropy ? 1.0f : o.c.zero_scale;
}

// Patch of a stored target v at a unit with activation a: its error e and the t = 0 error e0
// that the sweep counted (0 under ignore_zero), to be replaced by e; d is set to its delta.
template <Form F, DerivKind D>
NN_FORCE_INLINE void loss_patch_unit(const LossRowConsts& o, float a, float v, float w, float& e,
                                     float& e0, float& d) {
  float dz;
  unit_delta<F, D>(o.c, a, v, w, e, dz);
  e0 = 0.0f;
  if (!o.ignore_zero) {
    float dz0;
    unit_delta<F, D>(o.c, a, 0.0f, w, e0, dz0);
  }
  d = dz * o.boost_one;
}

// Position i of a row's entries sorted stably by index (sorted_index / sorted_entry): true when
// it starts a run of equal indices (the merged target is stored there).
NN_FORCE_INLINE bool run_start(const uint32_t* sorted_index, uint32_t lo, uint32_t i) {
  return i == lo || sorted_index[i] != sorted_index[i - 1];
}

// The merged target value of the run starting at i: values add in entry order (analog targets),
// or 1 (Boolean targets, value == nullptr).
NN_FORCE_INLINE float merged_target(const uint32_t* sorted_index, const uint32_t* sorted_entry,
                                    const float* value, uint32_t i, uint32_t hi) {
  if (!value) return 1.0f;
  // sorted_entry null: the entries are in sorted order already (SparseView::rows_sorted).
  float v = value[sorted_entry ? sorted_entry[i] : i];
  for (uint32_t q = i + 1; q < hi && sorted_index[q] == sorted_index[i]; ++q)
    v += value[sorted_entry ? sorted_entry[q] : q];
  return v;
}

// Normalisation of a multinomial target (SoftMax cross-entropy forms): v / sum when sum > 0.
NN_FORCE_INLINE float normalised_target(float v, double sum) {
  return sum > 0.0 ? static_cast<float>(v / sum) : v;
}

// SoftMax + CrossEntropy: a unit's error -w*t*ln a (0 when t = 0) and its delta w*(a*s - t),
// s = the row's target sum.
NN_FORCE_INLINE float softmax_ce_error(float a, float t, float w) {
  return t != 0.0f ? -w * t * floor_log(a) : 0.0f;
}
// The error of a stored sparse target v (no t = 0 test: a stored target counts as it is).
NN_FORCE_INLINE float softmax_ce_stored_error(float a, float v, float w) {
  return -w * v * floor_log(a);
}
NN_FORCE_INLINE float softmax_ce_delta(float a, float t, float w, float s) {
  return w * (a * s - t);
}
// The delta of a unit without a stored target (sparse targets), in the CPU backend's order.
NN_FORCE_INLINE float softmax_ce_delta_zero(float a, float w, float s) {
  return w * a * s;
}

// SoftMax Jacobian applied to g = dE/da: dE/dz = a * (g - sum(g * a)).
NN_FORCE_INLINE float softmax_jacobian(float a, float g, float dot) {
  return a * (g - dot);
}

}  // namespace nn::math
