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
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "backend/math/optimizer_math.h"
#include "core/error.h"

namespace nn {
namespace {

constexpr size_t kParallelMin = size_t(1) << 15;

// Applies rule(w, g[, s0[, s1]]) to every parameter in chunks spread over the pool, with
// software prefetch (stream.h). The rule gets element references, not indices: GCC vectorised
// index-taking lambdas with gathers and scatters.
template <int kStates, typename Rule>
void update(cpu::ThreadPool& pool, size_t n, float* w, const float* g, float* s0, float* s1,
            const Rule& rule) {
  cpu::for_chunks(pool, n, kParallelMin, [=](size_t lo, size_t hi) {
    cpu::prefetch_ahead<1>(w, lo);
    cpu::prefetch_ahead(g, lo);
    if constexpr (kStates >= 1) cpu::prefetch_ahead<1>(s0, lo);
    if constexpr (kStates >= 2) cpu::prefetch_ahead<1>(s1, lo);
#pragma omp simd
    for (size_t i = lo; i < hi; ++i) {
      if constexpr (kStates == 0) rule(w[i], g[i]);
      if constexpr (kStates == 1) rule(w[i], g[i], s0[i]);
      if constexpr (kStates == 2) rule(w[i], g[i], s0[i], s1[i]);
    }
  });
}

// One pass of rule K (math::optimizer_unit, the arithmetic the CUDA kernel runs per element).
// Rules without a second (or any) state get a local dummy, which the compiler removes.
template <OptimizerKind K>
void step(cpu::ThreadPool& pool, const math::OptConsts& c, size_t n, float* w, const float* g,
          float* s0, float* s1) {
  constexpr int kStates = math::kOptimizerStates<K>;
  if constexpr (kStates == 0) {
    update<0>(pool, n, w, g, s0, s1, [c](float& wi, float gi) {
      float unused0 = 0.0f, unused1 = 0.0f;
      math::optimizer_unit<K>(c, wi, gi, unused0, unused1);
    });
  } else if constexpr (kStates == 1) {
    update<1>(pool, n, w, g, s0, s1, [c](float& wi, float gi, float& a) {
      float unused = 0.0f;
      math::optimizer_unit<K>(c, wi, gi, a, unused);
    });
  } else {
    update<2>(pool, n, w, g, s0, s1, [c](float& wi, float gi, float& a, float& b) {
      math::optimizer_unit<K>(c, wi, gi, a, b);
    });
  }
}

}  // namespace

void CpuBackend::optimizer_step(const OptimizerParams& p, float* w, const float* g, float* state0,
                                float* state1, size_t n) {
  if (n == 0) return;
  const int states = optimizer_state_count(p.kind);
  NN_CHECK(states < 1 || state0 != nullptr, "optimizer_step: state0 is required");
  NN_CHECK(states < 2 || state1 != nullptr, "optimizer_step: state1 is required");
  const math::OptConsts c = math::optimizer_consts(p);
  cpu::ThreadPool& t = *pool_;
  switch (p.kind) {
    case OptimizerKind::SGD:
      return step<OptimizerKind::SGD>(t, c, n, w, g, state0, state1);
    case OptimizerKind::Momentum:
      return step<OptimizerKind::Momentum>(t, c, n, w, g, state0, state1);
    case OptimizerKind::Nesterov:
      return step<OptimizerKind::Nesterov>(t, c, n, w, g, state0, state1);
    case OptimizerKind::AdaGrad:
      return step<OptimizerKind::AdaGrad>(t, c, n, w, g, state0, state1);
    case OptimizerKind::RMSProp:
      return step<OptimizerKind::RMSProp>(t, c, n, w, g, state0, state1);
    case OptimizerKind::AdaDelta:
      return step<OptimizerKind::AdaDelta>(t, c, n, w, g, state0, state1);
    case OptimizerKind::Adam:
      return step<OptimizerKind::Adam>(t, c, n, w, g, state0, state1);
  }
  throw InternalError("optimizer_step: unknown optimizer");
}

}  // namespace nn
