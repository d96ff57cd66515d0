// CpuBackend optimizer step (DSSTNE's NNWeight::UpdateWeights and the update kernels of its
// engine/kernels.cu, rewritten for the true gradient g of the mean loss, so every rule
// subtracts). With the regularised gradient
// g' = g + lambda*w + lambda1*sign(w):
//   SGD       w -= alpha*g'
//   Momentum  v = mu*v - alpha*g';  w += v                                   (state0 = v)
//   Nesterov  v' = mu*v - alpha*g'; w += v' + mu*(v' - v)                     (state0 = v)
//   AdaGrad   v += g'^2;            w -= alpha*g'/sqrt(max(1e-9, v))          (state0 = v)
//   RMSProp   v = mu*v + (1-mu)*g'^2; w -= alpha*g'/sqrt(max(1e-9, v))        (state0 = v)
//   AdaDelta  s = mu*s + (1-mu)*g'^2; d = sqrt(max(1e-9, u)/max(1e-9, s))*g';
//             u = mu*u + (1-mu)*d^2;  w -= d                      (state0 = s, state1 = u)
//   Adam      m = mu*m + (1-mu)*g';  v = mu1*v + (1-mu1)*g'^2;
//             w -= alpha*(m/(1-mu^t)) / (sqrt(v/(1-mu1^t)) + 1e-8), t = step (first step 1,
//             correcting DSSTNE's off-by-one)                         (state0 = m, state1 = v)
// The adaptive rules keep DSSTNE's sqrt(max(1e-9, v)) floor so hyper-parameters tuned for it
// carry over. Each rule is one memory-bound pass, vectorised and spread over the pool in chunks;
// the per-parameter arithmetic and its constants are math::optimizer_unit / optimizer_consts
// (backend/math/optimizer_math.h), which the CUDA kernel (cuda/optimizer.cu) runs too.
#include <algorithm>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/bf16_math.h"
#include "backend/math/optimizer_math.h"
#include "core/error.h"

namespace nn {
namespace {

constexpr size_t kParallelMin = size_t(1) << 15;

// rule(w, g[, s0[, s1]]) over elements [lo, hi) of the arrays (at most kChunk of them): the
// inner loop of every pass below, the dense one and the row-sparse one alike, so an element gets
// the same instructions either way. The rule gets element references, not indices: GCC
// vectorised index-taking lambdas with gathers and scatters.
template <int kStates, typename Rule>
inline void apply_span(size_t lo, size_t hi, float* w, const float* g, float* s0, float* s1,
                       const Rule& rule) {
#pragma omp simd
  for (size_t i = lo; i < hi; ++i) {
    if constexpr (kStates == 0) rule(w[i], g[i]);
    if constexpr (kStates == 1) rule(w[i], g[i], s0[i]);
    if constexpr (kStates == 2) rule(w[i], g[i], s0[i], s1[i]);
  }
}

// Applies the rule to every parameter in chunks spread over the pool, with software prefetch
// (stream.h). With w16, each chunk's updated values are rounded to BF16 there while still in the
// cache (OptimizerTensor::w_bf16), instead of by a second pass over the weights.
template <int kStates, typename Rule>
void update(cpu::ThreadPool& pool, size_t n, float* w, const float* g, float* s0, float* s1,
            const Rule& rule, uint16_t* w16 = nullptr) {
  cpu::for_chunks(pool, n, kParallelMin, [=](size_t lo, size_t hi) {
    cpu::prefetch_ahead<1>(w, lo);
    cpu::prefetch_ahead(g, lo);
    if constexpr (kStates >= 1) cpu::prefetch_ahead<1>(s0, lo);
    if constexpr (kStates >= 2) cpu::prefetch_ahead<1>(s1, lo);
    apply_span<kStates>(lo, hi, w, g, s0, s1, rule);
    if (w16) {
#pragma omp simd
      for (size_t i = lo; i < hi; ++i) w16[i] = math::float_to_bf16(w[i]);
    }
  });
}

// The same rule on rows rows[0..count) of [*][width] arrays, with the gradient compact
// ([count][width]); rows spread over the pool.
template <int kStates, typename Rule>
void update_rows(cpu::ThreadPool& pool, uint32_t width, const uint32_t* rows, uint32_t count,
                 float* w, const float* g, float* s0, float* s1, const Rule& rule) {
  const size_t grain = std::max<size_t>(1, kParallelMin / std::max<uint32_t>(width, 1));
  cpu::parallel_ranges(pool, count, grain, [=](size_t lo, size_t hi) {
    const Rule local = rule;
    for (size_t i = lo; i < hi; ++i) {
      const size_t at = size_t(rows[i]) * width;
      float* wr = w + at;
      const float* gr = g + i * width;
      float* s0r = kStates >= 1 ? s0 + at : nullptr;
      float* s1r = kStates >= 2 ? s1 + at : nullptr;
      for (size_t b = 0; b < width; b += cpu::kChunk)
        apply_span<kStates>(b, std::min<size_t>(width, b + cpu::kChunk), wr, gr, s0r, s1r, local);
    }
  });
}

// The element rule of optimizer K (math::optimizer_unit, the arithmetic the CUDA kernel runs per
// element), with as many state references as K has. Rules without a second (or any) state get a
// local dummy, which the compiler removes.
template <OptimizerKind K>
auto element_rule(const math::OptConsts& c) {
  constexpr int kStates = math::kOptimizerStates<K>;
  if constexpr (kStates == 0) {
    return [c](float& wi, float gi) {
      float unused0 = 0.0f, unused1 = 0.0f;
      math::optimizer_unit<K>(c, wi, gi, unused0, unused1);
    };
  } else if constexpr (kStates == 1) {
    return [c](float& wi, float gi, float& a) {
      float unused = 0.0f;
      math::optimizer_unit<K>(c, wi, gi, a, unused);
    };
  } else {
    return
        [c](float& wi, float gi, float& a, float& b) { math::optimizer_unit<K>(c, wi, gi, a, b); };
  }
}

// One pass of rule K over every parameter (rows == nullptr) or over the given rows.
// (w16: the dense pass's BF16 copy, or null.)
template <OptimizerKind K>
void step(cpu::ThreadPool& pool, const math::OptConsts& c, size_t n, float* w, const float* g,
          float* s0, float* s1, uint32_t width = 0, const uint32_t* rows = nullptr,
          uint16_t* w16 = nullptr) {
  constexpr int kStates = math::kOptimizerStates<K>;
  if (rows)
    update_rows<kStates>(pool, width, rows, static_cast<uint32_t>(n), w, g, s0, s1,
                         element_rule<K>(c));
  else
    update<kStates>(pool, n, w, g, s0, s1, element_rule<K>(c), w16);
}

// Steps skipped by rows: row i (rows[i], or i when rows is null) of [*][width] arrays takes
// math::skip_unit<K> with factors[2i] (mu^k) and factors[2i + 1] (w's gain per unit of v).
template <OptimizerKind K>
void skip_rows(cpu::ThreadPool& pool, uint32_t width, const uint32_t* rows, const float* factors,
               uint32_t count, float* w, float* s0, float* s1) {
  const size_t grain = std::max<size_t>(1, kParallelMin / std::max<uint32_t>(width, 1));
  cpu::parallel_ranges(pool, count, grain, [=](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) {
      const math::SkipFactors f{factors[2 * i], factors[2 * i + 1]};
      if (f.decay == 1.0f && f.w_per_v == 0.0f) continue;  // nothing skipped
      const size_t at = size_t(rows ? rows[i] : i) * width;
      float unused0 = 0.0f, unused1 = 0.0f;
      for (size_t j = 0; j < width; ++j) {
        float& a = s0 ? s0[at + j] : unused0;
        float& b = s1 ? s1[at + j] : unused1;
        math::skip_unit<K>(f, w[at + j], a, b);
      }
    }
  });
}

}  // namespace

