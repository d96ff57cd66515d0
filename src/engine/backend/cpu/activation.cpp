// CpuBackend activations: forward (in place) and backward (delta *= f'(z), written through a).
//
// Definitions beyond DSSTNE (which parsed SoftPlus, SoftSign, ReluMax and LinearMax but ran them
// all as Linear):
//   SoftPlus   a = ln(1 + e^z),    f' = 1 - e^-a
//   SoftSign   a = z / (1 + |z|),  f' = (1 - |a|)^2
//   ReluMax    a = min(max(z, 0), m)    ReLU bounded above by m (ReLU6 when m = 6)
//   LinearMax  a = min(max(z, -m), m)   the identity bounded to [-m, m] (hard tanh when m = 1)
//              m = the layer's ActivationMax (default 1). DSSTNE never defined either; a unit
//              at a bound passes no gradient.
//   MaxOut     a_j = max_i z_(j*k+i): not elementwise (the layer has k pre-activations per
//              unit); maxout_forward/maxout_backward below, called by the layers.
//   SELU       the true derivative: lambda for a > 0, a + lambda*alpha otherwise.
// SoftMax normalises each row (max subtracted first); its backward applies the row Jacobian.
#include <algorithm>
#include <cmath>

#include "backend/math/activation_math.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/math/fast_math.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "core/error.h"

