// Vectorisable single-precision exp, expm1, log and log1p, shared by the CPU kernels and the CUDA
// kernels (every function is __host__ __device__ under nvcc, so both backends compute the same
// bits from the same formulas). glibc's scalar
// expf/logf block auto-vectorisation, and ~7 million elements per training batch go through a
// sigmoid and a log-loss, so these are written as branch-free arithmetic that GCC turns into SIMD
// code inside `#pragma omp simd` loops. Accuracy: a few ulp (~3e-7 relative) over the normal
// float range; see the comments on each function for the domain and the saturation behaviour.
// Build notes: GCC vectorises the selects and divisions here only with -fno-math-errno and
// -fno-trapping-math (set for nn_backend); -ffast-math must not be used, since reassociation
// would fold the rounding trick in reduce().
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

// Forced inlining: these sit inside vectorised loops, and GCC's inliner gives up on them in
// large translation units (the loss kernels), leaving a scalar call per element. Under nvcc the
// same functions are also device functions (the NN_HD pattern of core/random.h).
#if defined(__CUDACC__)
#define NN_FORCE_INLINE __host__ __device__ __forceinline__
#elif defined(__GNUC__)
#define NN_FORCE_INLINE inline __attribute__((always_inline))
#else
#define NN_FORCE_INLINE inline
#endif

namespace nn::fastmath {

NN_FORCE_INLINE float bits_to_float(int32_t i) {
#ifdef __CUDA_ARCH__
  return __int_as_float(i);
#else
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
#endif
}

NN_FORCE_INLINE int32_t float_to_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_int(f);
#else
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i;
#endif
}

// std::max / std::min semantics (a NaN first argument is returned, so NaN propagates where the
// CPU code relied on it), usable in device code where std::max on a constant's reference fails.
// Not fmaxf/fminf: those drop a NaN operand.
NN_FORCE_INLINE float max_of(float a, float b) {
  return a < b ? b : a;
}
NN_FORCE_INLINE float min_of(float a, float b) {
  return b < a ? b : a;
}

// ln 2 split so that n * kLn2Hi is exact for |n| < 2^9 (Cody-Waite range reduction).
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kLn2 = 0.693147180559945f;
constexpr float kLog2e = 1.44269504088896f;
// Inputs are clamped to this range so that 2^n stays a normal float: exp(88) ~ 1.65e38.
constexpr float kExpMin = -87.0f;
constexpr float kExpMax = 88.0f;

// expm1(r) for |r| <= ln2/2 by its Taylor series to degree 7 (truncation error
// |r|^8/8! < 6e-9, relative to |r| below 2e-8), evaluated with Horner's rule.
NN_FORCE_INLINE float expm1_reduced(float r) {
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  return p * r;
}

// Splits x (already clamped) into n*ln2 + r with integer n and |r| <= ln2/2; returns 2^n.
NN_FORCE_INLINE float reduce(float x, float& r) {
  // Round to nearest by adding and subtracting 1.5 * 2^23 (valid for |v| < 2^22): unlike
  // std::floor, GCC vectorises this without -fno-trapping-math.
  constexpr float kRound = 12582912.0f;
  float fn = (x * kLog2e + kRound) - kRound;
  r = (x - fn * kLn2Hi) - fn * kLn2Lo;
  // Unsigned shift: n + 127 is in [1, 254] for clamped input (negative only for NaN input).
  const uint32_t biased = static_cast<uint32_t>(static_cast<int32_t>(fn) + 127);
  return bits_to_float(static_cast<int32_t>(biased << 23));
}

// e^x. Returns 0 for x < -87 (true values there are below FLT_MIN ~ 1.2e-38) and saturates at
// e^88 ~ 1.65e38 for larger x, so callers never see inf. NaN propagates.
NN_FORCE_INLINE float exp(float x) {
  float xc = min_of(max_of(x, kExpMin), kExpMax);
  float r;
  float s = reduce(xc, r);
  float y = s * expm1_reduced(r) + s;
  return x < kExpMin ? 0.0f : y;
}

// e^x - 1, accurate in relative terms also for tiny |x| (where exp(x) - 1 would cancel).
// Saturates like exp(): -1 below -87, e^88 - 1 above 88.
NN_FORCE_INLINE float expm1(float x) {
  float xc = min_of(max_of(x, kExpMin), kExpMax);
  float r;
  float s = reduce(xc, r);
  float y = s * expm1_reduced(r) + (s - 1.0f);
  return x < kExpMin ? -1.0f : y;
}

// Natural log for positive normal x (callers clamp with max(x, 1e-12) as DSSTNE does); +inf and
// NaN are returned unchanged so that a diverging run still shows NaN/inf in its loss.
// x = m * 2^e with m in [sqrt(1/2), sqrt(2)); with f = m - 1, ln m = f - f^2/2 + f^3 * P(f), P a
// degree-7 least-squares fit of (ln(1+f) - f + f^2/2) / f^3 on that interval (fit error below
// 1e-8 relative). No division: the log-losses run one per output unit.
NN_FORCE_INLINE float log(float x) {
  int32_t bits = float_to_bits(x);
  int32_t e = ((bits >> 23) & 0xff) - 127;
  float m = bits_to_float((bits & 0x007fffff) | 0x3f800000);  // [1, 2)
  const bool big = m > 1.41421356f;
  m = big ? m * 0.5f : m;
  e = big ? e + 1 : e;
  const float f = m - 1.0f;  // exact
  float p = -7.660818950e-02f;
  p = p * f + 1.278633053e-01f;
  p = p * f - 1.316160575e-01f;
  p = p * f + 1.419787663e-01f;
  p = p * f - 1.662275246e-01f;
  p = p * f + 2.000141236e-01f;
  p = p * f - 2.500084621e-01f;
  p = p * f + 3.333332903e-01f;
  const float f2 = f * f;
  const float ln_m = f - 0.5f * f2 + f2 * f * p;
  const float fe = static_cast<float>(e);
  const float y = fe * kLn2Hi + (fe * kLn2Lo + ln_m);
  return x < INFINITY ? y : x;
}

// ln(1 + u) for u > -1, accurate for tiny |u|: w = 1 + u is rounded, and ln(w) * u / (w - 1)
// corrects the rounding to first order (Goldberg's trick); w == 1 means ln(1 + u) ~ u.
NN_FORCE_INLINE float log1p(float u) {
  float w = 1.0f + u;
  float d = w - 1.0f;
  float safe_d = d == 0.0f ? 1.0f : d;
  float y = nn::fastmath::log(w) * (u / safe_d);
  return d == 0.0f ? u : y;
}

// 1 / (1 + e^-z) without inf/NaN for any finite z.
NN_FORCE_INLINE float sigmoid(float z) {
  return 1.0f / (1.0f + nn::fastmath::exp(-z));
}

// tanh z = -expm1(-2|z|) / (2 + expm1(-2|z|)) with the sign of z: no cancellation near 0 and
// exactly +-1 for large |z|.
NN_FORCE_INLINE float tanh(float z) {
  float u = nn::fastmath::expm1(-2.0f * fabsf(z));
  float t = -u / (2.0f + u);
  return copysignf(t, z);
}

}  // namespace nn::fastmath
