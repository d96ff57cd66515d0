// Per-element arithmetic of the elementwise kernels that have no other shared home: activation
// forward values, activation derivatives picked at run time, the terms of the reductions, dropout
// masks and the ordering key of top-K. Each is __host__ __device__ under nvcc (NN_FORCE_INLINE,
// fast_math.h): the CUDA kernels call them per element and so do the CPU backend's loops; the
// backend tests check both backends against references written in the tests, and host tests
// (tests/unit/backend/kernel_math_test.cpp) run the CUDA kernels' index space on the CPU.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/kernel_params.h"
#include "backend/math/activation_math.h"
#include "backend/math/fast_math.h"
#include "core/random.h"

namespace nn::math {

// An activation's parameters in the form the forward formulas use.
struct ActConsts {
  float slope = 0.01f, alpha = 1.0f, lambda = 1.0f;
  float lo = 0.0f, hi = 1.0f;  // ReluMax / LinearMax bounds
};

inline ActConsts act_consts(const ActivationParams& p) {
  ActConsts c;
  c.slope = p.slope;
  c.alpha = p.alpha;
  c.lambda = p.lambda;
  c.hi = p.max_value;
  c.lo = p.kind == Activation::ReluMax ? 0.0f : -p.max_value;
  return c;
}

// a = f(z) for elementwise activation K (cpu/activation.cpp documents the definitions). The CPU
// backend's loops instantiate one per activation; SoftMax and MaxOut are not elementwise and
// their callers handle them (z is returned unchanged).
template <Activation K>
NN_FORCE_INLINE float activate_unit(float z, const ActConsts& c) {
  if constexpr (K == Activation::Sigmoid) {
    return fastmath::sigmoid(z);
  } else if constexpr (K == Activation::Tanh) {
    return fastmath::tanh(z);
  } else if constexpr (K == Activation::RectifiedLinear) {
    return z > 0.0f ? z : 0.0f;
  } else if constexpr (K == Activation::ReluMax || K == Activation::LinearMax) {
    // NaN propagates instead of being clamped.
    return z < c.lo ? c.lo : (z > c.hi ? c.hi : z);
  } else if constexpr (K == Activation::LeakyRectifiedLinear ||
                       K == Activation::ParametricRectifiedLinear) {
    return z > 0.0f ? z : c.slope * z;
  } else if constexpr (K == Activation::ExponentialLinear) {
    return z > 0.0f ? z : c.alpha * fastmath::expm1(z);
  } else if constexpr (K == Activation::ScaledExponentialLinear) {
    return c.lambda * (z > 0.0f ? z : c.alpha * fastmath::expm1(z));
  } else if constexpr (K == Activation::SoftPlus) {
    // ln(1 + e^z) = max(z, 0) + ln(1 + e^-|z|): no overflow for large z.
    return fastmath::max_of(z, 0.0f) + fastmath::log1p(fastmath::exp(-fabsf(z)));
  } else if constexpr (K == Activation::SoftSign) {
    return z / (1.0f + fabsf(z));
  } else {
    return z;  // Linear; MaxOut and SoftMax are not elementwise
  }
}

// The same for an activation chosen at run time (the CUDA kernels branch once per launch,
// uniformly, instead of instantiating one kernel per activation).
NN_FORCE_INLINE float activate_unit(Activation kind, float z, const ActConsts& c) {
  switch (kind) {
    case Activation::Sigmoid:
      return activate_unit<Activation::Sigmoid>(z, c);
    case Activation::Tanh:
      return activate_unit<Activation::Tanh>(z, c);
    case Activation::RectifiedLinear:
      return activate_unit<Activation::RectifiedLinear>(z, c);
    case Activation::ReluMax:
      return activate_unit<Activation::ReluMax>(z, c);
    case Activation::LinearMax:
      return activate_unit<Activation::LinearMax>(z, c);
    case Activation::LeakyRectifiedLinear:
      return activate_unit<Activation::LeakyRectifiedLinear>(z, c);
    case Activation::ParametricRectifiedLinear:
      return activate_unit<Activation::ParametricRectifiedLinear>(z, c);
    case Activation::ExponentialLinear:
      return activate_unit<Activation::ExponentialLinear>(z, c);
    case Activation::ScaledExponentialLinear:
      return activate_unit<Activation::ScaledExponentialLinear>(z, c);
    case Activation::SoftPlus:
      return activate_unit<Activation::SoftPlus>(z, c);
    case Activation::SoftSign:
      return activate_unit<Activation::SoftSign>(z, c);
    case Activation::Linear:
    case Activation::MaxOut:
    case Activation::SoftMax:
      break;
  }
  return z;
}

// f'(z) through a = f(z) for a derivative family chosen at run time (the kernels branch once per
// launch, uniformly, instead of instantiating one kernel per family). SoftMax is not elementwise.
NN_FORCE_INLINE float fprime_of(DerivKind d, float a, DerivConsts k) {
  switch (d) {
    case DerivKind::Sigmoid:
      return fprime<DerivKind::Sigmoid>(a, k);
    case DerivKind::Tanh:
      return fprime<DerivKind::Tanh>(a, k);
    case DerivKind::Step:
      return fprime<DerivKind::Step>(a, k);
    case DerivKind::Clip:
      return fprime<DerivKind::Clip>(a, k);
    case DerivKind::Elu:
      return fprime<DerivKind::Elu>(a, k);
    case DerivKind::SoftPlus:
      return fprime<DerivKind::SoftPlus>(a, k);
    case DerivKind::SoftSign:
      return fprime<DerivKind::SoftSign>(a, k);
    case DerivKind::One:
    case DerivKind::SoftMax:
      break;
  }
  return 1.0f;
}

// The terms of sum_squares and sum_abs: one element, widened to double before it is squared.
NN_FORCE_INLINE double square_term(double v) {
  return v * v;
}
NN_FORCE_INLINE double abs_term(double v) {
  return v < 0.0 ? -v : v;
}

// Inverted dropout of element i: dropped when the counter-based
// uniform for (seed, stream, i) is below p, else scaled by 1 / keep with keep = 1 - p.
NN_FORCE_INLINE float dropout_unit(float x, uint64_t i, float p, float keep, uint64_t seed,
                                   uint64_t stream) {
  const bool drop = uniform_at(seed, stream, i) < p;
  return drop ? 0.0f : x / keep;
}

// Unsigned key whose descending order is the top-K order of values: larger first, -0 equal to
// +0 (ties then go to the lower column), every NaN after every number (including -inf). Branch
// free: the CPU's top-K heap compares two of these per step.
NN_FORCE_INLINE uint32_t top_k_key(float v) {
  // v + 0 turns -0 into +0 and leaves every other value as it is.
  const uint32_t bits = static_cast<uint32_t>(fastmath::float_to_bits(v + 0.0f));
  // Negative values: every bit flipped (a larger magnitude ranks lower); others: the sign bit set.
  const uint32_t flip = static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31) | 0x80000000u;
  return v != v ? 0u : bits ^ flip;
}

// The 64-bit key of value v in column c: top_k_key, then the complement of the column, so the
// descending order of keys is the top-K order with ties to the lower column, every entry distinct.
NN_FORCE_INLINE unsigned long long top_k_entry_key(float v, uint32_t c) {
  return (static_cast<unsigned long long>(top_k_key(v)) << 32) | (0xffffffffu - c);
}

}  // namespace nn::math
