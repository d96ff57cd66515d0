// Per-element arithmetic of the Variational layer (Backend::variational_forward/backward/
// kl_accumulate; layers/variational_layer.h): the counter-based standard normal noise of the
// reparameterisation trick, the sample, the KL divergence from N(0, 1) and the gradients. The
// one source of these formulas: __host__ __device__ under nvcc, called by the CPU backend's loops
// (cpu/variational.cpp) and the CUDA kernels (cuda/variational.cu) alike, so both draw the same
// noise from (seed, stream, element); tests/unit/backend/variational_kernels_test.cpp checks both
// against a reference of its own.
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/math/fast_math.h"
#include "core/random.h"

namespace nn::math {

// cos(2 pi u) for u in [0, 1): reduced to t = 2 pi v with v in [0, 1/4] by the symmetries of the
// cosine, then its Taylor series to degree 12 in t (truncation error (pi/2)^14 / 14! < 7e-9).
// Written out rather than cosf() so that both backends compute the same bits.
NN_FORCE_INLINE float cos_2pi(float u) {
  float v = u > 0.5f ? 1.0f - u : u;  // cos(2 pi u) = cos(2 pi (1 - u)); v in [0, 1/2]
  const bool flip = v > 0.25f;        // cos(2 pi v) = -cos(2 pi (1/2 - v))
  v = flip ? 0.5f - v : v;
  const float t = 6.28318530717958648f * v;
  const float t2 = t * t;
  float p = 1.0f / 479001600.0f;
  p = p * t2 - 1.0f / 3628800.0f;
  p = p * t2 + 1.0f / 40320.0f;
  p = p * t2 - 1.0f / 720.0f;
  p = p * t2 + 1.0f / 24.0f;
  p = p * t2 - 0.5f;
  p = p * t2 + 1.0f;
  return flip ? -p : p;
}

// The standard normal draw number i of (seed, stream): Box-Muller over the uniforms of counters
// 2i and 2i + 1 (core/random.h). 1 - u keeps the logarithm's argument in (0, 1], so draws are
// finite (|noise| <= sqrt(2 ln 2^24) ~ 5.77).
NN_FORCE_INLINE float gaussian_at(uint64_t seed, uint64_t stream, uint64_t i) {
  const float u1 = 1.0f - uniform_at(seed, stream, 2 * i);
  const float u2 = uniform_at(seed, stream, 2 * i + 1);
  return sqrtf(-2.0f * fastmath::log(u1)) * cos_2pi(u2);
}

// The reparameterised sample of one unit: mean + noise * standard deviation.
NN_FORCE_INLINE float variational_sample(float mean, float logvar, float noise) {
  return mean + noise * fastmath::exp(0.5f * logvar);
}

// KL(N(mean, exp(logvar)) || N(0, 1)) of one unit.
NN_FORCE_INLINE float variational_kl(float mean, float logvar) {
  return 0.5f * (mean * mean + fastmath::exp(logvar) - logvar - 1.0f);
}

// The gradients of one unit with respect to its mean and log-variance, from da = dE/da and the
// KL term's weight beta; `sample` says whether the forward pass drew the noise.
NN_FORCE_INLINE void variational_gradient(float mean, float logvar, float da, float noise,
                                          bool sample, float beta, float& d_mean, float& d_logvar) {
  d_mean = da + beta * mean;
  const float data = sample ? 0.5f * da * noise * fastmath::exp(0.5f * logvar) : 0.0f;
  d_logvar = data + 0.5f * beta * (fastmath::exp(logvar) - 1.0f);
}

}  // namespace nn::math
