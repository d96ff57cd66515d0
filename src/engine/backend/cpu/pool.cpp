// Max and Average pooling on the CPU. Every (example, channel) plane is independent, so planes
// are spread over the pool. The general code visits each output's window (its input range per
// axis precomputed, clipped to the input). The common 2x2 window with stride 2 and no padding
// has its own loops over pairs of input rows, which the compiler vectorises: on the Fashion-MNIST
// CNN the general window loop spent more time on pooling than on the second convolution.
// Per-window arithmetic: backend/math/pool_math.h (window bounds, the pooled value, the first
// largest input, the mean), which the CUDA kernels (cuda/pool.cu) use too; the 2x2 loops are
// the same rules written for two input rows at a time.
#include <algorithm>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/math/pool_math.h"
#include "core/error.h"

namespace nn {
namespace {

// Input range [lo, hi) of each output position along each axis (math::pool_window), computed
// once per call rather than per output.
struct Windows {
  std::vector<uint32_t> lo[3], hi[3];
  explicit Windows(const math::PoolShape& s) {
    for (int d = 0; d < 3; ++d) {
      lo[d].resize(s.out[d]);
      hi[d].resize(s.out[d]);
      for (uint32_t o = 0; o < s.out[d]; ++o) math::pool_window(s, d, o, lo[d][o], hi[d][o]);
    }
  }
  // The window of output (ox, oy, oz). The loops below take the y and z bounds once per output
  // line and set the x bounds per output: building the whole window per output made the
  // general backward pass 7% slower.
  math::PoolWindow at(uint32_t ox, uint32_t oy, uint32_t oz) const {
    return {{lo[0][ox], lo[1][oy], lo[2][oz]}, {hi[0][ox], hi[1][oy], hi[2][oz]}};
  }
};

// 2x2 windows, stride 2, no padding, every window inside the input (z, if any, untouched):
// then planes of z slices can be pooled row pair by row pair.
bool is_2x2_stride_2(const ConvGeometry& g) {
  return g.kernel[0] == 2 && g.kernel[1] == 2 && g.kernel[2] == 1 && g.stride[0] == 2 &&
         g.stride[1] == 2 && g.stride[2] == 1 && g.pad[0] == 0 && g.pad[1] == 0 && g.pad[2] == 0 &&
         g.out[0] == g.in[0] / 2 && g.out[1] == g.in[1] / 2 && g.out[2] == g.in[2];
}

// Runs body(first plane, end plane) over `planes` planes of `plane_size` inputs each.
template <typename F>
void for_planes(cpu::ThreadPool& pool, size_t planes, uint64_t plane_size, const F& body) {
  const size_t grain = std::max<size_t>(1, cpu::kMinTaskFloats / std::max<uint64_t>(1, plane_size));
  if (planes * plane_size < (size_t(1) << 15))
    body(size_t(0), planes);
  else
    cpu::parallel_ranges(pool, planes, grain, body);
}

inline float max4(float a, float b, float c, float d) {
  const float ab = b > a ? b : a, cd = d > c ? d : c;
  return cd > ab ? cd : ab;
}

// One output line of 2x2 / stride 2 pooling from input rows r0, r1. Separate (not inlined)
// functions with restrict pointers and this exact loop shape: GCC vectorises them, not the same
// loops written inline in the pool's lambdas.
[[gnu::noinline]] void max_2x2(const float* __restrict r0, const float* __restrict r1,
                               float* __restrict out, long n, bool accumulate) {
  if (accumulate)
    for (long o = 0; o < n; ++o) out[o] += max4(r0[2 * o], r0[2 * o + 1], r1[2 * o], r1[2 * o + 1]);
  else
    for (long o = 0; o < n; ++o) out[o] = max4(r0[2 * o], r0[2 * o + 1], r1[2 * o], r1[2 * o + 1]);
}

[[gnu::noinline]] void average_2x2(const float* __restrict r0, const float* __restrict r1,
                                   float* __restrict out, long n, bool accumulate) {
  if (accumulate)
    for (long o = 0; o < n; ++o)
      out[o] += math::pool_mean(r0[2 * o] + r0[2 * o + 1] + r1[2 * o] + r1[2 * o + 1], 4);
  else
    for (long o = 0; o < n; ++o)
      out[o] = math::pool_mean(r0[2 * o] + r0[2 * o + 1] + r1[2 * o] + r1[2 * o + 1], 4);
}

// The window's first maximum in (y, x) order gets the gradient.
[[gnu::noinline]] void max_2x2_backward(const float* __restrict r0, const float* __restrict r1,
                                        const float* __restrict dy, float* __restrict d0,
                                        float* __restrict d1, long n) {
  for (long o = 0; o < n; ++o) {
    const float a = r0[2 * o], b = r0[2 * o + 1], c = r1[2 * o], d = r1[2 * o + 1];
    const float m = max4(a, b, c, d), grad = dy[o];
    float ga = 0.0f, gb = 0.0f, gc = 0.0f, gd = 0.0f;
    if (a == m)
      ga = grad;
    else if (b == m)
      gb = grad;
    else if (c == m)
      gc = grad;
    else
      gd = grad;
    d0[2 * o] += ga;
    d0[2 * o + 1] += gb;
    d1[2 * o] += gc;
    d1[2 * o + 1] += gd;
  }
}

[[gnu::noinline]] void average_2x2_backward(const float* __restrict dy, float* __restrict d0,
                                            float* __restrict d1, long n) {
  for (long o = 0; o < n; ++o) {
    const float grad = math::pool_mean(dy[o], 4);
    d0[2 * o] += grad;
    d0[2 * o + 1] += grad;
    d1[2 * o] += grad;
    d1[2 * o + 1] += grad;
  }
}

}  // namespace

void CpuBackend::pool_forward(const PoolParams& p, uint32_t rows, const float* x, bool accumulate,
                              float* y) {
  check_pool_params(p, "pool_forward");
  const ConvGeometry& g = p.geometry;
  const bool is_max = p.function == PoolingFunction::Max;
  if (is_2x2_stride_2(g)) {
    const uint32_t w = g.in[0], n = g.out[0];
    const size_t lines = size_t(rows) * g.in_channels * g.in[2] * g.out[1];
    const size_t in_plane = size_t(g.in[1]) * w, out_plane = size_t(g.out[1]) * n;
    for_planes(*pool_, lines, 2 * w, [&](size_t lo, size_t hi) {
      for (size_t l = lo; l < hi; ++l) {
        // Output line l: plane l / out[1], row pair l % out[1].
        const float* r0 = x + (l / g.out[1]) * in_plane + (l % g.out[1]) * 2 * w;
        const float* r1 = r0 + w;
        float* out = y + (l / g.out[1]) * out_plane + (l % g.out[1]) * n;
        if (is_max)
          max_2x2(r0, r1, out, n, accumulate);
        else
          average_2x2(r0, r1, out, n, accumulate);
      }
    });
    return;
  }
  const math::PoolShape shape = math::pool_shape_of(p);
  const Windows win(shape);
  const size_t planes = size_t(rows) * g.in_channels;
  for_planes(*pool_, planes, g.in_plane(), [&](size_t lo, size_t hi) {
    for (size_t q = lo; q < hi; ++q) {
      const float* xq = x + q * g.in_plane();
      float* yq = y + q * g.out_plane();
      size_t o = 0;
      for (uint32_t oz = 0; oz < g.out[2]; ++oz)
        for (uint32_t oy = 0; oy < g.out[1]; ++oy) {
          math::PoolWindow w = win.at(0, oy, oz);
          for (uint32_t ox = 0; ox < g.out[0]; ++ox, ++o) {
            w.lo[0] = win.lo[0][ox];
            w.hi[0] = win.hi[0][ox];
            // An empty window (entirely in the padding) gives 0.
            const float v = math::pool_value(shape, w, xq);
            yq[o] = accumulate ? yq[o] + v : v;
          }
        }
    }
  });
}

void CpuBackend::pool_backward(const PoolParams& p, uint32_t rows, const float* x, const float* dy,
                               float* dx) {
  check_pool_params(p, "pool_backward");
  const ConvGeometry& g = p.geometry;
  const bool is_max = p.function == PoolingFunction::Max;
  if (is_2x2_stride_2(g)) {
    const uint32_t w = g.in[0], n = g.out[0];
    const size_t lines = size_t(rows) * g.in_channels * g.in[2] * g.out[1];
    const size_t in_plane = size_t(g.in[1]) * w, out_plane = size_t(g.out[1]) * n;
    for_planes(*pool_, lines, 2 * w, [&](size_t lo, size_t hi) {
      for (size_t l = lo; l < hi; ++l) {
        const size_t in_at = (l / g.out[1]) * in_plane + (l % g.out[1]) * 2 * w;
        const float* r0 = x + in_at;
        const float* r1 = r0 + w;
        float* d0 = dx + in_at;
        float* d1 = d0 + w;
        const float* gl = dy + (l / g.out[1]) * out_plane + (l % g.out[1]) * n;
        if (is_max)
          max_2x2_backward(r0, r1, gl, d0, d1, n);
        else
          average_2x2_backward(gl, d0, d1, n);
      }
    });
    return;
  }
  const math::PoolShape shape = math::pool_shape_of(p);
  const Windows win(shape);
  const size_t planes = size_t(rows) * g.in_channels;
  for_planes(*pool_, planes, g.in_plane(), [&](size_t lo, size_t hi) {
    for (size_t q = lo; q < hi; ++q) {
      const float* xq = x + q * g.in_plane();
      float* dxq = dx + q * g.in_plane();
      const float* dyq = dy + q * g.out_plane();
      size_t o = 0;
      for (uint32_t oz = 0; oz < g.out[2]; ++oz)
        for (uint32_t oy = 0; oy < g.out[1]; ++oy) {
          math::PoolWindow w = win.at(0, oy, oz);  // the x bounds are set per output
          for (uint32_t ox = 0; ox < g.out[0]; ++ox, ++o) {
            w.lo[0] = win.lo[0][ox];
            w.hi[0] = win.hi[0][ox];
            const uint32_t count = w.count();
            if (count == 0) continue;  // an empty window's gradient goes nowhere
            if (is_max) {
              // The window's first maximum in (z, y, x) order gets the gradient.
              dxq[math::pool_argmax(shape, w, xq)] += dyq[o];
            } else {
              const float grad = math::pool_mean(dyq[o], count);
              for (uint32_t iz = w.lo[2]; iz < w.hi[2]; ++iz)
                for (uint32_t iy = w.lo[1]; iy < w.hi[1]; ++iy) {
                  float* row = dxq + (size_t(iz) * g.in[1] + iy) * g.in[0];
                  for (uint32_t ix = w.lo[0]; ix < w.hi[0]; ++ix) row[ix] += grad;
                }
            }
          }
        }
    }
  });
}

}  // namespace nn
