// Cross-channel local response normalisation on the CPU (formula in backend/conv_params.h).
// Work is split into (example, block of plane positions) tasks; within a task every channel's
// block is processed as a contiguous vector, so the window sums and powers vectorise.
//
// Backward, with s_c = k + alpha/n * sum_{j in W(c)} x_j^2 and y_c = x_c * s_c^-beta, where
// W(c) = [c - (n-1)/2, c + n/2]:
//   dx_m = dy_m * s_m^-beta - 2 * alpha * beta / n * x_m * sum_{c : m in W(c)} dy_c x_c
//   s_c^(-beta-1)
// and m is in W(c) exactly when c is in [m - n/2, m + (n-1)/2]. Per-element arithmetic:
// backend/math/lrn_math.h, which the CUDA fallback kernels (cuda/lrn.cu) use too.
#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/math/lrn_math.h"
#include "core/error.h"

namespace nn {
namespace {

constexpr uint64_t kBlock = 256;  // plane positions per task block

void check(const LrnParams& p, const char* kernel) {
  NN_CHECK(p.channels >= 1 && p.plane >= 1 && p.n >= 1, kernel);
}

// Runs body(row, first position, count) over every block of every example.
template <typename F>
void for_blocks(cpu::ThreadPool& pool, const LrnParams& p, uint32_t rows, const F& body) {
  const uint64_t blocks = (p.plane + kBlock - 1) / kBlock;
  const size_t tasks = size_t(rows) * blocks;
  const size_t grain = std::max<size_t>(1, cpu::kMinTaskFloats / (kBlock * p.channels));
  cpu::parallel_ranges(pool, tasks, grain, [&](size_t lo, size_t hi) {
    for (size_t t = lo; t < hi; ++t) {
      const uint64_t first = (t % blocks) * kBlock;
      body(uint32_t(t / blocks), first, std::min(kBlock, p.plane - first));
    }
  });
}

// s[c][i] = k + alpha/n * sum over W(c) of x_j[i]^2 for one block; sq is scratch.
void window_scales(const LrnParams& p, const float* x, uint64_t count, float* sq, float* s) {
  const uint32_t C = p.channels, lo = (p.n - 1) / 2, hi = p.n / 2;
  const math::LrnShape shape = math::lrn_shape_of(p);
  for (uint32_t c = 0; c < C; ++c) {
    const float* xc = x + c * p.plane;
    float* q = sq + c * count;
    for (uint64_t i = 0; i < count; ++i) q[i] = xc[i] * xc[i];
  }
  for (uint32_t c = 0; c < C; ++c) {
    const uint32_t j0 = c >= lo ? c - lo : 0, j1 = std::min(C - 1, c + hi);
    float* sc = s + c * count;
    std::fill(sc, sc + count, 0.0f);
    for (uint32_t j = j0; j <= j1; ++j) {
      const float* q = sq + j * count;
      for (uint64_t i = 0; i < count; ++i) sc[i] += q[i];
    }
    for (uint64_t i = 0; i < count; ++i) sc[i] = math::lrn_window_scale(shape, sc[i]);
  }
}

}  // namespace

void CpuBackend::lrn_forward(const LrnParams& p, uint32_t rows, const float* x, bool accumulate,
                             float* y) {
  check(p, "lrn_forward");
  const uint64_t stride = uint64_t(p.channels) * p.plane;
  const math::LrnShape shape = math::lrn_shape_of(p);
  for_blocks(*pool_, p, rows, [&](uint32_t r, uint64_t first, uint64_t count) {
    thread_local std::vector<float> sq, s;
    sq.resize(p.channels * count);
    s.resize(p.channels * count);
    const float* xr = x + r * stride + first;
    float* yr = y + r * stride + first;
    window_scales(p, xr, count, sq.data(), s.data());
    for (uint32_t c = 0; c < p.channels; ++c) {
      const float* xc = xr + c * p.plane;
      const float* sc = s.data() + c * count;
      float* yc = yr + c * p.plane;
      for (uint64_t i = 0; i < count; ++i) {
        const float v = math::lrn_value(shape, xc[i], sc[i]);
        yc[i] = accumulate ? yc[i] + v : v;
      }
    }
  });
}

void CpuBackend::lrn_backward(const LrnParams& p, uint32_t rows, const float* x, const float* dy,
                              float* dx) {
  check(p, "lrn_backward");
  const uint64_t stride = uint64_t(p.channels) * p.plane;
  const uint32_t C = p.channels, lo = (p.n - 1) / 2, hi = p.n / 2;
  const math::LrnShape shape = math::lrn_shape_of(p);
  for_blocks(*pool_, p, rows, [&](uint32_t r, uint64_t first, uint64_t count) {
    thread_local std::vector<float> sq, s, t;
    sq.resize(C * count);
    s.resize(C * count);
    t.resize(C * count);
    const uint64_t at = r * stride + first;
    window_scales(p, x + at, count, sq.data(), s.data());
    // s becomes s^-beta; t = dy * x * s^(-beta-1).
    for (uint32_t c = 0; c < C; ++c) {
      const float* xc = x + at + c * p.plane;
      const float* dyc = dy + at + c * p.plane;
      float* sc = s.data() + c * count;
      float* tc = t.data() + c * count;
      for (uint64_t i = 0; i < count; ++i) {
        float f;
        math::lrn_terms(shape, xc[i], dyc[i], sc[i], f, tc[i]);
        sc[i] = f;
      }
    }
    for (uint32_t m = 0; m < C; ++m) {
      const uint32_t c0 = m >= hi ? m - hi : 0, c1 = std::min(C - 1, m + lo);
      float* sum = sq.data();  // scratch: the window sum of t for channel m
      std::fill(sum, sum + count, 0.0f);
      for (uint32_t c = c0; c <= c1; ++c) {
        const float* tc = t.data() + c * count;
        for (uint64_t i = 0; i < count; ++i) sum[i] += tc[i];
      }
      const float* xm = x + at + m * p.plane;
      const float* dym = dy + at + m * p.plane;
      const float* fm = s.data() + m * count;
      float* dxm = dx + at + m * p.plane;
      for (uint64_t i = 0; i < count; ++i)
        dxm[i] = math::lrn_dx_update(shape, dxm[i], xm[i], dym[i], fm[i], sum[i]);
    }
  });
}

}  // namespace nn
