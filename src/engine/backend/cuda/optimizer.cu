// CudaBackend optimizer steps: one kernel launch per update (or one for all the parameters of a
// multi-tensor step), one template instance per rule; the per-parameter arithmetic is
// math::optimizer_unit, which the CPU backend's loop (cpu/optimizer.cpp) calls too.
#include <cstdint>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_guard.h"
#include "backend/math/bf16_math.h"
#include "backend/math/optimizer_math.h"
#include "core/error.h"

namespace nn {
namespace {

template <OptimizerKind K>
constexpr int kStates = math::kOptimizerStates<K>;

// Element `at` of the parameter and its state takes rule K with gradient g: the arithmetic of
// the dense and the row-sparse kernels alike.
// Returns the updated value (for the multi-tensor kernel's BF16 copy).
template <OptimizerKind K>
__device__ __forceinline__ float update_element(const math::OptConsts& c, float* w, float g,
                                                float* s0, float* s1, size_t at) {
  float wi = w[at];
  float a = 0.0f, b = 0.0f;
  if constexpr (kStates<K> >= 1) a = s0[at];
  if constexpr (kStates<K> >= 2) b = s1[at];
  math::optimizer_unit<K>(c, wi, g, a, b);
  w[at] = wi;
  if constexpr (kStates<K> >= 1) s0[at] = a;
  if constexpr (kStates<K> >= 2) s1[at] = b;
  return wi;
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

// ---- multi-tensor step ------------------------------------------------------------------------
namespace nn {
namespace {

// Elements per block of the multi-tensor kernel: 32 per thread, and enough blocks to fill the
// card for a few million parameters.
constexpr size_t kMultiChunk = 8192;

struct MultiTensor {
  float* w;
  const float* g;
  float* s0;
  float* s1;
  uint16_t* w16;  // the BF16 copy to write, or null
  size_t n;
  int regularize;
};
struct MultiChunk {
  uint32_t tensor;
  uint32_t index;  // elements [index * kMultiChunk, (index + 1) * kMultiChunk) of the tensor
};

template <OptimizerKind K>
__global__ void optimizer_multi_kernel(math::OptConsts reg, math::OptConsts plain,
                                       const MultiTensor* tensors, const MultiChunk* chunks) {
  const MultiChunk ch = chunks[blockIdx.x];
  const MultiTensor t = tensors[ch.tensor];
  const math::OptConsts& c = t.regularize ? reg : plain;
  const size_t begin = size_t(ch.index) * kMultiChunk;
  const size_t end = begin + kMultiChunk < t.n ? begin + kMultiChunk : t.n;
  if (t.w16) {
    for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x)
      t.w16[i] = math::float_to_bf16(update_element<K>(c, t.w, t.g[i], t.s0, t.s1, i));
  } else {
    for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x)
      update_element<K>(c, t.w, t.g[i], t.s0, t.s1, i);
  }
}

bool same_tensors(const std::vector<OptimizerTensor>& a, const OptimizerTensor* b, size_t count) {
  if (a.size() != count) return false;
  for (size_t i = 0; i < count; ++i)
    if (a[i].w != b[i].w || a[i].g != b[i].g || a[i].state0 != b[i].state0 ||
        a[i].state1 != b[i].state1 || a[i].n != b[i].n || a[i].regularize != b[i].regularize ||
        a[i].w_bf16 != b[i].w_bf16)
      return false;
  return true;
}

}  // namespace

void CudaBackend::optimizer_step_multi(const OptimizerParams& p, const OptimizerTensor* tensors,
                                       size_t count) {
  const cuda::DeviceGuard guard(device_);
  // Off (the default until a GPU run passes it): one optimizer_step launch per tensor.
  if (!multi_tensor_) return Backend::optimizer_step_multi(p, tensors, count);
  const int states = optimizer_state_count(p.kind);
  for (size_t i = 0; i < count; ++i) {
    NN_CHECK(states < 1 || tensors[i].n == 0 || tensors[i].state0 != nullptr,
             "optimizer_step_multi: state0 is required");
    NN_CHECK(states < 2 || tensors[i].n == 0 || tensors[i].state1 != nullptr,
             "optimizer_step_multi: state1 is required");
  }
  if (!same_tensors(multi_tensors_, tensors, count)) {
    // A new set of tensors: the table is built and uploaded once, then reused every step.
    std::vector<MultiTensor> table(count);
    std::vector<MultiChunk> chunks;
    for (size_t i = 0; i < count; ++i) {
      const OptimizerTensor& t = tensors[i];
      table[i] = {t.w, t.g, t.state0, t.state1, t.w_bf16, t.n, t.regularize ? 1 : 0};
      const size_t pieces = (t.n + kMultiChunk - 1) / kMultiChunk;
      NN_CHECK(pieces <= UINT32_MAX, "optimizer_step_multi: tensor too large");
      for (size_t k = 0; k < pieces; ++k)
        chunks.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(k)});
    }
    NN_CHECK(chunks.size() <= INT32_MAX, "optimizer_step_multi: too many chunks");
    const size_t tensor_bytes = (count * sizeof(MultiTensor) + 15) / 16 * 16;
    const size_t bytes = tensor_bytes + chunks.size() * sizeof(MultiChunk);
    if (bytes > multi_table_bytes_) {
      if (multi_table_) {
        const CaptureBreak pause(*this, "a bigger optimizer table");
        NN_CUDA_CALL(cudaStreamSynchronize(stream_));  // a launch in flight may read it
        release(multi_table_);
      }
      multi_table_ = nullptr;
      multi_table_bytes_ = 0;
      multi_table_ = allocate(bytes);
      multi_table_bytes_ = bytes;
    }
    auto* base = static_cast<unsigned char*>(multi_table_);
    // Through the staging ring, ordered on the stream before the launches that read it.
    if (count) upload(base, table.data(), count * sizeof(MultiTensor));
    if (!chunks.empty())
      upload(base + tensor_bytes, chunks.data(), chunks.size() * sizeof(MultiChunk));
    multi_tensors_.assign(tensors, tensors + count);
    multi_chunks_ = static_cast<uint32_t>(chunks.size());
  }
  if (multi_chunks_ == 0) return;
  OptimizerParams plain_params = p;
  plain_params.lambda = plain_params.lambda1 = 0.0f;
  const math::OptConsts reg = math::optimizer_consts(p);
  const math::OptConsts plain = math::optimizer_consts(plain_params);
  auto* base = static_cast<unsigned char*>(multi_table_);
  const auto* table = reinterpret_cast<const MultiTensor*>(base);
  const auto* chunks = reinterpret_cast<const MultiChunk*>(
      base + (multi_tensors_.size() * sizeof(MultiTensor) + 15) / 16 * 16);
  const bool known = math::with_optimizer_kind(p.kind, [&](auto rule) {
    optimizer_multi_kernel<decltype(rule)::value>
        <<<multi_chunks_, kThreads, 0, stream_>>>(reg, plain, table, chunks);
    NN_CUDA_LAUNCHED("optimizer_multi_kernel");
  });
  if (!known) throw InternalError("optimizer_step_multi: unknown optimizer");
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
