// Per-element steps of the fused activation + loss kernels (Backend::activate_loss_accumulate,
// cuda/loss.cu): the output layer's activation is computed from z in the loss kernel's own sweep
// over the row instead of by a separate activate() pass. SoftMax's steps are softmax_kernel's
// (cuda/activation.cu uses the same functions), so the fused kernel writes the same a; the
// elementwise activations use math::activate_unit. __host__ __device__ under nvcc; the host test
// HostKernelMath.FusedActivationLossMatchesTheCpuBackend runs them over the kernel's index space.
#pragma once

#include "backend/math/elementwise_math.h"
#include "backend/math/fast_math.h"

namespace nn::math {

// SoftMax, after the row maximum m: the unnormalised term e = exp(z - m), summed in double.
NN_FORCE_INLINE float softmax_exp(float z, float m) {
  return fastmath::exp(z - m);
}
// The factor every term is multiplied by: 1 / sum, rounded to float once per row.
NN_FORCE_INLINE float softmax_inverse(double sum) {
  return static_cast<float>(1.0 / sum);
}
// a = e * (1 / sum).
NN_FORCE_INLINE float softmax_scale(float e, float inv) {
  return e * inv;
}

// The value a as stored in memory. The unfused loss kernel reads a from memory; a fused kernel
// holds it in a register, where the compiler could contract its last multiply into the loss's
// first add (a fused multiply-add rounds once instead of twice) and change the result's bits.
// The empty asm makes a opaque to the optimiser on the device; on the host it is the identity.
NN_FORCE_INLINE float as_stored(float a) {
#if defined(__CUDA_ARCH__)
  asm volatile("" : "+f"(a));
#endif
  return a;
}

}  // namespace nn::math
