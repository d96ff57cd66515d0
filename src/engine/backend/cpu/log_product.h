// Sums of logarithms over a wide row, taken as the log of a product: the CPU loss kernels' sparse
// sweep of CrossEntropy-type errors, whose error at a unit with target 0 is -w * ln(1 - a).
//
// Why: a log per output unit (fastmath::log, ~25 vector operations) made the sweep over a
// 256 x 27,278 batch cost ~1.3 ns per unit on one core, the largest part of the output layer's
// loss; multiplying the factors in double and taking one log per lane at the end of the row
// costs ~0.3 ns per unit, the memory traffic of the sweep (docs/performance.md). It is also
// closer to the exact sum: the product of float factors in double is exact to ~1e-16 relative,
// where each fast log is within ~3e-7.
//
// Range: the factors are those of loss_math.h's floor_log, in [1e-12, FLT_MAX] (or NaN, +inf).
// Each lane's product is split into mantissa and binary exponent every kRenormChunks chunks, so
// kRenormChunks factors never leave double's normal range ((1e-12)^4 ~ 1e-48, FLT_MAX^4 ~ 1e154).
// A NaN or +inf product is left as it is, so the row's error is NaN or -inf as the per-unit
// logs would have made it.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/cpu/stream.h"

namespace nn::cpu {

class LogProductLanes {
 public:
  static constexpr unsigned kRenormChunks = 4;

  LogProductLanes() {
    for (size_t k = 0; k < kChunk; ++k) {
      product_[k] = 1.0;
      exponent_[k] = 0;
    }
  }

  // The lanes' products, one per position in a chunk: lane k takes the factors of elements
  // k, k + kChunk, k + 2 kChunk, ... (the vectorised loop multiplies into it directly).
  double* lanes() { return product_; }

  // Called after every chunk's multiplications.
  void end_chunk() {
    if (++chunks_ == kRenormChunks) {
      chunks_ = 0;
      renormalise();
    }
  }

  // sum over all factors of ln(factor), in a fixed order (lane by lane).
  double sum_of_logs() const {
    constexpr double kLn2 = 0.69314718055994530942;
    double s = 0.0;
    for (size_t k = 0; k < kChunk; ++k) s += std::log(product_[k]) + double(exponent_[k]) * kLn2;
    return s;
  }

 private:
  // Moves each finite product's binary exponent into exponent_, leaving a mantissa in [1, 2).
  void renormalise() {
    for (size_t k = 0; k < kChunk; ++k) {
      uint64_t bits;
      std::memcpy(&bits, &product_[k], sizeof bits);
      const int64_t biased = int64_t((bits >> 52) & 0x7ff);
      if (biased == 0x7ff || biased == 0) continue;  // NaN or inf: kept; 0 cannot occur
      exponent_[k] += biased - 1023;
      bits = (bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;
      std::memcpy(&product_[k], &bits, sizeof bits);
    }
  }

  alignas(64) double product_[kChunk];
  int64_t exponent_[kChunk];
  unsigned chunks_ = 0;
};

}  // namespace nn::cpu
