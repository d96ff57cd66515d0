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
// carry over. Each rule is one memory-bound pass, vectorised and spread over the pool in chunks.
#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/stream.h"
#include "backend/cpu/thread_pool.h"
#include "core/error.h"

namespace nn {
namespace {

constexpr size_t kParallelMin = size_t(1) << 15;
constexpr float kAdaFloor = 1e-9f;
constexpr float kAdamEps = 1e-8f;

struct Reg {
  float lambda, lambda1;
  // g' = g + lambda*w + lambda1*sign(w)
  float operator()(float w, float g) const {
    const float sign = w > 0.0f ? 1.0f : (w < 0.0f ? -1.0f : 0.0f);
    return g + lambda * w + lambda1 * sign;
  }
};

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

}  // namespace

void CpuBackend::optimizer_step(const OptimizerParams& p, float* w, const float* g, float* state0,
                                float* state1, size_t n) {
  if (n == 0) return;
  const int states = optimizer_state_count(p.kind);
  NN_CHECK(states < 1 || state0 != nullptr, "optimizer_step: state0 is required");
  NN_CHECK(states < 2 || state1 != nullptr, "optimizer_step: state1 is required");
  const float alpha = p.alpha, mu = p.mu, mu1 = p.mu1;
  const Reg reg{p.lambda, p.lambda1};
  cpu::ThreadPool& t = *pool_;
  switch (p.kind) {
    case OptimizerKind::SGD:
      update<0>(t, n, w, g, state0, state1,
                [=](float& wi, float gi) { wi -= alpha * reg(wi, gi); });
      break;
    case OptimizerKind::Momentum:
      update<1>(t, n, w, g, state0, state1, [=](float& wi, float gi, float& v) {
        v = mu * v - alpha * reg(wi, gi);
        wi += v;
      });
      break;
    case OptimizerKind::Nesterov:
      update<1>(t, n, w, g, state0, state1, [=](float& wi, float gi, float& v) {
        const float v_old = v;
        v = mu * v_old - alpha * reg(wi, gi);
        wi += v + mu * (v - v_old);
      });
      break;
    case OptimizerKind::AdaGrad:
      update<1>(t, n, w, g, state0, state1, [=](float& wi, float gi, float& v) {
        const float gr = reg(wi, gi);
        v += gr * gr;
        wi -= alpha * gr / std::sqrt(std::max(kAdaFloor, v));
      });
      break;
    case OptimizerKind::RMSProp:
      update<1>(t, n, w, g, state0, state1, [=](float& wi, float gi, float& v) {
        const float gr = reg(wi, gi);
        v = mu * v + (1.0f - mu) * gr * gr;
        wi -= alpha * gr / std::sqrt(std::max(kAdaFloor, v));
      });
      break;
    case OptimizerKind::AdaDelta:
      update<2>(t, n, w, g, state0, state1, [=](float& wi, float gi, float& s, float& u) {
        const float gr = reg(wi, gi);
        s = mu * s + (1.0f - mu) * gr * gr;
        const float d = std::sqrt(std::max(kAdaFloor, u) / std::max(kAdaFloor, s)) * gr;
        u = mu * u + (1.0f - mu) * d * d;
        wi -= d;
      });
      break;
    case OptimizerKind::Adam: {
      const double step = double(p.step > 0 ? p.step : 1);
      const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(double(mu), step)));
      const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(double(mu1), step)));
      update<2>(t, n, w, g, state0, state1, [=](float& wi, float gi, float& m, float& v) {
        const float gr = reg(wi, gi);
        m = mu * m + (1.0f - mu) * gr;
        v = mu1 * v + (1.0f - mu1) * gr * gr;
        wi -= alpha * (m * c1) / (std::sqrt(v * c2) + kAdamEps);
      });
      break;
    }
  }
}

}  // namespace nn
