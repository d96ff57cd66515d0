// CudaBackend: set-up, device memory, transfers, scratch buffers, data-error reporting and the
// factory. The kernel families live in files named as their CPU twins (cuda/dense.cu <->
// cpu/dense.cpp, ...; cuda_backend.h).
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_factory.h"
#include "backend/cuda/cuda_reduce.cuh"
#include "backend/cuda/cudnn_support.h"
#include "backend/cuda/dense_lt.h"
#include "backend/cuda/device_guard.h"
#include "backend/cuda/step_graph.h"
#include "backend/cuda_paths.h"
#include "backend/math/loss_sums.h"
#include "backend/math/reduce_math.h"
#include "core/allocation_context.h"
#include "core/error.h"
#include "core/memory_budget.h"

namespace nn {
namespace {

constexpr unsigned long long kNoError = ~0ull;

// sum_doubles in the order of backend/math/reduce_math.h. Pass 1 (only when sum_blocks(count) > 1):
// each block's total of its threads' strided sums, by the block's fixed tree.
__global__ void sum_doubles_partial_kernel(const double* values, size_t count, double* partial) {
  __shared__ double shared[32];
  const size_t stride = size_t(gridDim.x) * blockDim.x;
  double acc =
      math::strided_sum(values, count, blockIdx.x * size_t(blockDim.x) + threadIdx.x, stride);
  acc = cuda::block_sum(acc, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// The last pass: one block sums `count` doubles (the values, or pass 1's block totals); kAdd
// adds scale times the sum into *out instead of storing it (one thread, so no atomics: the same
// bits every run).
template <bool kAdd>
__global__ void sum_doubles_kernel(const double* values, size_t count, double scale, double* out) {
  __shared__ double shared[32];
  double acc = math::strided_sum(values, count, threadIdx.x, blockDim.x);
  acc = cuda::block_sum(acc, shared);
  if (threadIdx.x != 0) return;
  if constexpr (kAdd)
    math::add_scaled(out, scale, acc);
  else
    *out = acc;
}

static_assert(math::kSumThreads == kThreads, "sum_doubles runs blocks of kThreads");

__global__ void fold_loss_sums_kernel(double* sums, uint64_t batch) {
  math::fold_loss_sums(sums, batch);
}

}  // namespace

CudaBackend::CudaBackend(int device, bool tf32, const cuda::CudnnSettings& cudnn)
    : device_(device), tf32_(tf32), cudnn_settings_(cudnn) {
  // The guard makes device_ current while the stream, handles and buffers are created on it,
  // and gives the caller its device back.
  const cuda::DeviceGuard guard(device_);
  NN_CUDA_CALL(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  NN_CUBLAS_CALL(cublasCreate(&blas_));
  NN_CUBLAS_CALL(cublasSetStream(blas_, stream_));
  NN_CUBLAS_CALL(
      cublasSetMathMode(blas_, tf32_ ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  NN_CUDA_CALL(cudaMallocHost(reinterpret_cast<void**>(&pinned_), kPinnedDoubles * sizeof(double)));
  NN_CUDA_CALL(cudaMalloc(reinterpret_cast<void**>(&error_flag_), sizeof(unsigned long long)));
  NN_CUDA_CALL(
      cudaMalloc(reinterpret_cast<void**>(&sum_partial_), math::kSumMaxBlocks * sizeof(double)));
  NN_CUDA_CALL(cudaMemsetAsync(error_flag_, 0xff, sizeof(unsigned long long), stream_));
  for (Staging& st : staging_)
    NN_CUDA_CALL(cudaEventCreateWithFlags(&st.done, cudaEventDisableTiming));
  // Each path's switch, else the table's default (backend/cuda_paths.h: on once a GPU run has
  // passed it).
  bias_epilogue_ = cuda_path_on(CudaPath::BiasEpilogue);
  side_enabled_ = cuda_path_on(CudaPath::SideUploads);
  multi_tensor_ = cuda_path_on(CudaPath::MultiTensorOptimizer);
  sync_free_loss_ = cuda_path_on(CudaPath::SyncFreeSparseLoss);
  presorted_ = cuda_path_on(CudaPath::PresortedTargets);
  peers_ = cuda_path_on(CudaPath::PeerBackends);
  // Padded rows: 8 floats are 32 bytes, so the FP32 rows and their BF16 copies (16 bytes) are
  // aligned for cuBLAS's tensor-core kernels (backend.h, "padded rows").
  set_row_alignment(cuda_row_alignment_setting());
  graphs_enabled_ = cuda_path_on(CudaPath::Graphs);
  if (graphs_enabled_) {
    // cuBLAS would otherwise allocate a workspace of its own inside a capture (older releases
    // one per captured graph); the size is its default on Hopper.
    NN_CUDA_CALL(cudaMalloc(&blas_workspace_, kBlasWorkspaceBytes));
    NN_CUBLAS_CALL(cublasSetWorkspace(blas_, blas_workspace_, kBlasWorkspaceBytes));
  }
}

CudaBackend::~CudaBackend() {
  const cuda::DeviceGuard guard(device_, std::nothrow);
  // Destructors must not throw: statuses are ignored here (the process may be exiting after a
  // device fault, when every call fails).
  if (graphs_) graphs_->abandon();
  if (side_) cudaStreamSynchronize(side_);
  cudaStreamSynchronize(stream_);
  graphs_.reset();
  cudnn_.reset();
  lt_.reset();
  for (Buffer& b : scratch_)
    if (b.ptr) cudaFree(b.ptr);
  if (error_flag_) cudaFree(error_flag_);
  if (sum_partial_) cudaFree(sum_partial_);
  if (multi_table_) cudaFree(multi_table_);
  if (blas_workspace_) cudaFree(blas_workspace_);
  for (Staging& st : staging_) {
    if (st.host) cudaFreeHost(st.host);
    if (st.done) cudaEventDestroy(st.done);
  }
  for (cudaEvent_t e : marks_)
    if (e) cudaEventDestroy(e);
  if (side_done_) cudaEventDestroy(side_done_);
  if (side_) cudaStreamDestroy(side_);
  if (pinned_) cudaFreeHost(pinned_);
  if (blas_) cublasDestroy(blas_);
  if (stream_) cudaStreamDestroy(stream_);
  cudaGetLastError();
}

void* CudaBackend::allocate(size_t bytes) {
  const cuda::DeviceGuard guard(device_);
  const CaptureBreak pause(*this, "a device allocation");
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, bytes ? bytes : 1);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    const std::string& what = cuda::host_allocation();
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    cudaGetLastError();
    throw BackendError("out of CUDA device memory: cannot allocate " + format_bytes(bytes) +
                       (what.empty() ? std::string() : " for " + what) +
                       " on cuda:" + std::to_string(device_) + " (" + format_bytes(free_bytes) +
                       " free of " + format_bytes(total_bytes) + ")");
  }
  NN_CUDA_CALL(status);
  return p;
}

void CudaBackend::release(void* ptr) noexcept {
  const cuda::DeviceGuard guard(device_, std::nothrow);
  if (!ptr) return;
  // cudaFree waits for the device, so work still using ptr finishes first (and the part of a
  // step recorded so far runs before it).
  try {
    const CaptureBreak pause(*this, "freeing device memory");
    cudaFree(ptr);
  } catch (...) {
    // The step's recording failed; end_step_graph() reports it.
    cudaFree(ptr);
  }
  cudaGetLastError();
}

CudaBackend::Staging& CudaBackend::staging_slot(size_t bytes) {
  const cuda::DeviceGuard guard(device_);
  Staging& st = staging_[next_staging_];
  next_staging_ = (next_staging_ + 1) % kStagingSlots;
  // The copy that last read this slot must be done before the slot is rewritten or freed. With
  // kStagingSlots slots this waits only when the host is that many uploads ahead of the stream.
  if (st.pending) {
    NN_CUDA_CALL(cudaEventSynchronize(st.done));
    st.pending = false;
  }
  if (bytes > st.bytes) {
    if (st.host) NN_CUDA_CALL(cudaFreeHost(st.host));
    st.host = nullptr;
    st.bytes = 0;
    // 50% spare (capped at the chunk size), so slowly growing batches rarely reallocate.
    const size_t grown = std::min(kStagingChunk, bytes + bytes / 2);
    NN_CUDA_CALL(cudaMallocHost(&st.host, grown));
    st.bytes = grown;
  }
  return st;
}

void CudaBackend::upload(void* dst, const void* host_src, size_t bytes) {
  const cuda::DeviceGuard guard(device_);
  if (graphs_ && graphs_->capturing()) {
    // Recorded: the copy runs when the graph does, from the step's arena (step_graph.h).
    if (!bytes) return;
    void* host = graphs_->upload_buffer(bytes);
    if (!host) {
      {
        const CaptureBreak pause(*this, "more pinned memory for the step's uploads");
        graphs_->grow_upload_space(bytes);
      }
      host = graphs_->upload_buffer(bytes);
      NN_CHECK(host != nullptr, "upload: the step's upload space did not grow");
    }
    std::memcpy(host, host_src, bytes);
    NN_CUDA_CALL(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_));
    return;
  }
  // Through the pinned staging ring: the caller's memory is copied before this returns (so it
  // may be reused at once) and the device copy is queued on the stream (or beside it, between
  // begin_side_uploads and end_side_uploads) without waiting for it.
  const auto* from = static_cast<const unsigned char*>(host_src);
  auto* to = static_cast<unsigned char*>(dst);
  const cudaStream_t on = side_active_ ? side_ : stream_;
  while (bytes > 0) {
    const size_t chunk = std::min(bytes, kStagingChunk);
    Staging& st = staging_slot(chunk);
    std::memcpy(st.host, from, chunk);
    NN_CUDA_CALL(cudaMemcpyAsync(to, st.host, chunk, cudaMemcpyHostToDevice, on));
    NN_CUDA_CALL(cudaEventRecord(st.done, on));
    st.pending = true;
    from += chunk;
    to += chunk;
    bytes -= chunk;
  }
}

void CudaBackend::download(void* host_dst, const void* src, size_t bytes) {
  const cuda::DeviceGuard guard(device_);
  if (!bytes) return;
  const CaptureBreak pause(*this, "a read-back to the host");
  NN_CUDA_CALL(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  NN_CUDA_CALL(cudaStreamSynchronize(stream_));
  check_data_errors();
}

void CudaBackend::copy(void* dst, const void* src, size_t bytes) {
  const cuda::DeviceGuard guard(device_);
  if (!bytes || dst == src) return;
  NN_CUDA_CALL(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::synchronize() {
  const cuda::DeviceGuard guard(device_);
  const CaptureBreak pause(*this, "a wait for the stream");
  if (side_) NN_CUDA_CALL(cudaStreamSynchronize(side_));
  NN_CUDA_CALL(cudaStreamSynchronize(stream_));
  check_data_errors();
}

void* CudaBackend::scratch(Slot slot, size_t bytes) {
  const cuda::DeviceGuard guard(device_);
  Buffer& b = scratch_[slot];
  if (bytes > b.bytes) {
    const CaptureBreak pause(*this, "a scratch buffer that grew");
    if (b.ptr) {
      NN_CUDA_CALL(cudaStreamSynchronize(stream_));
      NN_CUDA_CALL(cudaFree(b.ptr));
      b.ptr = nullptr;
      b.bytes = 0;
    }
    const size_t grown = bytes + bytes / 2;
    b.ptr = allocate(grown);
    b.bytes = grown;
  }
  return b.ptr;
}

uint64_t CudaBackend::nnz_of(const SparseView& x) {
  const cuda::DeviceGuard guard(device_);
  if (x.nnz || x.rows == 0) return x.nnz;
  uint32_t last = 0;
  const CaptureBreak pause(*this, "a sparse view without its count of non-zeros");
  NN_CUDA_CALL(
      cudaMemcpyAsync(&last, x.row_ptr + x.rows, sizeof last, cudaMemcpyDeviceToHost, stream_));
  NN_CUDA_CALL(cudaStreamSynchronize(stream_));
  return last;
}

const double* CudaBackend::read_back(const double* device_values, size_t count) {
  const cuda::DeviceGuard guard(device_);
  NN_CHECK(count <= kPinnedDoubles, "read_back: too many values");
  const CaptureBreak pause(*this, "a value read back to the host");
  NN_CUDA_CALL(cudaMemcpyAsync(pinned_, device_values, count * sizeof(double),
                               cudaMemcpyDeviceToHost, stream_));
  NN_CUDA_CALL(cudaStreamSynchronize(stream_));
  check_data_errors();
  return pinned_;
}

const double* CudaBackend::sum_partials(const double* values, size_t* count) {
  const cuda::DeviceGuard guard(device_);
  const uint32_t blocks = math::sum_blocks(*count);
  if (blocks == 1) return values;
  sum_doubles_partial_kernel<<<blocks, kThreads, 0, stream_>>>(values, *count, sum_partial_);
  NN_CUDA_LAUNCHED("sum_doubles_partial_kernel");
  *count = blocks;
  return sum_partial_;
}

void CudaBackend::sum_doubles(const double* values, size_t count, double* out) {
  const cuda::DeviceGuard guard(device_);
  values = sum_partials(values, &count);
  sum_doubles_kernel<false><<<1, kThreads, 0, stream_>>>(values, count, 1.0, out);
  NN_CUDA_LAUNCHED("sum_doubles_kernel");
}

void CudaBackend::add_sum_doubles(const double* values, size_t count, double scale, double* out) {
  const cuda::DeviceGuard guard(device_);
  values = sum_partials(values, &count);
  sum_doubles_kernel<true><<<1, kThreads, 0, stream_>>>(values, count, scale, out);
  NN_CUDA_LAUNCHED("sum_doubles_kernel");
}

void CudaBackend::fold_loss_sums(double* sums, uint64_t batch) {
  const cuda::DeviceGuard guard(device_);
  fold_loss_sums_kernel<<<1, 1, 0, stream_>>>(sums, batch);
  NN_CUDA_LAUNCHED("fold_loss_sums_kernel");
}

void CudaBackend::arm_data_error(std::string prefix, std::string suffix) {
  const cuda::DeviceGuard guard(device_);
  error_prefix_ = std::move(prefix);
  error_suffix_ = std::move(suffix);
}

void CudaBackend::check_data_errors() {
  const cuda::DeviceGuard guard(device_);
  unsigned long long flag = kNoError;
  const CaptureBreak pause(*this, "a check for data errors");
  NN_CUDA_CALL(cudaMemcpyAsync(&flag, error_flag_, sizeof flag, cudaMemcpyDeviceToHost, stream_));
  NN_CUDA_CALL(cudaStreamSynchronize(stream_));
  if (flag == kNoError) return;
  NN_CUDA_CALL(cudaMemsetAsync(error_flag_, 0xff, sizeof flag, stream_));
  throw DataError(error_prefix_ + std::to_string(flag >> 32) + ": index " +
                  std::to_string(flag & 0xffffffffull) + error_suffix_);
}

std::unique_ptr<Backend> CudaBackend::make_peer() {
  const cuda::DeviceGuard guard(device_);
  // Without peers (the default until a GPU run passes them) evaluators share this backend and
  // take turns (api/evaluator.cpp).
  if (!peers_) return nullptr;
  // Everything this backend's stream was asked to write is in device memory before the peer's
  // stream, which knows nothing of this one, reads it.
  const CaptureBreak pause(*this, "making a peer backend");
  NN_CUDA_CALL(cudaStreamSynchronize(stream_));
  auto peer = std::make_unique<CudaBackend>(device_, tf32_, cudnn_settings_);
  peer->set_precision(precision_);
  peer->set_row_alignment(row_alignment());
  return peer;
}

// ---- step graphs (cuda/step_graph.h) ---------------------------------------------------------

CudaBackend::CaptureBreak::CaptureBreak(CudaBackend& b, const char* why) : b_(b) {
  if (!b_.graphs_ || !b_.graphs_->capturing()) return;
  b_.graphs_->end_segment(why);
  paused_ = true;
}

CudaBackend::CaptureBreak::~CaptureBreak() {
  if (!paused_) return;
  // A failure to resume leaves the rest of the step running call by call (still correct);
  // the step's end reports nothing more.
  try {
    b_.graphs_->begin_segment();
  } catch (...) {
  }
}

std::string CudaBackend::begin_step_graph() {
  const cuda::DeviceGuard guard(device_);
  if (!graphs_enabled_) return "off (set NN_CUDA_GRAPHS=1 to record the steps)";
  if (!graphs_) graphs_ = std::make_unique<cuda::StepGraphs>(stream_);
  graphs_->begin_step();
  return "";
}

void CudaBackend::end_step_graph() {
  const cuda::DeviceGuard guard(device_);
  if (graphs_) graphs_->end_step();
}

void CudaBackend::abandon_step_graph() noexcept {
  const cuda::DeviceGuard guard(device_, std::nothrow);
  if (graphs_) graphs_->abandon();
}

// ---- uploads beside the stream (backend.h) ---------------------------------------------------

uint64_t CudaBackend::stream_mark() {
  const cuda::DeviceGuard guard(device_);
  NN_CHECK(!(graphs_ && graphs_->capturing()), "stream_mark: not while a step is recorded");
  cudaEvent_t& e = marks_[next_mark_ % kMarks];
  if (!e) NN_CUDA_CALL(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  NN_CUDA_CALL(cudaEventRecord(e, stream_));
  return next_mark_++;
}

void CudaBackend::begin_side_uploads(uint64_t after) {
  const cuda::DeviceGuard guard(device_);
  NN_CHECK(!side_active_, "begin_side_uploads: already begun");
  NN_CHECK(!(graphs_ && graphs_->capturing()), "begin_side_uploads: not while a step is recorded");
  NN_CHECK(after < next_mark_, "begin_side_uploads: no such mark");
  if (!side_enabled_) return;  // the uploads stay on stream_, in order
  if (!side_) {
    NN_CUDA_CALL(cudaStreamCreateWithFlags(&side_, cudaStreamNonBlocking));
    NN_CUDA_CALL(cudaEventCreateWithFlags(&side_done_, cudaEventDisableTiming));
  }
  if (after) NN_CUDA_CALL(cudaStreamWaitEvent(side_, marks_[after % kMarks], 0));
  side_active_ = true;
}

void CudaBackend::end_side_uploads() {
  const cuda::DeviceGuard guard(device_);
  if (!side_active_) return;
  side_active_ = false;
  NN_CUDA_CALL(cudaEventRecord(side_done_, side_));
  NN_CUDA_CALL(cudaStreamWaitEvent(stream_, side_done_, 0));
}

std::vector<std::string> CudaBackend::path_notes() const {
  const cuda::DeviceGuard guard(device_);  // (touches nothing on the device; every entry has one)
  std::vector<std::string> notes{lt_note()};
  for (std::string& line : cuda_untried_paths_on()) notes.push_back(std::move(line));
  if (graphs_) {
    for (std::string& line : graphs_->notes()) notes.push_back(std::move(line));
  }
  return notes;
}

std::unique_ptr<Backend> make_cuda_backend(int device) {
  const char* tf32 = std::getenv("NN_CUDA_TF32");
  const bool use_tf32 = tf32 && std::strcmp(tf32, "1") == 0;
  // The cuDNN settings are read (and refused when malformed) here, before any work.
  return std::make_unique<CudaBackend>(device, use_tf32, cuda::cudnn_settings_from_env());
}

}  // namespace nn
