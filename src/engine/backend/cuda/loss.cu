// CudaBackend losses and output deltas: one block per batch row, fused (the activations are read
// once per pass and the deltas written once), with the CPU backend's algorithm (cpu/loss.cpp):
//   sweep  every unit with its dense target, or t = 0 for sparse targets (implicit zeros);
//   patch  after a barrier, every stored target, merged by index, replaces its unit's t = 0
//          error and delta (sparse targets are sorted stably by (row, index) first, cuda_sort.cu,
//          so duplicates are adjacent and merge in entry order);
//   SoftMax: closed form for CrossEntropy, DSSTNE's rule for ScaledMarginalCrossEntropy,
//          the softmax Jacobian for every other error function.
// Per-unit arithmetic: backend/math/loss_row_math.h and loss_math.h (the CPU's loops call them
// too).
// Each row's error is summed in double by a fixed tree; rows are summed in a fixed order on the
// device and read back once per call (loss, loss_and_delta) or added into a sum left on the
// device (loss_accumulate, activate_loss_accumulate).
// Fused (kFused, activate_loss_accumulate): the same kernels start from z and compute each unit's
// activation in their first sweep over the row, writing a over z there (SoftMax first finds the
// row maximum and the exponentials as softmax_kernel does, fused_loss_math.h), so the output
// layer is not read again by a separate activate() pass. Units read by another thread (the
// patches, the Jacobian) are read from memory after a barrier, as in the unfused kernels.
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_reduce.cuh"
#include "backend/cuda/cuda_sort.cuh"
#include "backend/cuda/device_guard.h"
#include "backend/math/fused_loss_math.h"
#include "backend/math/loss_kernel_choice.h"
#include "backend/math/loss_row_math.h"
#include "backend/math/sparse_math.h"
#include "core/error.h"

