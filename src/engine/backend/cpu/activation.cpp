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
// Per-element arithmetic: math::activate_unit, math::fprime, the softmax_* steps and
// math::maxout_takes (backend/math/), which the CUDA kernels (cuda/activation.cu) run too; this
// file keeps the CPU's own loops, chunking and vectorisation.
#include <algorithm>
#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/activation_math.h"
#include "backend/math/elementwise_math.h"
#include "backend/math/fused_loss_math.h"
#include "backend/math/loss_row_math.h"
#include "core/error.h"

namespace nn {
namespace {

constexpr size_t kParallelMin = size_t(1) << 14;

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

// x = f(x) for elementwise activation K (math::activate_unit, the CUDA kernel's arithmetic) over
// rows x cols values whose rows are `stride` apart: one run when they are contiguous, else row
// by row (padded rows: the columns past cols are left alone).
template <Activation K>
void activate_elementwise(cpu::ThreadPool& pool, const ActivationParams& p, float* x, uint32_t rows,
                          uint32_t cols, uint32_t stride) {
  const math::ActConsts c = math::act_consts(p);
  if (stride == cols) {
    cpu::for_chunks(pool, size_t(rows) * cols, kParallelMin, [x, c](size_t lo, size_t hi) {
      cpu::prefetch_ahead<1>(x, lo);
#pragma omp simd
      for (size_t i = lo; i < hi; ++i) x[i] = math::activate_unit<K>(x[i], c);
    });
    return;
  }
  for_rows(pool, rows, cols, [x, c, cols, stride](uint32_t r) {
    float* row = x + size_t(r) * stride;
#pragma omp simd
    for (uint32_t i = 0; i < cols; ++i) row[i] = math::activate_unit<K>(row[i], c);
  });
}

void softmax_rows(cpu::ThreadPool& pool, float* x, uint32_t rows, uint32_t cols, uint32_t stride) {
  for_rows(pool, rows, cols, [x, cols, stride](uint32_t r) {
    float* row = x + size_t(r) * stride;
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
        const float e = math::softmax_exp(row[c], m);
        row[c] = e;
        part += e;
      }
      sum += part;
    }
    // The largest term is e^0 = 1, so sum >= 1.
    const float inv = math::softmax_inverse(sum);
#pragma omp simd
    for (uint32_t c = 0; c < cols; ++c) row[c] = math::softmax_scale(row[c], inv);
  });
}

// delta *= f'(a) over rows x cols values whose rows are `stride` apart (as above).
template <math::DerivKind D>
void backward_elementwise(cpu::ThreadPool& pool, const math::DerivConsts k, const float* a,
                          float* delta, uint32_t rows, uint32_t cols, uint32_t stride) {
  if (stride == cols) {
    cpu::for_chunks(pool, size_t(rows) * cols, kParallelMin, [a, delta, k](size_t lo, size_t hi) {
      cpu::prefetch_ahead(a, lo);
      cpu::prefetch_ahead<1>(delta, lo);
#pragma omp simd
      for (size_t i = lo; i < hi; ++i) delta[i] *= math::fprime<D>(a[i], k);
    });
    return;
  }
  for_rows(pool, rows, cols, [a, delta, k, cols, stride](uint32_t r) {
    const float* ar = a + size_t(r) * stride;
    float* dr = delta + size_t(r) * stride;
#pragma omp simd
    for (uint32_t i = 0; i < cols; ++i) dr[i] *= math::fprime<D>(ar[i], k);
  });
}

// delta_z[j] = sum_i delta_a[i] * da_i/dz_j = a_j * (delta_a[j] - sum_i delta_a[i] * a_i).
void softmax_backward(cpu::ThreadPool& pool, const float* a, float* delta, uint32_t rows,
                      uint32_t cols, uint32_t stride) {
  for_rows(pool, rows, cols, [a, delta, cols, stride](uint32_t r) {
    const float* ar = a + size_t(r) * stride;
    float* dr = delta + size_t(r) * stride;
    double dot = 0.0;
#pragma omp simd reduction(+ : dot)
    for (uint32_t c = 0; c < cols; ++c) dot += double(dr[c]) * ar[c];
    const float d = static_cast<float>(dot);
#pragma omp simd
    for (uint32_t c = 0; c < cols; ++c) dr[c] = math::softmax_jacobian(ar[c], dr[c], d);
  });
}

}  // namespace

