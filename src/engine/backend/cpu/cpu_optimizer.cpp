// CpuBackend optimizer step (dsstne-reference.md §6.7, rewritten for the true gradient g of the
// mean loss, so every rule subtracts). With the regularised gradient
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
// carry over. Each rule is one memory-bound pass, vectorised and split statically over threads.
#include <algorithm>
#include <cmath>
#include <string>

#include "backend/cpu/cpu_backend.h"
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

}  // namespace

// Each rule is written as its own plain loop over arrays: GCC vectorises those with contiguous
// loads, where a lambda indexing the arrays led it to gathers and scatters.
#define NN_OPT_LOOP \
  _Pragma("omp parallel for simd num_threads(threads_) schedule(static) if (n >= kParallelMin)") \
  for (size_t i = 0; i < n; ++i)

void CpuBackend::optimizer_step(const OptimizerParams& p, float* w, const float* g, float* state0,
                                float* state1, size_t n) {
  if (n == 0) return;
  const int states = optimizer_state_count(p.kind);
  NN_CHECK(states < 1 || state0 != nullptr, "optimizer_step: state0 is required");
  NN_CHECK(states < 2 || state1 != nullptr, "optimizer_step: state1 is required");
  const float alpha = p.alpha, mu = p.mu, mu1 = p.mu1;
  const Reg reg{p.lambda, p.lambda1};
  switch (p.kind) {
    case OptimizerKind::SGD:
      NN_OPT_LOOP { w[i] -= alpha * reg(w[i], g[i]); }
      break;
    case OptimizerKind::Momentum:
      NN_OPT_LOOP {
        const float v = mu * state0[i] - alpha * reg(w[i], g[i]);
        state0[i] = v;
        w[i] += v;
      }
      break;
    case OptimizerKind::Nesterov:
      NN_OPT_LOOP {
        const float v_old = state0[i];
        const float v = mu * v_old - alpha * reg(w[i], g[i]);
        state0[i] = v;
        w[i] += v + mu * (v - v_old);
      }
      break;
    case OptimizerKind::AdaGrad:
      NN_OPT_LOOP {
        const float gi = reg(w[i], g[i]);
        const float v = state0[i] + gi * gi;
        state0[i] = v;
        w[i] -= alpha * gi / std::sqrt(std::max(kAdaFloor, v));
      }
      break;
    case OptimizerKind::RMSProp:
      NN_OPT_LOOP {
        const float gi = reg(w[i], g[i]);
        const float v = mu * state0[i] + (1.0f - mu) * gi * gi;
        state0[i] = v;
        w[i] -= alpha * gi / std::sqrt(std::max(kAdaFloor, v));
      }
      break;
    case OptimizerKind::AdaDelta:
      NN_OPT_LOOP {
        const float gi = reg(w[i], g[i]);
        const float s = mu * state0[i] + (1.0f - mu) * gi * gi;
        const float u = state1[i];
        const float d = std::sqrt(std::max(kAdaFloor, u) / std::max(kAdaFloor, s)) * gi;
        state0[i] = s;
        state1[i] = mu * u + (1.0f - mu) * d * d;
        w[i] -= d;
      }
      break;
    case OptimizerKind::Adam: {
      const double step = double(p.step > 0 ? p.step : 1);
      const float c1 = static_cast<float>(1.0 / (1.0 - std::pow(double(mu), step)));
      const float c2 = static_cast<float>(1.0 / (1.0 - std::pow(double(mu1), step)));
      NN_OPT_LOOP {
        const float gi = reg(w[i], g[i]);
        const float m = mu * state0[i] + (1.0f - mu) * gi;
        const float v = mu1 * state1[i] + (1.0f - mu1) * gi * gi;
        state0[i] = m;
        state1[i] = v;
        w[i] -= alpha * (m * c1) / (std::sqrt(v * c2) + kAdamEps);
      }
      break;
    }
  }
}

#undef NN_OPT_LOOP

}  // namespace nn