namespace nn {
namespace {

using math::DerivKind;
using math::Form;
using math::form_of;

struct LossArgs {
  math::LossRowConsts o;
  const float* a = nullptr;
  const float* dense_t = nullptr;     // dense targets, or nullptr (sparse)
  const uint32_t* row_ptr = nullptr;  // sparse targets: CSR rows
  const uint32_t* sorted_index = nullptr;
  const uint32_t* sorted_entry = nullptr;
  const float* value = nullptr;    // sparse target values (nullptr: Boolean)
  const float* weights = nullptr;  // example weights, or nullptr
  float* delta = nullptr;          // nullptr: error only
  uint32_t cols = 0;
  uint32_t stride = 0;     // a, z and delta rows: stride floats apart (padded rows), >= cols
  bool normalise = false;  // multinomial targets (SoftMax cross-entropy forms)
  double* row_error = nullptr;
  unsigned long long* flag = nullptr;
  // Fused kernels only: z in, the activations out (a above points at it too).
  float* z = nullptr;
  Activation act = Activation::Linear;
  math::ActConsts act_c;
};

__device__ __forceinline__ void flag_bad(unsigned long long* flag, uint32_t row, uint32_t index) {
  atomicMin(flag, (static_cast<unsigned long long>(row) << 32) | index);
}

// Sum of the row's merged (not yet normalised) targets, in index order, by thread 0 (the CPU's
// order); broadcast through shared memory. Rows with a bad index are flagged and return false.
__device__ bool row_target_sum(const LossArgs& g, uint32_t r, double* shared_sum) {
  __shared__ int bad;
  if (threadIdx.x == 0) {
    const uint32_t lo = g.row_ptr[r], hi = g.row_ptr[r + 1];
    double sum = 0.0;
    int b = 0;
    for (uint32_t i = lo; i < hi; ++i) {
      if (g.sorted_index[i] >= g.cols) {
        flag_bad(g.flag, r, g.sorted_index[i]);
        b = 1;
        break;
      }
      if (math::run_start(g.sorted_index, lo, i))
        sum += math::merged_target(g.sorted_index, g.sorted_entry, g.value, i, hi);
    }
    *shared_sum = sum;
    bad = b;
  }
  __syncthreads();
  return bad == 0;
}

// Fused kernels, before anything reads the row: SoftMax's maximum and exponentials (written over
// z) and 1 / their sum, in softmax_kernel's order and precision, so a is the same; nothing for
// the elementwise activations.
template <bool kSoftmax>
__device__ float fused_prologue(float* z, uint32_t cols, double* dshared) {
  if constexpr (!kSoftmax) {
    return 0.0f;
  } else {
    __shared__ float fshared[32];
    float m = -INFINITY;
    for (uint32_t c = threadIdx.x; c < cols; c += blockDim.x) m = z[c] > m ? z[c] : m;
    m = cuda::block_max(m, fshared);
    double sum = 0.0;
    for (uint32_t c = threadIdx.x; c < cols; c += blockDim.x) {
      const float e = math::softmax_exp(z[c], m);
      z[c] = e;
      sum += e;
    }
    return math::softmax_inverse(cuda::block_sum(sum, dshared));
  }
}

// Fused kernels: unit j's activation, written over z[j] by the thread that sweeps j (other
// threads read it only after a barrier), and returned as stored.
template <bool kSoftmax>
__device__ __forceinline__ float fused_unit(const LossArgs& g, float* z, uint32_t j, float inv) {
  const float a =
      kSoftmax ? math::softmax_scale(z[j], inv) : math::activate_unit(g.act, z[j], g.act_c);
  z[j] = a;
  return math::as_stored(a);
}

// Elementwise activation family D (and SmceSoftMax); kJacobian applies the SoftMax Jacobian to
// the deltas afterwards (D is then One, so the deltas hold dE/da). The SoftMax kernels are the
// Jacobian ones and SmceSoftMax; kFused: see the top of the file.
template <Form F, DerivKind D, bool kJacobian, bool kFused>
__global__ void loss_rows_kernel(LossArgs g) {
  constexpr bool kSoftmax = kJacobian || F == Form::SmceSoftMax;
  __shared__ double shared[32];
  __shared__ double target_sum;
  const uint32_t r = blockIdx.x, cols = g.cols;
  const float w = math::example_weight(g.weights, r);
  const float* a = g.a + size_t(r) * g.stride;
  float* z = kFused ? g.z + size_t(r) * g.stride : nullptr;
  float inv = 0.0f;
  if constexpr (kFused) inv = fused_prologue<kSoftmax>(z, cols, shared);
  float* d = g.delta ? g.delta + size_t(r) * g.stride : nullptr;
  const bool sparse = g.dense_t == nullptr;
  const float* t = sparse ? nullptr : g.dense_t + size_t(r) * cols;
  bool ok = true;
  if (sparse) ok = row_target_sum(g, r, &target_sum);
  double acc = 0.0;
  if (ok) {
    for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const float aj = kFused ? fused_unit<kSoftmax>(g, z, j, inv) : a[j];
      float dj;
      acc += math::loss_sweep_unit<F, D>(g.o, aj, sparse ? 0.0f : t[j], w, sparse, dj);
      if (d) d[j] = dj;
    }
    if (sparse) {
      __syncthreads();  // the sweep's deltas are written before the patches overwrite some
      const uint32_t lo = g.row_ptr[r], hi = g.row_ptr[r + 1];
      for (uint32_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
        if (!math::run_start(g.sorted_index, lo, i)) continue;
        const uint32_t j = g.sorted_index[i];
        float v = math::merged_target(g.sorted_index, g.sorted_entry, g.value, i, hi);
        if (g.normalise) v = math::normalised_target(v, target_sum);
        float e, e0, dj;
        math::loss_patch_unit<F, D>(g.o, a[j], v, w, e, e0, dj);
        acc += e;
        acc -= e0;
        if (d) d[j] = dj;
      }
    }
  } else if constexpr (kFused) {
    // A row with a bad target index has no loss, but its activations are still computed.
    for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x) fused_unit<kSoftmax>(g, z, j, inv);
  }
  acc = cuda::block_sum(acc, shared);  // also the barrier before the Jacobian reads the deltas
  if (threadIdx.x == 0) g.row_error[r] = ok ? acc : 0.0;
  if constexpr (kJacobian) {
    if (ok && d) {
      double dot = 0.0;
      for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x) dot += double(d[j]) * a[j];
      const float s = static_cast<float>(cuda::block_sum(dot, shared));
      for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x)
        d[j] = math::softmax_jacobian(a[j], d[j], s);
    }
  }
}

