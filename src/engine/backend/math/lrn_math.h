// Per-element arithmetic of cross-channel LRN, the one source for both backends: the CPU
// backend's block loops (cpu/lrn.cpp) call lrn_window_scale / lrn_value / lrn_terms /
// lrn_dx_update, and the CUDA fallback kernels (cuda/lrn.cu, for parameters outside cuDNN's
// limits: n > 16, k < 1e-5, beta < 0.01) call them through lrn_scale / lrn_dx, which gather one
// element's window: squares and window sums in float, channels in ascending order, as the CPU
// adds them. Layout [rows][channels][plane]; element i is (row, channel c, position).
//
// With s_c = k + alpha/n * sum_{j in W(c)} x_j^2, W(c) = [c - (n-1)/2, c + n/2] and
// y_c = x_c * s_c^-beta, the gradient is
//   dx_m = dy_m * s_m^-beta - 2 alpha beta / n * x_m * sum_{c : m in W(c)} dy_c x_c s_c^(-beta-1)
// where m is in W(c) exactly when c is in [m - n/2, m + (n-1)/2].
#pragma once

#include <cmath>
#include <cstdint>

#include "backend/conv_params.h"
#include "backend/math/fast_math.h"

namespace nn::math {

struct LrnShape {
  uint32_t channels, n;
  uint64_t plane;
  float k, alpha, beta;
};

inline LrnShape lrn_shape_of(const LrnParams& p) {
  return {p.channels, p.n, p.plane, p.k, p.alpha, p.beta};
}

// s = k + alpha / n * (the window's sum of squares).
NN_FORCE_INLINE float lrn_window_scale(const LrnShape& s, float sum) {
  return s.k + s.alpha / float(s.n) * sum;
}

// dx of an element added to `current`, from its x, dy and f = s^-beta and the sum of the terms
// t over the channels whose windows hold it.
NN_FORCE_INLINE float lrn_dx_update(const LrnShape& s, float current, float x, float dy, float f,
                                    float t_sum) {
  const float factor = 2.0f * s.alpha * s.beta / float(s.n);
  return current + (dy * f - factor * x * t_sum);
}

// s of element i (x: the whole batch).
NN_FORCE_INLINE float lrn_scale(const LrnShape& s, const float* x, uint64_t i) {
  const uint64_t pos = i % s.plane, t = i / s.plane;
  const uint32_t c = uint32_t(t % s.channels);
  const uint64_t base = (t - c) * s.plane + pos;  // channel 0 of this row, same position
  const uint32_t lo = (s.n - 1) / 2, hi = s.n / 2;
  const uint32_t j0 = c >= lo ? c - lo : 0, j1 = c + hi < s.channels - 1 ? c + hi : s.channels - 1;
  float sum = 0.0f;
  for (uint32_t j = j0; j <= j1; ++j) {
    const float v = x[base + uint64_t(j) * s.plane];
    const float sq = v * v;
    sum += sq;
  }
  return lrn_window_scale(s, sum);
}

NN_FORCE_INLINE float lrn_value(const LrnShape& s, float x, float scale) {
  return x * powf(scale, -s.beta);
}

// The backward's per-element terms: f = s^-beta and t = dy * x * f / s.
NN_FORCE_INLINE void lrn_terms(const LrnShape& s, float x, float dy, float scale, float& f,
                               float& t) {
  f = powf(scale, -s.beta);
  t = dy * x * f / scale;
}

// dx of element i added to `current`, from the batch's f and t (see lrn_terms).
NN_FORCE_INLINE float lrn_dx(const LrnShape& s, const float* x, const float* dy, const float* f,
                             const float* t, uint64_t i, float current) {
  const uint64_t pos = i % s.plane, r = i / s.plane;
  const uint32_t m = uint32_t(r % s.channels);
  const uint64_t base = (r - m) * s.plane + pos;
  const uint32_t lo = (s.n - 1) / 2, hi = s.n / 2;
  const uint32_t c0 = m >= hi ? m - hi : 0, c1 = m + lo < s.channels - 1 ? m + lo : s.channels - 1;
  float sum = 0.0f;
  for (uint32_t c = c0; c <= c1; ++c) sum += t[base + uint64_t(c) * s.plane];
  return lrn_dx_update(s, current, x[i], dy[i], f[i], sum);
}

}  // namespace nn::math
