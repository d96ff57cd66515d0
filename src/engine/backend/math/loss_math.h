// Per-unit error and output-delta formulas of every ErrorFunction (DSSTNE's engine/kLoss.cu and
// engine/kDelta.cu, with DSSTNE's wrong or missing deltas replaced by true derivatives, as listed
// in docs/dsstne-compatibility.md, "Deviations"). One unit has activation a = f(z), target t and
// example weight w. unit_loss gives the error e and g = dE/da; unit_delta gives e and dE/dz for
// an elementwise activation family, with closed forms where the product g * f'(z) would cancel
// badly (log-losses after a sigmoid).
//
// Written as branch-free selects so the sparse-target sweep (t = 0 for every unit) vectorises;
// terms multiplied by t or (1 - t) are guarded so that a constant t = 0 folds them away.
#pragma once

#include <algorithm>
#include <cmath>

#include "backend/kernel_params.h"
#include "backend/math/activation_math.h"
#include "backend/math/fast_math.h"
#include "core/error.h"

namespace nn::math {

// DSSTNE's MIN_ERROR: logs (and the matching 1/x factors) use max(x, 1e-12).
constexpr float kLogFloor = 1e-12f;

// The error forms the kernels distinguish. SmceSoftMax is DSSTNE's SoftMax variant of
// ScaledMarginalCrossEntropy, an elementwise rule on the softmax output.
enum class Form { L1, L2, L2Hinge, Hinge, CrossEntropy, Smce, Dsmce, SmceSoftMax };

// The form of an error function (host side; both backends pick their kernels by it).
inline Form form_of(ErrorFunction f) {
  switch (f) {
    case ErrorFunction::L1:
      return Form::L1;
    case ErrorFunction::L2:
      return Form::L2;
    case ErrorFunction::L2Hinge:
      return Form::L2Hinge;
    case ErrorFunction::Hinge:
      return Form::Hinge;
    case ErrorFunction::CrossEntropy:
      return Form::CrossEntropy;
    case ErrorFunction::ScaledMarginalCrossEntropy:
      return Form::Smce;
    case ErrorFunction::DataScaledMarginalCrossEntropy:
      return Form::Dsmce;
  }
  throw InternalError("loss: unknown ErrorFunction code " + std::to_string(uint32_t(f)));
}

struct LossConsts {
  DerivConsts k;
  float one_target = 0.9f, zero_target = 0.1f;
  float one_scale = 1.0f, zero_scale = 1.0f;
};

NN_FORCE_INLINE float floor_log(float x) {
  return fastmath::log(fastmath::max_of(x, kLogFloor));
}
NN_FORCE_INLINE float floor_inv(float x) {
  return 1.0f / fastmath::max_of(x, kLogFloor);
}

// e and g = dE/da for one unit.
template <Form F>
NN_FORCE_INLINE void unit_loss(const LossConsts& c, float a, float t, float w, float& e, float& g) {
  if constexpr (F == Form::L1) {
    const float d = a - t;
    e = w * fabsf(d);
    g = d > 0.0f ? w : (d < 0.0f ? -w : 0.0f);
  } else if constexpr (F == Form::L2) {
    const float d = a - t;
    e = 0.5f * w * d * d;
    g = w * d;
  } else if constexpr (F == Form::L2Hinge) {
    // d = a - |t|, one-sided: only a below a positive target or above a non-positive one.
    float d = a - fabsf(t);
    d = t > 0.0f ? fastmath::min_of(d, 0.0f) : fastmath::max_of(d, 0.0f);
    e = 0.5f * w * d * d;
    g = w * d;
  } else if constexpr (F == Form::Hinge) {
    const float m = 1.0f - t * a;
    e = w * fastmath::max_of(m, 0.0f);
    g = m > 0.0f ? -w * t : 0.0f;
  } else if constexpr (F == Form::CrossEntropy) {
    const float pos = t != 0.0f ? t * floor_log(a) : 0.0f;
    const float neg = t != 1.0f ? (1.0f - t) * floor_log(1.0f - a) : 0.0f;
    e = -w * (pos + neg);
    const float gp = t != 0.0f ? t * floor_inv(a) : 0.0f;
    const float gn = t != 1.0f ? (1.0f - t) * floor_inv(1.0f - a) : 0.0f;
    g = w * (gn - gp);
  } else if constexpr (F == Form::Smce) {
    // Positive units (t > 0) count only while a < oneTarget, zero units while a > zeroTarget.
    const bool pos_unit = t > 0.0f;
    const bool active = pos_unit ? a < c.one_target : a > c.zero_target;
    const float tp = pos_unit ? t : 0.0f;
    const float lp = tp != 0.0f ? tp * c.one_scale * floor_log(a) : 0.0f;
    const float ln = tp != 1.0f ? (1.0f - tp) * c.zero_scale * floor_log(1.0f - a) : 0.0f;
    const float gp = tp != 0.0f ? tp * c.one_scale * floor_inv(a) : 0.0f;
    const float gn = tp != 1.0f ? (1.0f - tp) * c.zero_scale * floor_inv(1.0f - a) : 0.0f;
    e = active ? -w * (lp + ln) : 0.0f;
    g = active ? w * (gn - gp) : 0.0f;
  } else if constexpr (F == Form::Dsmce) {
    // Data-scaled: the positive term is weighted by the target value and has no (1 - t) part.
    const bool pos_unit = t > 0.0f;
    const bool active = pos_unit ? a < c.one_target : a > c.zero_target;
    const float ep = pos_unit ? t * c.one_scale * floor_log(a) : 0.0f;
    const float en = pos_unit ? 0.0f : c.zero_scale * floor_log(1.0f - a);
    const float gp = pos_unit ? t * c.one_scale * floor_inv(a) : 0.0f;
    const float gn = pos_unit ? 0.0f : c.zero_scale * floor_inv(1.0f - a);
    e = active ? -w * (ep + en) : 0.0f;
    g = active ? w * (gn - gp) : 0.0f;
  } else {
    static_assert(F != Form::SmceSoftMax, "SmceSoftMax has no dE/da; use unit_delta");
  }
}

// e and delta = dE/dz for one unit of an elementwise activation family D.
template <Form F, DerivKind D>
NN_FORCE_INLINE void unit_delta(const LossConsts& c, float a, float t, float w, float& e,
                                float& dz) {
  constexpr bool kSigmoid = D == DerivKind::Sigmoid;
  if constexpr (F == Form::SmceSoftMax) {
    // Reference rule on softmax outputs: error -w*oneScale*t*ln a on positive units below
    // oneTarget; delta oneScale*(a - t) there and zeroScale*a on zero units above zeroTarget.
    const bool pos_unit = t > 0.0f;
    const bool active = pos_unit ? a < c.one_target : a > c.zero_target;
    const float ep = pos_unit ? -w * c.one_scale * t * floor_log(a) : 0.0f;
    const float dp = w * c.one_scale * (a - t);
    const float dn = w * c.zero_scale * a;
    e = active ? ep : 0.0f;
    dz = active ? (pos_unit ? dp : dn) : 0.0f;
  } else if constexpr (kSigmoid && F == Form::CrossEntropy) {
    float g;
    unit_loss<F>(c, a, t, w, e, g);
    dz = w * (a - t);
  } else if constexpr (kSigmoid && F == Form::Smce) {
    // d/dz of -t*s1*ln a - (1-t)*s0*ln(1-a) with a' = a(1-a).
    float g;
    unit_loss<F>(c, a, t, w, e, g);
    const bool pos_unit = t > 0.0f;
    const bool active = pos_unit ? a < c.one_target : a > c.zero_target;
    const float tp = pos_unit ? t : 0.0f;
    const float d = (1.0f - tp) * c.zero_scale * a - tp * c.one_scale * (1.0f - a);
    dz = active ? w * d : 0.0f;
  } else if constexpr (kSigmoid && F == Form::Dsmce) {
    float g;
    unit_loss<F>(c, a, t, w, e, g);
    const bool pos_unit = t > 0.0f;
    const bool active = pos_unit ? a < c.one_target : a > c.zero_target;
    const float d = pos_unit ? c.one_scale * t * (a - 1.0f) : c.zero_scale * a;
    dz = active ? w * d : 0.0f;
  } else {
    float g;
    unit_loss<F>(c, a, t, w, e, g);
    dz = g * fprime<D>(a, c.k);
  }
}

}  // namespace nn::math