// SoftMax + CrossEntropy: e = -w * sum t ln a, delta = w * (a * sum(t) - t). kFused: dense
// targets compute a in the error sweep; sparse ones in a sweep of their own before the patches
// (which read a at the stored indices, from any thread).
template <bool kFused>
__global__ void softmax_ce_kernel(LossArgs g) {
  __shared__ double shared[32];
  __shared__ double target_sum;
  const uint32_t r = blockIdx.x, cols = g.cols;
  const float w = math::example_weight(g.weights, r);
  const float* a = g.a + size_t(r) * g.stride;
  float* z = kFused ? g.z + size_t(r) * g.stride : nullptr;
  float inv = 0.0f;
  if constexpr (kFused) inv = fused_prologue<true>(z, cols, shared);
  float* d = g.delta ? g.delta + size_t(r) * g.stride : nullptr;
  double acc = 0.0, tsum = 0.0;
  if (g.dense_t) {
    const float* t = g.dense_t + size_t(r) * cols;
    for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const float aj = kFused ? fused_unit<true>(g, z, j, inv) : a[j];
      acc += math::softmax_ce_error(aj, t[j], w);
      tsum += t[j];
    }
    acc = cuda::block_sum(acc, shared);
    const float s = static_cast<float>(cuda::block_sum(tsum, shared));
    if (d)
      for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x)
        d[j] = math::softmax_ce_delta(a[j], t[j], w, s);
    if (threadIdx.x == 0) g.row_error[r] = acc;
    return;
  }
  if constexpr (kFused) {
    for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x) fused_unit<true>(g, z, j, inv);
    __syncthreads();  // the patches below read a at any index
  }
  const bool ok = row_target_sum(g, r, &target_sum);
  const uint32_t lo = g.row_ptr[r], hi = g.row_ptr[r + 1];
  if (ok) {
    for (uint32_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
      if (!math::run_start(g.sorted_index, lo, i)) continue;
      float v = math::merged_target(g.sorted_index, g.sorted_entry, g.value, i, hi);
      if (g.normalise) v = math::normalised_target(v, target_sum);
      acc += math::softmax_ce_stored_error(a[g.sorted_index[i]], v, w);
      tsum += v;
    }
  }
  acc = cuda::block_sum(acc, shared);
  const float s = static_cast<float>(cuda::block_sum(tsum, shared));
  if (threadIdx.x == 0) g.row_error[r] = ok ? acc : 0.0;
  if (!ok || !d) return;
  for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x)
    d[j] = math::softmax_ce_delta_zero(a[j], w, s);
  __syncthreads();
  for (uint32_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    if (!math::run_start(g.sorted_index, lo, i)) continue;
    const uint32_t j = g.sorted_index[i];
    float v = math::merged_target(g.sorted_index, g.sorted_entry, g.value, i, hi);
    if (g.normalise) v = math::normalised_target(v, target_sum);
    d[j] = math::softmax_ce_delta(a[j], v, w, s);
  }
}

using Launcher = void (*)(const LossArgs&, uint32_t rows, cudaStream_t);

template <Form F, DerivKind D, bool kJacobian, bool kFused>
void launch_rows(const LossArgs& g, uint32_t rows, cudaStream_t s) {
  loss_rows_kernel<F, D, kJacobian, kFused><<<rows, kThreads, 0, s>>>(g);
  NN_CUDA_LAUNCHED(kFused ? "fused loss_rows_kernel" : "loss_rows_kernel");
}

template <bool kFused>
void launch_softmax_ce(const LossArgs& g, uint32_t rows, cudaStream_t s) {
  softmax_ce_kernel<kFused><<<rows, kThreads, 0, s>>>(g);
  NN_CUDA_LAUNCHED(kFused ? "fused softmax_ce_kernel" : "softmax_ce_kernel");
}

// The launchers choose_loss_kernel (math/loss_kernel_choice.h) picks among.
template <bool kFused>
struct LaunchPicker {
  template <Form F, DerivKind D, bool kJacobian>
  static Launcher rows() {
    return &launch_rows<F, D, kJacobian, kFused>;
  }
  static Launcher softmax_ce() { return &launch_softmax_ce<kFused>; }
};

}  // namespace

// Launches the row kernels; each row's error is left in scratch slot F. With `fused` (the
// activation, of the same kind as p.activation), a is z, overwritten with the activations.
static void launch_loss(CudaBackend& b, const LossParams& p, const float* a, const TargetView& t,
                        uint32_t rows, uint32_t cols, float* delta,
                        const ActivationParams* fused = nullptr) {
  NN_CHECK(t.sparse ? t.sp.row_ptr != nullptr && t.sp.rows >= rows : t.dense != nullptr,
           "loss: target view does not cover the batch");
  const Form form = form_of(p.function);
  const bool softmax = p.activation.kind == Activation::SoftMax;
  const math::DerivKind dk = math::deriv_kind(p.activation.kind);
  const Launcher launch = fused ? math::choose_loss_kernel<LaunchPicker<true>>(form, dk, softmax)
                                : math::choose_loss_kernel<LaunchPicker<false>>(form, dk, softmax);
  NN_CHECK(launch != nullptr, "loss: no kernel for this error function and activation");

  LossArgs g;
  g.o = math::loss_row_consts(p, t);
  g.normalise = math::normalised_targets(form, softmax, p.raw_softmax_targets);
  g.weights = t.sparse && t.sp.row_weight ? t.sp.row_weight : t.row_weight;
  g.a = a;
  if (fused) {
    g.z = const_cast<float*>(a);  // activate_loss_accumulate's z_to_a, writable
    g.act = fused->kind;
    g.act_c = math::act_consts(*fused);
  }
  g.delta = delta;
  g.cols = cols;
  g.stride = p.row_stride ? p.row_stride : cols;
  NN_CHECK(g.stride >= cols, "loss: row_stride below the columns");
  g.flag = b.error_flag();
  if (t.sparse) {
    // Only the first `rows` rows are targets of this batch.
    SparseView sp = t.sp;
    sp.rows = rows;
    if (t.sp.rows != rows) sp.nnz = 0;  // t.sp.nnz counts more rows: read row_ptr[rows]
    const uint64_t nnz = b.nnz_of(sp);
    g.row_ptr = sp.row_ptr;
    g.value = sp.value;
    if (nnz > 0 && sp.rows_sorted && b.presorted_targets()) {
      // The host found every row ascending: entry order is (row, index) order, no sort.
      g.sorted_index = sp.index;
      g.sorted_entry = nullptr;
    } else if (nnz > 0) {
      const uint32_t* row_of_sorted = nullptr;
      g.sorted_entry =
          cuda::sort_entries(b, sp, nnz, /*by_row=*/true, &g.sorted_index, &row_of_sorted);
    }
    b.arm_data_error("loss: sparse targets of batch row ",
                     " is outside the output layer's " + std::to_string(cols) + " units");
  } else {
    g.dense_t = t.dense;
  }
  g.row_error =
      static_cast<double*>(b.scratch(CudaBackend::kSlotF, (size_t(rows) + 1) * sizeof(double)));
  launch(g, rows, b.stream());
}

