// BF16 conversions of the reduced-precision products (docs/wide-outputs.md, "BF16 arithmetic"):
// a BF16 number is the top 16 bits of an IEEE float (sign, 8 exponent bits, 7 mantissa bits), so
// widening is a shift and narrowing is a rounding of the low 16 bits. __host__ __device__ under
// nvcc: the CPU backend (cpu/dense_bf16.cpp) and the CUDA kernels (cuda/dense.cu) convert with
// these same functions, and tests/unit/backend/bf16_test.cpp checks them bit by bit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "backend/math/fast_math.h"

namespace nn::math {

NN_FORCE_INLINE uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// The nearest BF16 value, ties to even (what oneDNN, cuBLAS and PyTorch do). Overflow rounds to
// infinity as IEEE rounding does; NaN stays NaN (its payload's top bit is forced on, because
// rounding a NaN whose mantissa lives only in the low 16 bits would otherwise yield infinity).
NN_FORCE_INLINE uint16_t float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return uint16_t((u + rounding) >> 16);
}

NN_FORCE_INLINE float bf16_to_float(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// f rounded to BF16 and widened again: the value a BF16 product sees.
NN_FORCE_INLINE float round_to_bf16(float f) {
  return bf16_to_float(float_to_bf16(f));
}

// Elements a row-major operand spans in memory: `rows` rows of `cols` values, `ld` apart. A
// converted copy keeps this layout (and ld), padding included, so products address it as they
// would the FP32 original.
NN_FORCE_INLINE size_t operand_span(int rows, int cols, int ld) {
  return rows <= 0 || cols <= 0 ? 0 : size_t(rows - 1) * size_t(ld) + size_t(cols);
}

}  // namespace nn::math
