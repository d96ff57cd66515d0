// Per-channel and per-element arithmetic of the CUDA batch normalisation kernels
// (cuda/batch_norm.cu) that do not go through cuDNN, as CpuBackend computes them
// (cpu/batch_norm.cpp): statistics in double, x_hat and dx in float. Shared with host tests.
//  * the backward pass of the inference forward (cuDNN has no such call);
//  * training with a single value per channel (rows x spatial = 1, e.g. a last batch of one
//    example through a fully connected layer): the CPU then updates the running variance with
//    the biased variance 0, where cuDNN would divide by n - 1 = 0.
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

// Training forward of one channel holding the single value x: its outputs as the CPU writes them.
struct BnSingle {
  float y, save_mean, save_inv_std, running_mean, running_var;
};

NN_FORCE_INLINE BnSingle bn_single_forward(float x, float scale, float bias, float running_mean,
                                           float running_var, float epsilon, float momentum) {
  const double mean = double(x);  // the mean of one value; the variance is 0
  const double inv_std = 1.0 / sqrt(0.0 + double(epsilon));
  const double mo = momentum;
  BnSingle r;
  r.save_mean = static_cast<float>(mean);
  r.save_inv_std = static_cast<float>(inv_std);
  r.running_mean = static_cast<float>((1.0 - mo) * running_mean + mo * mean);
  r.running_var = static_cast<float>((1.0 - mo) * running_var + mo * 0.0);
  const float a = static_cast<float>(double(scale) * inv_std);
  r.y = a * (x - r.save_mean) + bias;
  return r;
}

// Training backward of one channel holding the single value x, from the saved statistics.
struct BnSingleGrad {
  float dx, dscale, dbias;
};

NN_FORCE_INLINE BnSingleGrad bn_single_backward(float x, float dy, float scale, float save_mean,
                                                float save_inv_std, float alpha) {
  // Sums of one term, started from 0.0 as the CPU's are (so a -0 term gives +0, as there).
  const double sum_dy = 0.0 + double(dy);
  const double sum_dy_xhat = 0.0 + double(dy) * double((x - save_mean) * save_inv_std);
  const float gain = static_cast<float>(double(scale) * double(save_inv_std));
  const float mdy = static_cast<float>(sum_dy), mdx = static_cast<float>(sum_dy_xhat);
  BnSingleGrad r;
  r.dx = gain * (dy - mdy - (x - save_mean) * save_inv_std * mdx);
  r.dscale = static_cast<float>(double(alpha) * sum_dy_xhat);
  r.dbias = static_cast<float>(double(alpha) * sum_dy);
  return r;
}

}  // namespace nn::math