double CudaBackend::loss(const LossParams& p, const float* a, const TargetView& t, uint32_t rows,
                         uint32_t cols) {
  const cuda::DeviceGuard guard(device_);
  return loss_and_delta(p, a, t, rows, cols, nullptr);
}

void CudaBackend::output_delta(const LossParams& p, const float* a, const TargetView& t,
                               uint32_t rows, uint32_t cols, float* delta) {
  const cuda::DeviceGuard guard(device_);
  if (rows == 0 || cols == 0) return;
  launch_loss(*this, p, a, t, rows, cols, delta);
  // With the sync-free path no synchronisation inside a training step: the training loop
  // refuses a bad sparse target index on the host before uploading it
  // (TargetBuffer::load_sparse); the kernel's error flag stays armed for other callers and is
  // reported at the stream's next synchronisation. Without it (the default until a GPU run
  // passes it) a bad index is a data error the caller sees now, as on the CPU.
  if (t.sparse && !sync_free_loss_) synchronize();
}

double CudaBackend::loss_and_delta(const LossParams& p, const float* a, const TargetView& t,
                                   uint32_t rows, uint32_t cols, float* delta) {
  const cuda::DeviceGuard guard(device_);
  if (rows == 0 || cols == 0) return 0.0;
  launch_loss(*this, p, a, t, rows, cols, delta);
  auto* rows_error = static_cast<double*>(scratch(kSlotF, (size_t(rows) + 1) * sizeof(double)));
  sum_doubles(rows_error, rows, rows_error + rows);
  return *read_back(rows_error + rows, 1);
}

void CudaBackend::loss_accumulate(const LossParams& p, const float* a, const TargetView& t,
                                  uint32_t rows, uint32_t cols, float* delta, double* sum) {
  const cuda::DeviceGuard guard(device_);
  if (rows == 0 || cols == 0) return;
  launch_loss(*this, p, a, t, rows, cols, delta);
  // No wait here: a bad sparse target index is thrown as DataError by the next read of the sums
  // (or any call that waits for the stream).
  auto* rows_error = static_cast<double*>(scratch(kSlotF, (size_t(rows) + 1) * sizeof(double)));
  add_sum_doubles(rows_error, rows, 1.0, sum);
}

void CudaBackend::activate_loss_accumulate(const ActivationParams& act, const LossParams& p,
                                           float* z_to_a, const TargetView& t, uint32_t rows,
                                           uint32_t cols, float* delta, double* sum) {
  const cuda::DeviceGuard guard(device_);
  // Linear has nothing to fuse (activate() does nothing); MaxOut is refused by activate(); an
  // activation that is not the loss's own kind gets the composition, which is what it means.
  if (act.kind == Activation::Linear || act.kind == Activation::MaxOut ||
      act.kind != p.activation.kind) {
    Backend::activate_loss_accumulate(act, p, z_to_a, t, rows, cols, delta, sum);
    return;
  }
  if (rows == 0 || cols == 0) return;
  launch_loss(*this, p, z_to_a, t, rows, cols, delta, &act);
  // No wait, as loss_accumulate.
  auto* rows_error = static_cast<double*>(scratch(kSlotF, (size_t(rows) + 1) * sizeof(double)));
  add_sum_doubles(rows_error, rows, 1.0, sum);
}

}  // namespace nn
