// Per-element derivative of every activation, written through the activation a = f(z) (the only
// value kept after the forward pass), and MaxOut's selection rule. Shared by both backends'
// activation_backward and loss kernels (the CPU's loops and the CUDA kernels call them alike).
// Activations with the same derivative shape share one family, so the loss kernels are
// instantiated per family rather than per activation.
#pragma once

#include "backend/kernel_params.h"
#include "backend/math/fast_math.h"

namespace nn::math {

enum class DerivKind { Sigmoid, Tanh, One, Step, Clip, Elu, SoftPlus, SoftSign, SoftMax };

// Step: f' = a > 0 ? hi : lo.   Elu: f' = a > 0 ? hi : a + lo.   Clip: f' = lo < a < hi.
struct DerivConsts {
  float hi = 1.0f;
  float lo = 0.0f;
};

inline DerivKind deriv_kind(Activation a) {
  switch (a) {
    case Activation::Sigmoid:
      return DerivKind::Sigmoid;
    case Activation::Tanh:
      return DerivKind::Tanh;
    case Activation::Linear:
    case Activation::MaxOut:  // as seen by a loss: a is one of the z, unchanged
      return DerivKind::One;
    case Activation::ReluMax:
    case Activation::LinearMax:
      return DerivKind::Clip;
    case Activation::RectifiedLinear:
    case Activation::LeakyRectifiedLinear:
    case Activation::ParametricRectifiedLinear:
      return DerivKind::Step;
    case Activation::ExponentialLinear:
    case Activation::ScaledExponentialLinear:
      return DerivKind::Elu;
    case Activation::SoftPlus:
      return DerivKind::SoftPlus;
    case Activation::SoftSign:
      return DerivKind::SoftSign;
    case Activation::SoftMax:
      return DerivKind::SoftMax;
  }
  return DerivKind::One;
}

inline DerivConsts deriv_consts(const ActivationParams& p) {
  DerivConsts k;
  switch (p.kind) {
    case Activation::LeakyRectifiedLinear:
    case Activation::ParametricRectifiedLinear:
      k.lo = p.slope;
      break;
    case Activation::ExponentialLinear:
      k.lo = p.alpha;
      break;
    case Activation::ScaledExponentialLinear:
      k.hi = p.lambda;
      k.lo = p.lambda * p.alpha;
      break;
    case Activation::ReluMax:
      k.lo = 0.0f;
      k.hi = p.max_value;
      break;
    case Activation::LinearMax:
      k.lo = -p.max_value;
      k.hi = p.max_value;
      break;
    default:
      break;
  }
  return k;
}

// f'(z) as a function of a = f(z). SoftMax is not elementwise and is handled by its callers.
template <DerivKind D>
NN_FORCE_INLINE float fprime(float a, DerivConsts k) {
  if constexpr (D == DerivKind::Sigmoid) {
    return a * (1.0f - a);
  } else if constexpr (D == DerivKind::Tanh) {
    return 1.0f - a * a;
  } else if constexpr (D == DerivKind::Step) {
    return a > 0.0f ? k.hi : k.lo;
  } else if constexpr (D == DerivKind::Clip) {
    // Saturated units (a at either bound) pass no gradient, as for ReLU at 0.
    return (a > k.lo && a < k.hi) ? 1.0f : 0.0f;
  } else if constexpr (D == DerivKind::Elu) {
    return a > 0.0f ? k.hi : a + k.lo;
  } else if constexpr (D == DerivKind::SoftPlus) {
    // f'(z) = sigmoid(z) = 1 - e^-a; expm1 keeps precision when a is tiny.
    return -fastmath::expm1(-a);
  } else if constexpr (D == DerivKind::SoftSign) {
    float m = 1.0f - fabsf(a);
    return m * m;
  } else {
    return 1.0f;
  }
}

// MaxOut: whether piece v replaces the current winner `best` (pieces in order): a larger piece
// wins (the first largest on ties), a NaN piece wins and then stays, so a diverged layer shows NaN.
NN_FORCE_INLINE bool maxout_takes(float best, float v) {
  return best == best && (v > best || v != v);
}

}  // namespace nn::math
