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

// Element `at` of the parameter and its state takes rule K with gradient g: the arithmetic of
// the dense and the row-sparse kernels alike.
template <OptimizerKind K>
__device__ __forceinline__ void update_element(const math::OptConsts& c, float* w, float g,
                                               float* s0, float* s1, size_t at) {
  float wi = w[at];
  float a = 0.0f, b = 0.0f;
  if constexpr (kStates<K> >= 1) a = s0[at];
  if constexpr (kStates<K> >= 2) b = s1[at];
  math::optimizer_unit<K>(c, wi, g, a, b);
  w[at] = wi;
  if constexpr (kStates<K> >= 1) s0[at] = a;
  if constexpr (kStates<K> >= 2) s1[at] = b;
}

template <OptimizerKind K>
__global__ void optimizer_kernel(math::OptConsts c, float* w, const float* g, float* s0, float* s1,
                                 size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    update_element<K>(c, w, g[i], s0, s1, i);
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
  const bool known = math::with_optimizer_kind(p.kind, [&](auto rule) {
    launch<decltype(rule)::value>(stream_, c, w, g, state0, state1, n);
  });
  if (!known) throw InternalError("optimizer_step: unknown optimizer");
}

}  // namespace nn

// ---- row-sparse updates (train/row_sparse.h) -------------------------------------------------
namespace nn {
namespace {

// Element (i, j) of the compact gradient updates element (rows[i], j) of the arrays, with the
// dense kernel's arithmetic.
template <OptimizerKind K>
__global__ void optimizer_rows_kernel(math::OptConsts c, float* w, const float* g, float* s0,
                                      float* s1, uint32_t width, const uint32_t* rows, size_t n) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < n;
       e += size_t(gridDim.x) * blockDim.x) {
    const size_t i = e / width, j = e - i * width;
    const size_t at = size_t(rows[i]) * width + j;
    update_element<K>(c, w, g[e], s0, s1, at);
  }
}

template <OptimizerKind K>
void launch_rows(cudaStream_t s, const math::OptConsts& c, float* w, const float* g, float* s0,
                 float* s1, uint32_t width, const uint32_t* rows, uint32_t count) {
  const size_t n = size_t(count) * width;
  optimizer_rows_kernel<K><<<grid_for(n), kThreads, 0, s>>>(c, w, g, s0, s1, width, rows, n);
  NN_CUDA_LAUNCHED("optimizer_rows_kernel");
}

template <OptimizerKind K>
__global__ void skip_rows_kernel(float* w, float* s0, float* s1, uint32_t width,
                                 const uint32_t* rows, const float* factors, size_t n) {
  for (size_t e = blockIdx.x * size_t(blockDim.x) + threadIdx.x; e < n;
       e += size_t(gridDim.x) * blockDim.x) {
    const size_t i = e / width, j = e - i * width;
    const math::SkipFactors f{factors[2 * i], factors[2 * i + 1]};
    if (f.decay == 1.0f && f.w_per_v == 0.0f) continue;
    const size_t at = size_t(rows ? rows[i] : i) * width + j;
    float a = 0.0f, b = 0.0f;
    if (s0) a = s0[at];
    if (s1) b = s1[at];
    float wi = w[at];
    math::skip_unit<K>(f, wi, a, b);
    w[at] = wi;
    if (s0) s0[at] = a;
    if (s1) s1[at] = b;
  }
}

template <OptimizerKind K>
void launch_skip(cudaStream_t s, float* w, float* s0, float* s1, uint32_t width,
                 const uint32_t* rows, const float* factors, uint32_t count) {
  const size_t n = size_t(count) * width;
  skip_rows_kernel<K><<<grid_for(n), kThreads, 0, s>>>(w, s0, s1, width, rows, factors, n);
  NN_CUDA_LAUNCHED("skip_rows_kernel");
}

}  // namespace

void CudaBackend::optimizer_step_rows(const OptimizerParams& p, float* w, const float* g,
                                      float* state0, float* state1, uint32_t width,
                                      const uint32_t* rows, uint32_t count) {
  const cuda::DeviceGuard guard(device_);
  if (count == 0 || width == 0) return;
  const int states = optimizer_state_count(p.kind);
  NN_CHECK(states < 1 || state0 != nullptr, "optimizer_step_rows: state0 is required");
  NN_CHECK(states < 2 || state1 != nullptr, "optimizer_step_rows: state1 is required");
  NN_CHECK(rows != nullptr, "optimizer_step_rows: no rows");
  const math::OptConsts c = math::optimizer_consts(p);
  const bool known = math::with_optimizer_kind(p.kind, [&](auto rule) {
    launch_rows<decltype(rule)::value>(stream_, c, w, g, state0, state1, width, rows, count);
  });
  if (!known) throw InternalError("optimizer_step_rows: unknown optimizer");
}

void CudaBackend::optimizer_skip_rows(OptimizerKind kind, float* w, float* state0, float* state1,
                                      uint32_t width, const uint32_t* rows, const float* factors,
                                      uint32_t count) {
  const cuda::DeviceGuard guard(device_);
  if (count == 0 || width == 0) return;
  if (!math::skips_change_state(kind) || !math::skips_have_closed_form(kind)) return;
  math::with_optimizer_kind(kind, [&](auto rule) {
    launch_skip<decltype(rule)::value>(stream_, w, state0, state1, width, rows, factors, count);
  });
}

}  // namespace nn