namespace {

// One dense update of n parameters (and their BF16 copy when w16 is set): optimizer_step and
// each tensor of optimizer_step_multi.
void dense_step(cpu::ThreadPool& pool, const OptimizerParams& p, float* w, const float* g,
                float* state0, float* state1, size_t n, uint16_t* w16) {
  if (n == 0) return;
  const int states = optimizer_state_count(p.kind);
  NN_CHECK(states < 1 || state0 != nullptr, "optimizer_step: state0 is required");
  NN_CHECK(states < 2 || state1 != nullptr, "optimizer_step: state1 is required");
  const math::OptConsts c = math::optimizer_consts(p);
  const bool known = math::with_optimizer_kind(p.kind, [&](auto rule) {
    step<decltype(rule)::value>(pool, c, n, w, g, state0, state1, 0, nullptr, w16);
  });
  if (!known) throw InternalError("optimizer_step: unknown optimizer");
}

}  // namespace

void CpuBackend::optimizer_step(const OptimizerParams& p, float* w, const float* g, float* state0,
                                float* state1, size_t n) {
  dense_step(*pool_, p, w, g, state0, state1, n, nullptr);
}

void CpuBackend::optimizer_step_multi(const OptimizerParams& p, const OptimizerTensor* tensors,
                                      size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const OptimizerTensor& t = tensors[i];
    OptimizerParams q = p;
    if (!t.regularize) q.lambda = q.lambda1 = 0.0f;
    dense_step(*pool_, q, t.w, t.g, t.state0, t.state1, t.n, t.w_bf16);
  }
}

}  // namespace nn

namespace nn {

void CpuBackend::optimizer_step_rows(const OptimizerParams& p, float* w, const float* g,
                                     float* state0, float* state1, uint32_t width,
                                     const uint32_t* rows, uint32_t count) {
  if (count == 0 || width == 0) return;
  const int states = optimizer_state_count(p.kind);
  NN_CHECK(states < 1 || state0 != nullptr, "optimizer_step_rows: state0 is required");
  NN_CHECK(states < 2 || state1 != nullptr, "optimizer_step_rows: state1 is required");
  NN_CHECK(rows != nullptr, "optimizer_step_rows: no rows");
  const math::OptConsts c = math::optimizer_consts(p);
  const bool known = math::with_optimizer_kind(p.kind, [&](auto rule) {
    step<decltype(rule)::value>(*pool_, c, count, w, g, state0, state1, width, rows);
  });
  if (!known) throw InternalError("optimizer_step_rows: unknown optimizer");
}

void CpuBackend::optimizer_skip_rows(OptimizerKind kind, float* w, float* state0, float* state1,
                                     uint32_t width, const uint32_t* rows, const float* factors,
                                     uint32_t count) {
  if (count == 0 || width == 0) return;
  // Nothing changes in a skipped step of SGD or AdaGrad; Adam's have no closed form.
  if (!math::skips_change_state(kind) || !math::skips_have_closed_form(kind)) return;
  math::with_optimizer_kind(kind, [&](auto rule) {
    skip_rows<decltype(rule)::value>(*pool_, width, rows, factors, count, w, state0, state1);
  });
}

}  // namespace nn
