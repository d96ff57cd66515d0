// Per-window arithmetic of Max / Average pooling, the one source for both backends: the CPU
// backend's loops (cpu/pool.cpp) call pool_window / pool_value / pool_argmax / pool_mean for each
// output, and the CUDA kernels (cuda/pool.cu) through pool_forward_at / pool_backward_at. CUDA
// runs own kernels rather than cuDNN's because the
// Backend contract fixes what cuDNN leaves open: Max routes each window's gradient to its FIRST
// largest input in (z, y, x) order (cuDNN does not say which of tied inputs gets it), a window
// entirely in the padding yields 0, and output extents are DSSTNE's, not cuDNN's.
//
// CUDA forward: one thread per output computes its window as the CPU's general loop does.
// CUDA backward: one thread per INPUT gathers, in output order, the gradients of the windows that
// route to it, so every dx element has one writer (no atomics, deterministic) and receives the
// same terms in the same order as the CPU's scatter: the results match it bit for bit.
#pragma once

#include <cstdint>

#include "backend/conv_params.h"
#include "backend/math/fast_math.h"

namespace nn::math {

struct PoolShape {
  uint32_t in[3], out[3], kernel[3], stride[3], pad[3];  // x, y, z
  bool is_max;
};

inline PoolShape pool_shape_of(const PoolParams& p) {
  PoolShape s{};
  for (int d = 0; d < 3; ++d) {
    s.in[d] = p.geometry.in[d];
    s.out[d] = p.geometry.out[d];
    s.kernel[d] = p.geometry.kernel[d];
    s.stride[d] = p.geometry.stride[d];
    s.pad[d] = p.geometry.pad[d];
  }
  s.is_max = p.function == PoolingFunction::Max;
  return s;
}

// Input range [lo, hi) of output o along axis d, clipped to the input.
NN_FORCE_INLINE void pool_window(const PoolShape& s, int d, uint32_t o, uint32_t& lo,
                                 uint32_t& hi) {
  const int64_t first = int64_t(o) * s.stride[d] - s.pad[d], last = first + s.kernel[d];
  const int64_t in = s.in[d];
  lo = uint32_t(first < 0 ? 0 : first > in ? in : first);
  hi = uint32_t(last < 0 ? 0 : last > in ? in : last);
}

struct PoolWindow {
  uint32_t lo[3], hi[3];
  NN_FORCE_INLINE uint32_t count() const {
    return (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
  }
};

NN_FORCE_INLINE PoolWindow pool_window_of(const PoolShape& s, uint32_t ox, uint32_t oy,
                                          uint32_t oz) {
  PoolWindow w;
  pool_window(s, 0, ox, w.lo[0], w.hi[0]);
  pool_window(s, 1, oy, w.lo[1], w.hi[1]);
  pool_window(s, 2, oz, w.lo[2], w.hi[2]);
  return w;
}

// The average of a window of `count` inputs summing to `sum`, and the share of a window's
// gradient dy that each of its inputs gets.
NN_FORCE_INLINE float pool_mean(float sum, uint32_t count) {
  return sum / float(count);
}

// The pooled value of one window of plane xq (0 for an empty window).
NN_FORCE_INLINE float pool_value(const PoolShape& s, const PoolWindow& w, const float* xq) {
  float acc = 0.0f;
  uint32_t count = 0;
  for (uint32_t iz = w.lo[2]; iz < w.hi[2]; ++iz)
    for (uint32_t iy = w.lo[1]; iy < w.hi[1]; ++iy) {
      const float* row = xq + (uint64_t(iz) * s.in[1] + iy) * s.in[0];
      for (uint32_t ix = w.lo[0]; ix < w.hi[0]; ++ix, ++count) {
        const float v = row[ix];
        acc = s.is_max ? (count == 0 || v > acc ? v : acc) : acc + v;
      }
    }
  return count == 0 ? 0.0f : s.is_max ? acc : pool_mean(acc, count);
}

// Output element o (within one plane, x fastest) of the plane starting at xq.
NN_FORCE_INLINE float pool_forward_at(const PoolShape& s, const float* xq, uint64_t o) {
  const uint32_t ox = uint32_t(o % s.out[0]);
  const uint64_t t = o / s.out[0];
  const uint32_t oy = uint32_t(t % s.out[1]), oz = uint32_t(t / s.out[1]);
  return pool_value(s, pool_window_of(s, ox, oy, oz), xq);
}

// Position of the window's first largest input in the plane (only for a non-empty window).
NN_FORCE_INLINE uint64_t pool_argmax(const PoolShape& s, const PoolWindow& w, const float* xq) {
  uint64_t best = ~uint64_t(0);
  for (uint32_t iz = w.lo[2]; iz < w.hi[2]; ++iz)
    for (uint32_t iy = w.lo[1]; iy < w.hi[1]; ++iy) {
      const uint64_t row = (uint64_t(iz) * s.in[1] + iy) * s.in[0];
      for (uint32_t ix = w.lo[0]; ix < w.hi[0]; ++ix)
        if (best == ~uint64_t(0) || xq[row + ix] > xq[best]) best = row + ix;
    }
  return best;
}

// Outputs [lo, hi] (inclusive; lo > hi when none) whose windows along axis d contain input i.
NN_FORCE_INLINE void pool_outputs_of(const PoolShape& s, int d, uint32_t i, int64_t& lo,
                                     int64_t& hi) {
  // o * stride - pad <= i < o * stride - pad + kernel
  const int64_t top = int64_t(i) + s.pad[d];     // o * stride <= top
  const int64_t bottom = top - s.kernel[d] + 1;  // o * stride >= bottom
  lo = bottom <= 0 ? 0 : (bottom + s.stride[d] - 1) / s.stride[d];
  hi = top / s.stride[d];
  if (hi > int64_t(s.out[d]) - 1) hi = int64_t(s.out[d]) - 1;
}

// dx for input element i (within one plane) of the plane xq: `current` plus, in output order,
// the gradient of every window that routes to it (dyq: the plane's output gradients).
NN_FORCE_INLINE float pool_backward_at(const PoolShape& s, const float* xq, const float* dyq,
                                       uint64_t i, float current) {
  const uint32_t ix = uint32_t(i % s.in[0]);
  const uint64_t t = i / s.in[0];
  const uint32_t iy = uint32_t(t % s.in[1]), iz = uint32_t(t / s.in[1]);
  int64_t lo[3], hi[3];
  pool_outputs_of(s, 0, ix, lo[0], hi[0]);
  pool_outputs_of(s, 1, iy, lo[1], hi[1]);
  pool_outputs_of(s, 2, iz, lo[2], hi[2]);
  float acc = current;
  for (int64_t oz = lo[2]; oz <= hi[2]; ++oz)
    for (int64_t oy = lo[1]; oy <= hi[1]; ++oy)
      for (int64_t ox = lo[0]; ox <= hi[0]; ++ox) {
        const PoolWindow w = pool_window_of(s, uint32_t(ox), uint32_t(oy), uint32_t(oz));
        const uint64_t o = (uint64_t(oz) * s.out[1] + uint64_t(oy)) * s.out[0] + uint64_t(ox);
        if (s.is_max) {
          if (pool_argmax(s, w, xq) == i) acc += dyq[o];
        } else {
          acc += pool_mean(dyq[o], w.count());
        }
      }
  return acc;
}

}  // namespace nn::math
