// Per-row / per-column arithmetic of the norm constraints (DeltaNorm, WeightNorm) and of the KL
// sparseness penalty: the clip factor, the clamp of the mean activation, the penalty's value and
// derivative. The one source of these formulas: __host__ __device__ under nvcc, called by the
// CPU backend's loops (cpu/norm.cpp) and the CUDA kernels (cuda/norm.cu) alike;
// tests/unit/backend/norm_kernels_test.cpp checks both against a reference of its own.
#pragma once

#include <cmath>

#include "backend/math/fast_math.h"

namespace nn::math {

// Clamp of the mean activation, as in DSSTNE, so that the logarithms and quotients stay finite.
constexpr double kRhoMin = 1e-6, kRhoMax = 1.0 - 1e-6;

// The factor that brings a vector whose squared length is sq to length max_norm, or 1 when it
// is not longer than that (or its length is NaN: the vector is left as it is).
NN_FORCE_INLINE float clip_scale(double sq, float max_norm) {
  const double norm = sqrt(sq);
  return norm > double(max_norm) ? static_cast<float>(double(max_norm) / norm) : 1.0f;
}

// rho = the mean activation of a unit over `rows` examples (sum = their sum), clamped.
NN_FORCE_INLINE double sparseness_rho(double sum, unsigned rows) {
  const double rho = sum / double(rows);
  return rho < kRhoMin ? kRhoMin : (rho > kRhoMax ? kRhoMax : rho);
}

// KL(p || rho) for Bernoulli distributions.
NN_FORCE_INLINE double kl_divergence(double p, double rho) {
  double kl = 0.0;
  if (p > 0.0) kl += p * log(p / rho);
  if (p < 1.0) kl += (1.0 - p) * log((1.0 - p) / (1.0 - rho));
  return kl;
}

// d(beta * KL(p || rho)) / d(rho), the term added to every row's delta of the unit.
NN_FORCE_INLINE float sparseness_gradient(double p, double beta, double rho) {
  return static_cast<float>(beta * (-p / rho + (1.0 - p) / (1.0 - rho)));
}

}  // namespace nn::math
