// One optimizer update of one parameter, for every rule (cpu/optimizer.cpp documents them), and
// the constants it uses. The one source of this arithmetic: __host__ __device__ under nvcc, so
// the CUDA optimizer kernel applies optimizer_unit per element and the CPU backend's vectorised
// loop calls it per element too. tests/unit/backend/optimizer_test.cpp checks both backends
// against a double-precision reference written in the test.
#pragma once

#include <cmath>
#include <type_traits>

#include "backend/kernel_params.h"
#include "backend/math/fast_math.h"

namespace nn::math {

constexpr float kAdaFloor = 1e-9f;
constexpr float kAdamEps = 1e-8f;

// optimizer_state_count(K) as a compile-time constant of the rule (that function is host code).
template <OptimizerKind K>
constexpr int kOptimizerStates = K == OptimizerKind::SGD
                                     ? 0
                                     : (K == OptimizerKind::AdaDelta || K == OptimizerKind::Adam
                                            ? 2
                                            : 1);

// Calls f(std::integral_constant<OptimizerKind, K>{}) for the rule K == kind: the one switch
// over the rules that every backend's dispatch shares. Returns false (f not called) for an
// unknown kind.
template <typename F>
inline bool with_optimizer_kind(OptimizerKind kind, F&& f) {
  using K = OptimizerKind;
  switch (kind) {
    case K::SGD:
      f(std::integral_constant<K, K::SGD>{});
      return true;
    case K::Momentum:
      f(std::integral_constant<K, K::Momentum>{});
      return true;
    case K::Nesterov:
      f(std::integral_constant<K, K::Nesterov>{});
      return true;
    case K::AdaGrad:
      f(std::integral_constant<K, K::AdaGrad>{});
      return true;
    case K::RMSProp:
      f(std::integral_constant<K, K::RMSProp>{});
      return true;
    case K::AdaDelta:
      f(std::integral_constant<K, K::AdaDelta>{});
      return true;
    case K::Adam:
      f(std::integral_constant<K, K::Adam>{});
      return true;
  }
  return false;
}

struct OptConsts {
  float alpha = 0.0f, lambda = 0.0f, lambda1 = 0.0f, mu = 0.0f, mu1 = 0.0f;
  float c1 = 1.0f, c2 = 1.0f;  // Adam's bias corrections 1 / (1 - mu^t), 1 / (1 - mu1^t)
};

inline OptConsts optimizer_consts(const OptimizerParams& p) {
  OptConsts c;
  c.alpha = p.alpha;
  c.lambda = p.lambda;
  c.lambda1 = p.lambda1;
  c.mu = p.mu;
  c.mu1 = p.mu1;
  if (p.kind == OptimizerKind::Adam) {
    const double step = double(p.step > 0 ? p.step : 1);
    c.c1 = static_cast<float>(1.0 / (1.0 - std::pow(double(p.mu), step)));
    c.c2 = static_cast<float>(1.0 / (1.0 - std::pow(double(p.mu1), step)));
  }
  return c;
}

// g' = g + lambda*w + lambda1*sign(w)
NN_FORCE_INLINE float regularised(const OptConsts& c, float w, float g) {
  const float sign = w > 0.0f ? 1.0f : (w < 0.0f ? -1.0f : 0.0f);
  return g + c.lambda * w + c.lambda1 * sign;
}

template <OptimizerKind K>
NN_FORCE_INLINE void optimizer_unit(const OptConsts& c, float& w, float g, float& s0, float& s1) {
  const float gr = regularised(c, w, g);
  if constexpr (K == OptimizerKind::SGD) {
    w -= c.alpha * gr;
  } else if constexpr (K == OptimizerKind::Momentum) {
    s0 = c.mu * s0 - c.alpha * gr;
    w += s0;
  } else if constexpr (K == OptimizerKind::Nesterov) {
    const float v_old = s0;
    s0 = c.mu * v_old - c.alpha * gr;
    w += s0 + c.mu * (s0 - v_old);
  } else if constexpr (K == OptimizerKind::AdaGrad) {
    s0 += gr * gr;
    w -= c.alpha * gr / sqrtf(fastmath::max_of(kAdaFloor, s0));
  } else if constexpr (K == OptimizerKind::RMSProp) {
    s0 = c.mu * s0 + (1.0f - c.mu) * gr * gr;
    w -= c.alpha * gr / sqrtf(fastmath::max_of(kAdaFloor, s0));
  } else if constexpr (K == OptimizerKind::AdaDelta) {
    s0 = c.mu * s0 + (1.0f - c.mu) * gr * gr;
    const float d = sqrtf(fastmath::max_of(kAdaFloor, s1) / fastmath::max_of(kAdaFloor, s0)) * gr;
    s1 = c.mu * s1 + (1.0f - c.mu) * d * d;
    w -= d;
  } else {  // Adam
    s0 = c.mu * s0 + (1.0f - c.mu) * gr;
    s1 = c.mu1 * s1 + (1.0f - c.mu1) * gr * gr;
    w -= c.alpha * (s0 * c.c1) / (sqrtf(s1 * c.c2) + kAdamEps);
  }
}

// Steps skipped by a row-sparse update (train/row_sparse.h): `k` updates with a zero gradient and
// no regularisation, which the dense update would have applied to a row no example touched, in
// closed form. With g' = 0 the rules reduce to
//   Momentum  v <- mu*v, w += v                (k steps: w += v*(mu + ... + mu^k), v <- mu^k*v)
//   Nesterov  v <- mu*v, w += mu^2*v_before    (k steps: w += v*mu*(mu + ... + mu^k))
//   RMSProp   v <- mu*v                        (w unchanged: its step is 0)
//   AdaDelta  s <- mu*s, u <- mu*u             (w unchanged)
//   SGD, AdaGrad: nothing changes.
// Adam's weights keep moving by decaying moments over bias corrections that change each step: no
// closed form, so Adam is only updated lazily (or densely). The powers are computed once, where
// the dense update rounds each step: results agree to float rounding, not to the bit.
struct SkipFactors {
  float decay = 1.0f;    // mu^k
  float w_per_v = 0.0f;  // what w gains per unit of v
};

// Host code (the caller computes each row's factors once and hands them to the backend).
template <OptimizerKind K>
inline SkipFactors skip_factors(float mu, uint32_t k) {
  SkipFactors f;
  if (k == 0) return f;
  if constexpr (K == OptimizerKind::Momentum || K == OptimizerKind::Nesterov ||
                K == OptimizerKind::RMSProp || K == OptimizerKind::AdaDelta) {
    const double m = mu, mk = std::pow(m, double(k));
    f.decay = static_cast<float>(mk);
    // mu + mu^2 + ... + mu^k
    const double series = m == 1.0 ? double(k) : m * (1.0 - mk) / (1.0 - m);
    if constexpr (K == OptimizerKind::Momentum) f.w_per_v = static_cast<float>(series);
    if constexpr (K == OptimizerKind::Nesterov) f.w_per_v = static_cast<float>(m * series);
  }
  return f;
}

template <OptimizerKind K>
NN_FORCE_INLINE void skip_unit(const SkipFactors& f, float& w, float& s0, float& s1) {
  if constexpr (K == OptimizerKind::Momentum || K == OptimizerKind::Nesterov) {
    w += s0 * f.w_per_v;
    s0 *= f.decay;
  } else if constexpr (K == OptimizerKind::RMSProp) {
    s0 *= f.decay;
  } else if constexpr (K == OptimizerKind::AdaDelta) {
    s0 *= f.decay;
    s1 *= f.decay;
  }
}

// Whether skipped steps change anything (so a row-sparse update must catch them up), and whether
// skip_factors describes them exactly (false for Adam).
constexpr bool skips_change_state(OptimizerKind k) {
  return k == OptimizerKind::Momentum || k == OptimizerKind::Nesterov ||
         k == OptimizerKind::RMSProp || k == OptimizerKind::AdaDelta || k == OptimizerKind::Adam;
}
constexpr bool skips_have_closed_form(OptimizerKind k) {
  return k != OptimizerKind::Adam;
}
inline SkipFactors skip_factors(OptimizerKind kind, float mu, uint32_t k) {
  SkipFactors f;
  with_optimizer_kind(kind, [&](auto rule) { f = skip_factors<decltype(rule)::value>(mu, k); });
  return f;
}

}  // namespace nn::math