void CpuBackend::activate(const ActivationParams& p, float* x, uint32_t rows, uint32_t cols) {
  if (rows == 0 || cols == 0) return;
  const uint32_t stride = p.row_stride ? p.row_stride : cols;
  NN_CHECK(stride >= cols, "activate: row_stride below the columns");
  switch (p.kind) {
    case Activation::Sigmoid:
      return activate_elementwise<Activation::Sigmoid>(*pool_, p, x, rows, cols, stride);
    case Activation::Tanh:
      return activate_elementwise<Activation::Tanh>(*pool_, p, x, rows, cols, stride);
    case Activation::Linear:
      return;
    case Activation::RectifiedLinear:
      return activate_elementwise<Activation::RectifiedLinear>(*pool_, p, x, rows, cols, stride);
    case Activation::ReluMax:
      return activate_elementwise<Activation::ReluMax>(*pool_, p, x, rows, cols, stride);
    case Activation::LinearMax:
      return activate_elementwise<Activation::LinearMax>(*pool_, p, x, rows, cols, stride);
    case Activation::MaxOut:
      throw InternalError("activate(): MaxOut changes the width; use maxout_forward");
    case Activation::LeakyRectifiedLinear:
      return activate_elementwise<Activation::LeakyRectifiedLinear>(*pool_, p, x, rows, cols,
                                                                    stride);
    case Activation::ParametricRectifiedLinear:
      return activate_elementwise<Activation::ParametricRectifiedLinear>(*pool_, p, x, rows, cols,
                                                                         stride);
    case Activation::ExponentialLinear:
      return activate_elementwise<Activation::ExponentialLinear>(*pool_, p, x, rows, cols, stride);
    case Activation::ScaledExponentialLinear:
      return activate_elementwise<Activation::ScaledExponentialLinear>(*pool_, p, x, rows, cols,
                                                                       stride);
    case Activation::SoftPlus:
      return activate_elementwise<Activation::SoftPlus>(*pool_, p, x, rows, cols, stride);
    case Activation::SoftSign:
      return activate_elementwise<Activation::SoftSign>(*pool_, p, x, rows, cols, stride);
    case Activation::SoftMax:
      return softmax_rows(*pool_, x, rows, cols, stride);
  }
}

void CpuBackend::activation_backward(const ActivationParams& p, const float* a, float* delta,
                                     uint32_t rows, uint32_t cols) {
  using math::DerivKind;
  if (rows == 0 || cols == 0) return;
  const uint32_t stride = p.row_stride ? p.row_stride : cols;
  NN_CHECK(stride >= cols, "activation_backward: row_stride below the columns");
  const math::DerivConsts k = math::deriv_consts(p);
  cpu::ThreadPool& t = *pool_;
  switch (math::deriv_kind(p.kind)) {
    case DerivKind::Sigmoid:
      backward_elementwise<DerivKind::Sigmoid>(t, k, a, delta, rows, cols, stride);
      break;
    case DerivKind::Tanh:
      backward_elementwise<DerivKind::Tanh>(t, k, a, delta, rows, cols, stride);
      break;
    case DerivKind::One:
      break;
    case DerivKind::Step:
      backward_elementwise<DerivKind::Step>(t, k, a, delta, rows, cols, stride);
      break;
    case DerivKind::Clip:
      backward_elementwise<DerivKind::Clip>(t, k, a, delta, rows, cols, stride);
      break;
    case DerivKind::Elu:
      backward_elementwise<DerivKind::Elu>(t, k, a, delta, rows, cols, stride);
      break;
    case DerivKind::SoftPlus:
      backward_elementwise<DerivKind::SoftPlus>(t, k, a, delta, rows, cols, stride);
      break;
    case DerivKind::SoftSign:
      backward_elementwise<DerivKind::SoftSign>(t, k, a, delta, rows, cols, stride);
      break;
    case DerivKind::SoftMax:
      softmax_backward(t, a, delta, rows, cols, stride);
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
          if (math::maxout_takes(ag[s], zi[s])) {
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
