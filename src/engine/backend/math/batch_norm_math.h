// Per-channel and per-element arithmetic of the CUDA batch normalisation backward pass for the
// inference forward (cuda_batch_norm.cu; cuDNN has no such call), as CpuBackend computes it
// (cpu_batch_norm.cpp): statistics in double, x_hat and dx in float. Shared with host tests.
#pragma once

#include <cmath>

#include "backend/math/fast_math.h"

namespace nn::math {

struct BnChannel {
  float mean, inv_std, gain;  // running mean, 1 / sqrt(running var + eps), scale * inv_std
};

NN_FORCE_INLINE BnChannel bn_inference_channel(float scale, float running_mean, float running_var,
                                               float epsilon) {
  const double inv_std = 1.0 / sqrt(double(running_var) + double(epsilon));
  return {running_mean, static_cast<float>(inv_std), static_cast<float>(double(scale) * inv_std)};
}

// The two sums' terms of one element: dy and dy * x_hat (in double, as the CPU sums them).
NN_FORCE_INLINE double bn_dy_xhat(const BnChannel& c, float x, float dy) {
  return double(dy) * double((x - c.mean) * c.inv_std);
}

// dx of one element: the statistics are constants, so dx is dy scaled per channel.
NN_FORCE_INLINE float bn_inference_dx(const BnChannel& c, float dy) {
  return c.gain * dy;
}

}  // namespace nn::math
