// CudaBackend optimizer step: one kernel launch per update, one template instance per rule; the
// per-parameter arithmetic is math::optimizer_unit, which the CPU backend's loop
// (cpu/optimizer.cpp) calls too.
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_guard.h"
#include "backend/math/optimizer_math.h"
#include "core/error.h"

namespace nn {
namespace {

template <OptimizerKind K>
constexpr int kStates = math::kOptimizerStates<K>;

template <OptimizerKind K>
__global__ void optimizer_kernel(math::OptConsts c, float* w, const float* g, float* s0, float* s1,
                                 size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    float wi = w[i];
    float a = 0.0f, b = 0.0f;
    if constexpr (kStates<K> >= 1) a = s0[i];
    if constexpr (kStates<K> >= 2) b = s1[i];
    math::optimizer_unit<K>(c, wi, g[i], a, b);
    w[i] = wi;
    if constexpr (kStates<K> >= 1) s0[i] = a;
    if constexpr (kStates<K> >= 2) s1[i] = b;
  }
}

template <OptimizerKind K>
void launch(cudaStream_t s, const math::OptConsts& c, float* w, const float* g, float* s0,
            float* s1, size_t n) {
  optimizer_kernel<K><<<grid_for(n), kThreads, 0, s>>>(c, w, g, s0, s1, n);
  NN_CUDA_LAUNCHED("optimizer_kernel");
}

}  // namespace

void CudaBackend::optimizer_step(const OptimizerParams& p, float* w, const float* g, float* state0,
                                 float* state1, size_t n) {
  const cuda::DeviceGuard guard(device_);
  if (n == 0) return;
  const int states = optimizer_state_count(p.kind);
  NN_CHECK(states < 1 || state0 != nullptr, "optimizer_step: state0 is required");
  NN_CHECK(states < 2 || state1 != nullptr, "optimizer_step: state1 is required");
  const math::OptConsts c = math::optimizer_consts(p);
  switch (p.kind) {
    case OptimizerKind::SGD:
      return launch<OptimizerKind::SGD>(stream_, c, w, g, state0, state1, n);
    case OptimizerKind::Momentum:
      return launch<OptimizerKind::Momentum>(stream_, c, w, g, state0, state1, n);
    case OptimizerKind::Nesterov:
      return launch<OptimizerKind::Nesterov>(stream_, c, w, g, state0, state1, n);
    case OptimizerKind::AdaGrad:
      return launch<OptimizerKind::AdaGrad>(stream_, c, w, g, state0, state1, n);
    case OptimizerKind::RMSProp:
      return launch<OptimizerKind::RMSProp>(stream_, c, w, g, state0, state1, n);
    case OptimizerKind::AdaDelta:
      return launch<OptimizerKind::AdaDelta>(stream_, c, w, g, state0, state1, n);
    case OptimizerKind::Adam:
      return launch<OptimizerKind::Adam>(stream_, c, w, g, state0, state1, n);
  }
  throw InternalError("optimizer_step: unknown optimizer");
}

}  // namespace nn
