// The training-loss accumulator kept in backend memory: its layout and the per-batch fold, one
// __host__ __device__ function so the CPU backend and the CUDA kernel (cuda/elementwise.cu) do
// the same arithmetic. The trainer adds each batch's losses and penalties into it on the device
// and reads it back once per reporting interval (Backend::fold_loss_sums, model/loss_sums.h).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backend/math/fast_math.h"

namespace nn::math {

// Slots of the accumulator (doubles):
enum LossSumSlot : size_t {
  kLossBatch = 0,     // this batch's data error (output layers), added by loss_accumulate
  kLossPenalty = 1,   // this batch's sparseness penalties, added by sparseness_penalty_accumulate
  kLossTotal = 2,     // the sum of the folded batches' errors
  kLossFirstBad = 3,  // the 1-based number of the first batch whose error was not finite, or 0
  kLossBadValue = 4,  // that batch's error (NaN or +-inf), for the message
  kLossSumCount = 5
};

// What every *_accumulate operation does with its value: *sum += scale * value (scale is 1 for
// losses, rows * beta for the sparseness penalty, the weight-decay factor for sum_squares).
NN_FORCE_INLINE void add_scaled(double* sum, double scale, double value) {
  *sum += scale * value;
}

// End of a batch: its error (data + penalty, added in that order, as the trainer always has) joins
// the total; a non-finite error is remembered if it is the first; the batch slots are cleared.
NN_FORCE_INLINE void fold_loss_sums(double* s, uint64_t batch) {
  const double err = s[kLossBatch] + s[kLossPenalty];
#if defined(__CUDA_ARCH__)
  const bool finite = isfinite(err);
#else
  const bool finite = std::isfinite(err);
#endif
  if (!finite && s[kLossFirstBad] == 0.0) {
    s[kLossFirstBad] = double(batch);
    s[kLossBadValue] = err;
  }
  s[kLossTotal] += err;
  s[kLossBatch] = 0.0;
  s[kLossPenalty] = 0.0;
}

}  // namespace nn::math
