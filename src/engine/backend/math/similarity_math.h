// Per-row arithmetic of DotProduct and Cosine pooling (Backend::similarity_forward/backward):
// the score of a row from its sums (a.b, |a|^2, |b|^2, reduced in double), the coefficients of
// its gradient, and the per-element update. __host__ __device__ under nvcc: the CPU backend
// (cpu/similarity.cpp) and the CUDA kernels (cuda/similarity.cu) both call them, so the two
// differ only in the order in which the row sums are added.
#pragma once

#include <cmath>

#include "backend/math/fast_math.h"

namespace nn::math {

// A norm clamped to at least eps (Backend::kCosineEpsilon). Written as a comparison rather than
// fmax so that a NaN norm stays NaN, as it does with std::max(norm, eps).
NN_FORCE_INLINE double clamped_norm(double norm, double eps) {
  return norm < eps ? eps : norm;
}

// The score of one row: dot for DotProduct; dot / (max(|a|, eps) * max(|b|, eps)) for Cosine.
NN_FORCE_INLINE double similarity_score(bool cosine, double dot, double aa, double bb, double eps) {
  if (!cosine) return dot;
  return dot / (clamped_norm(sqrt(aa), eps) * clamped_norm(sqrt(bb), eps));
}

// The gradient of g * score with respect to one row: d/da = pa * b - qa * a and
// d/db = pb * a - qb * b. A clamped norm is a constant, so no term goes through it.
struct SimilarityGrad {
  float pa, qa, pb, qb;
};

NN_FORCE_INLINE SimilarityGrad similarity_grad(bool cosine, double g, double dot, double aa,
                                               double bb, double eps) {
  SimilarityGrad s{float(g), 0.0f, float(g), 0.0f};
  if (!cosine) return s;
  const double na = sqrt(aa), nb = sqrt(bb);
  const double scale = clamped_norm(na, eps) * clamped_norm(nb, eps);
  const double value = dot / scale;
  s.pa = s.pb = float(g / scale);
  if (na > eps) s.qa = float(g * value / (na * na));
  if (nb > eps) s.qb = float(g * value / (nb * nb));
  return s;
}

// One element of the gradient update: d + p * u - q * v (u is the other source's element, v the
// own one). Reads only the sources, so da and db may be the same array.
NN_FORCE_INLINE float similarity_grad_unit(float d, float p, float u, float q, float v) {
  return d + (p * u - q * v);
}

}  // namespace nn::math