namespace nn {
namespace {

constexpr size_t kParallelMin = size_t(1) << 14;

template <typename F>
void map_inplace(cpu::ThreadPool& pool, float* x, size_t n, const F f) {
  cpu::for_chunks(pool, n, kParallelMin, [x, f](size_t lo, size_t hi) {
    cpu::prefetch_ahead<1>(x, lo);
#pragma omp simd
    for (size_t i = lo; i < hi; ++i) x[i] = f(x[i]);
  });
}

// Rows run in parallel ranges; `body(r)` handles one row.
template <typename F>
void for_rows(cpu::ThreadPool& pool, uint32_t rows, uint32_t cols, const F& body) {
  auto range = [&body](size_t lo, size_t hi) {
    for (size_t r = lo; r < hi; ++r) body(uint32_t(r));
  };
  if (size_t(rows) * cols >= kParallelMin)
    cpu::parallel_ranges(pool, rows, std::max<size_t>(1, cpu::kMinTaskFloats / cols), range);
  else
    range(0, rows);
}

void softmax_rows(cpu::ThreadPool& pool, float* x, uint32_t rows, uint32_t cols) {
  for_rows(pool, rows, cols, [x, cols](uint32_t r) {
    float* row = x + size_t(r) * cols;
    // Pass 1 streams the row in from memory; passes 2 and 3 find it in cache.
    float m = -INFINITY;
    for (uint32_t b = 0; b < cols; b += cpu::kChunk) {
      const uint32_t end = std::min<uint32_t>(cols, b + cpu::kChunk);
      cpu::prefetch_ahead<1>(row, b);
      m = cpu::max_ignoring_nan(row + b, end - b, m);
    }
    // Float sums per chunk, accumulated in double across chunks.
    double sum = 0.0;
    for (uint32_t b = 0; b < cols; b += cpu::kChunk) {
      const uint32_t end = std::min<uint32_t>(cols, b + cpu::kChunk);
      float part = 0.0f;
#pragma omp simd reduction(+ : part)
      for (uint32_t c = b; c < end; ++c) {
        const float e = fastmath::exp(row[c] - m);
        row[c] = e;
        part += e;
      }
      sum += part;
    }
    // The largest term is e^0 = 1, so sum >= 1.
    const float inv = static_cast<float>(1.0 / sum);
#pragma omp simd
    for (uint32_t c = 0; c < cols; ++c) row[c] *= inv;
  });
}

template <math::DerivKind D>
void backward_elementwise(cpu::ThreadPool& pool, const math::DerivConsts k, const float* a,
                          float* delta, size_t n) {
  cpu::for_chunks(pool, n, kParallelMin, [a, delta, k](size_t lo, size_t hi) {
    cpu::prefetch_ahead(a, lo);
    cpu::prefetch_ahead<1>(delta, lo);
#pragma omp simd
    for (size_t i = lo; i < hi; ++i) delta[i] *= math::fprime<D>(a[i], k);
  });
}

// delta_z[j] = sum_i delta_a[i] * da_i/dz_j = a_j * (delta_a[j] - sum_i delta_a[i] * a_i).
void softmax_backward(cpu::ThreadPool& pool, const float* a, float* delta, uint32_t rows,
                      uint32_t cols) {
  for_rows(pool, rows, cols, [a, delta, cols](uint32_t r) {
    const float* ar = a + size_t(r) * cols;
    float* dr = delta + size_t(r) * cols;
    double dot = 0.0;
#pragma omp simd reduction(+ : dot)
    for (uint32_t c = 0; c < cols; ++c) dot += double(dr[c]) * ar[c];
    const float d = static_cast<float>(dot);
#pragma omp simd
    for (uint32_t c = 0; c < cols; ++c) dr[c] = ar[c] * (dr[c] - d);
  });
}

}  // namespace

void CpuBackend::activate(const ActivationParams& p, float* x, uint32_t rows, uint32_t cols) {
  const size_t n = size_t(rows) * cols;
  cpu::ThreadPool& t = *pool_;
  switch (p.kind) {
    case Activation::Sigmoid:
      map_inplace(t, x, n, [](float z) { return fastmath::sigmoid(z); });
      break;
    case Activation::Tanh:
      map_inplace(t, x, n, [](float z) { return fastmath::tanh(z); });
      break;
    case Activation::Linear:
      break;
    case Activation::RectifiedLinear:
      map_inplace(t, x, n, [](float z) { return z > 0.0f ? z : 0.0f; });
      break;
    case Activation::ReluMax:
    case Activation::LinearMax: {
      const float hi = p.max_value, lo = p.kind == Activation::ReluMax ? 0.0f : -hi;
      // Written so that NaN propagates (as for the other activations) instead of clamping.
      map_inplace(t, x, n, [lo, hi](float z) { return z < lo ? lo : (z > hi ? hi : z); });
      break;
    }
    case Activation::MaxOut:
      throw InternalError("activate(): MaxOut changes the width; use maxout_forward");
    case Activation::LeakyRectifiedLinear:
    case Activation::ParametricRectifiedLinear: {
      const float s = p.slope;
      map_inplace(t, x, n, [s](float z) { return z > 0.0f ? z : s * z; });
      break;
    }
    case Activation::ExponentialLinear: {
      const float al = p.alpha;
      map_inplace(t, x, n, [al](float z) { return z > 0.0f ? z : al * fastmath::expm1(z); });
      break;
    }
    case Activation::ScaledExponentialLinear: {
      const float al = p.alpha, la = p.lambda;
      map_inplace(t, x, n,
                  [al, la](float z) { return la * (z > 0.0f ? z : al * fastmath::expm1(z)); });
      break;
    }
    case Activation::SoftPlus:
      // ln(1 + e^z) = max(z, 0) + ln(1 + e^-|z|): no overflow for large z.
      map_inplace(t, x, n, [](float z) {
        return std::max(z, 0.0f) + fastmath::log1p(fastmath::exp(-std::fabs(z)));
      });
      break;
    case Activation::SoftSign:
      map_inplace(t, x, n, [](float z) { return z / (1.0f + std::fabs(z)); });
      break;
    case Activation::SoftMax:
      softmax_rows(t, x, rows, cols);
      break;
  }
}

void CpuBackend::activation_backward(const ActivationParams& p, const float* a, float* delta,
                                     uint32_t rows, uint32_t cols) {
  using math::DerivKind;
  const size_t n = size_t(rows) * cols;
  const math::DerivConsts k = math::deriv_consts(p);
  cpu::ThreadPool& t = *pool_;
  switch (math::deriv_kind(p.kind)) {
    case DerivKind::Sigmoid:
      backward_elementwise<DerivKind::Sigmoid>(t, k, a, delta, n);
      break;
    case DerivKind::Tanh:
      backward_elementwise<DerivKind::Tanh>(t, k, a, delta, n);
      break;
    case DerivKind::One:
      break;
    case DerivKind::Step:
      backward_elementwise<DerivKind::Step>(t, k, a, delta, n);
      break;
    case DerivKind::Clip:
      backward_elementwise<DerivKind::Clip>(t, k, a, delta, n);
      break;
    case DerivKind::Elu:
      backward_elementwise<DerivKind::Elu>(t, k, a, delta, n);
      break;
    case DerivKind::SoftPlus:
      backward_elementwise<DerivKind::SoftPlus>(t, k, a, delta, n);
      break;
    case DerivKind::SoftSign:
      backward_elementwise<DerivKind::SoftSign>(t, k, a, delta, n);
      break;
    case DerivKind::SoftMax:
      softmax_backward(t, a, delta, rows, cols);
      break;
  }
}

void CpuBackend::maxout_forward(const float* z, size_t groups, uint32_t k, uint32_t inner, float* a,
                                uint32_t* arg) {
  const size_t per_group = size_t(k) * inner;
  auto body = [=](size_t lo, size_t hi) {
    for (size_t g = lo; g < hi; ++g) {
      const float* zg = z + g * per_group;
      float* ag = a + g * inner;
      uint32_t* xg = arg + g * inner;
      for (uint32_t s = 0; s < inner; ++s) {
        ag[s] = zg[s];
        xg[s] = 0;
      }
      for (uint32_t i = 1; i < k; ++i) {
        const float* zi = zg + size_t(i) * inner;
        for (uint32_t s = 0; s < inner; ++s) {
          // A NaN piece wins and then stays, so a diverged layer reports NaN.
          if (ag[s] != ag[s]) continue;
          if (zi[s] > ag[s] || zi[s] != zi[s]) {
            ag[s] = zi[s];
            xg[s] = i;
          }
        }
      }
    }
  };
  cpu::parallel_ranges(*pool_, groups, std::max<size_t>(1, cpu::kMinTaskFloats / per_group), body);
}

void CpuBackend::maxout_backward(const float* da, const uint32_t* arg, size_t groups, uint32_t k,
                                 uint32_t inner, float* dz) {
  const size_t per_group = size_t(k) * inner;
  auto body = [=](size_t lo, size_t hi) {
    for (size_t g = lo; g < hi; ++g) {
      float* dg = dz + g * per_group;
      std::fill(dg, dg + per_group, 0.0f);
      for (uint32_t s = 0; s < inner; ++s)
        dg[size_t(arg[g * inner + s]) * inner + s] = da[g * inner + s];
    }
  };
  cpu::parallel_ranges(*pool_, groups, std::max<size_t>(1, cpu::kMinTaskFloats / per_group), body);
}

}  // namespace nn
