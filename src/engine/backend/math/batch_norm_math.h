// Per-channel and per-element arithmetic of batch normalisation, the one source for both
// backends: the CPU backend's loops (cpu/batch_norm.cpp) call these, and so do the CUDA kernels
// that do not go through cuDNN (cuda/batch_norm.cu): the backward of the inference forward (cuDNN
// has no such call) and training with a single value per channel (rows x spatial = 1, e.g. a last
// batch of one example through a fully connected layer), where the running variance is updated
// with the biased variance 0 and cuDNN would divide by n - 1 = 0. Statistics in double, x_hat
// and dx in float. __host__ __device__ under nvcc.
#pragma once

#include <cmath>

#include "backend/math/fast_math.h"

namespace nn::math {

// ---- training ------------------------------------------------------------------------------

// One channel's statistics after the training forward, from its batch mean and biased variance
// over n values: what is saved for the backward pass, the new running averages (the unbiased
// variance n / (n - 1) * var; the biased one when n is 1), and the gain scale / sqrt(var + eps).
struct BnTrainChannel {
  float save_mean, save_inv_std, running_mean, running_var, gain;
};

NN_FORCE_INLINE BnTrainChannel bn_training_channel(double mean, double var, double n, float scale,
                                                   float running_mean, float running_var,
                                                   float epsilon, float momentum) {
  const double inv_std = 1.0 / sqrt(var + double(epsilon));
  const double unbiased = n > 1.0 ? var * n / (n - 1.0) : var;
  const double mo = momentum;
  BnTrainChannel r;
  r.save_mean = static_cast<float>(mean);
  r.save_inv_std = static_cast<float>(inv_std);
  r.running_mean = static_cast<float>((1.0 - mo) * running_mean + mo * mean);
  r.running_var = static_cast<float>((1.0 - mo) * running_var + mo * unbiased);
  r.gain = static_cast<float>(double(scale) * inv_std);
  return r;
}

// y = gain * (x - shift) + bias. Subtracting the mean (shift) first keeps the precision of
// x - mean when the mean is large against the spread.
NN_FORCE_INLINE float bn_affine(float x, float gain, float shift, float bias) {
  return gain * (x - shift) + bias;
}

// The term of the x_hat sum of one element: dy * x_hat in double, x_hat = (x - mean) * inv_std
// in float (recomputed from x and the statistics rather than stored).
NN_FORCE_INLINE double bn_dy_xhat(float x, float dy, float mean, float inv_std) {
  return double(dy) * double((x - mean) * inv_std);
}

// A parameter gradient: alpha times a channel's sum (of dy * x_hat for the scale, of dy for the
// bias), rounded to float once.
NN_FORCE_INLINE float bn_param_grad(float alpha, double sum) {
  return static_cast<float>(double(alpha) * sum);
}

// One channel's factors of the training backward, from the sums of dy and dy * x_hat over its n
// values: the gain scale * inv_std, the two means, and the parameter gradients (times alpha).
struct BnGradChannel {
  float gain, mean_dy, mean_dy_xhat, dscale, dbias;
};

NN_FORCE_INLINE BnGradChannel bn_grad_channel(double sum_dy, double sum_dy_xhat, double n,
                                              float scale, float inv_std, float alpha) {
  BnGradChannel r;
  r.gain = static_cast<float>(double(scale) * double(inv_std));
  r.mean_dy = static_cast<float>(sum_dy / n);
  r.mean_dy_xhat = static_cast<float>(sum_dy_xhat / n);
  r.dscale = bn_param_grad(alpha, sum_dy_xhat);
  r.dbias = bn_param_grad(alpha, sum_dy);
  return r;
}

// dx of one element: gain * (dy - mean(dy) - x_hat * mean(dy * x_hat)).
NN_FORCE_INLINE float bn_training_dx(float x, float dy, float mean, float inv_std, float gain,
                                     float mean_dy, float mean_dy_xhat) {
  return gain * (dy - mean_dy - (x - mean) * inv_std * mean_dy_xhat);
}

// ---- inference -----------------------------------------------------------------------------

struct BnChannel {
  float mean, inv_std, gain;  // running mean, 1 / sqrt(running var + eps), scale * inv_std
};

NN_FORCE_INLINE BnChannel bn_inference_channel(float scale, float running_mean, float running_var,
                                               float epsilon) {
  const double inv_std = 1.0 / sqrt(double(running_var) + double(epsilon));
  return {running_mean, static_cast<float>(inv_std), static_cast<float>(double(scale) * inv_std)};
}

// dx of one element of the inference backward: the statistics are constants, so dx is dy scaled
// per channel.
NN_FORCE_INLINE float bn_inference_dx(float gain, float dy) {
  return gain * dy;
}

// ---- one value per channel (CUDA: rows x spatial = 1) ----------------------------------------

// Training forward of one channel holding the single value x: its outputs, the general
// formulas above with mean x and variance 0 over n = 1.
struct BnSingle {
  float y, save_mean, save_inv_std, running_mean, running_var;
};

NN_FORCE_INLINE BnSingle bn_single_forward(float x, float scale, float bias, float running_mean,
                                           float running_var, float epsilon, float momentum) {
  const BnTrainChannel c =
      bn_training_channel(double(x), 0.0, 1.0, scale, running_mean, running_var, epsilon, momentum);
  return {bn_affine(x, c.gain, c.save_mean, bias), c.save_mean, c.save_inv_std, c.running_mean,
          c.running_var};
}

// Training backward of one channel holding the single value x, from the saved statistics.
struct BnSingleGrad {
  float dx, dscale, dbias;
};

NN_FORCE_INLINE BnSingleGrad bn_single_backward(float x, float dy, float scale, float save_mean,
                                                float save_inv_std, float alpha) {
  // Sums of one term, started from 0.0 as every sum is (so a -0 term gives +0).
  const double sum_dy = 0.0 + double(dy);
  const double sum_dy_xhat = 0.0 + bn_dy_xhat(x, dy, save_mean, save_inv_std);
  const BnGradChannel c = bn_grad_channel(sum_dy, sum_dy_xhat, 1.0, scale, save_inv_std, alpha);
  return {bn_training_dx(x, dy, save_mean, save_inv_std, c.gain, c.mean_dy, c.mean_dy_xhat),
          c.dscale, c.dbias};
}

}  // namespace nn::math
