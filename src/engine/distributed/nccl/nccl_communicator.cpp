// NCCL implementation of the Communicator (device buffers; see nccl_communicator.h).
#include "distributed/nccl/nccl_communicator.h"

#include <chrono>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "core/error.h"
#include "distributed/bootstrap_id.h"
#include "distributed/nccl/nccl_check.h"
#include "distributed/nccl_plan.h"
#include "distributed/process.h"

namespace nn {
namespace {

ncclDataType_t nccl_type(CommType t) {
  switch (t) {
    case CommType::Float32:
      return ncclFloat32;
    case CommType::Float64:
      return ncclFloat64;
    case CommType::Int32:
      return ncclInt32;
    case CommType::Int64:
      return ncclInt64;
    case CommType::Byte:
      return ncclUint8;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op, CommType t) {
  if (t == CommType::Byte)
    throw InternalError("communicator: reductions over bytes are not defined");
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Min:
      return ncclMin;
  }
  return ncclSum;
}

bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  auto pa = static_cast<const char*>(a), pb = static_cast<const char*>(b);
  return a_bytes && b_bytes && pa < pb + b_bytes && pb < pa + a_bytes;
}

char* at(void* base, size_t elements, size_t element_size) {
  return static_cast<char*>(base) + elements * element_size;
}
const char* at(const void* base, size_t elements, size_t element_size) {
  return static_cast<const char*>(base) + elements * element_size;
}

// Makes `device` current for the scope (NCCL, the stream-ordered allocator and events act on the
// current device), restoring the caller's.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    NN_CUDA_CALL(cudaGetDevice(&previous_));
    if (previous_ != device) NN_CUDA_CALL(cudaSetDevice(device));
  }
  ~DeviceScope() {
    int now = previous_;
    if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }

 private:
  int previous_ = 0;
};

// ncclGroupStart ... ncclGroupEnd, ended even when a call inside throws (an open group would
// swallow every later call of this thread).
class Group {
 public:
  Group() { NN_NCCL_CALL(ncclGroupStart()); }
  void end() {
    open_ = false;
    NN_NCCL_CALL(ncclGroupEnd());
  }
  ~Group() {
    if (open_) ncclGroupEnd();
  }

 private:
  bool open_ = true;
};

struct Displacements {
  std::vector<size_t> at;
  size_t total = 0;
  Displacements(const size_t* counts, int ranks) : at(size_t(ranks)) {
    for (int r = 0; r < ranks; ++r) {
      at[size_t(r)] = total;
      total += counts[r];
    }
  }
};

class NcclPendingOp : public PendingOp {
 public:
  NcclPendingOp(NcclCommunicator& comm, cudaEvent_t done) : comm_(&comm), done_(done) {}
  ~NcclPendingOp() override {
    try {
      wait();
    } catch (...) {
    }
  }
  void wait() override {
    if (!done_) return;
    cudaEvent_t e = done_;
    done_ = nullptr;
    try {
      comm_->wait_event(e, "asynchronous all_reduce");
    } catch (...) {
      cudaEventDestroy(e);
      throw;
    }
    cudaEventDestroy(e);
  }

 private:
  NcclCommunicator* comm_;
  cudaEvent_t done_ = nullptr;
};

}  // namespace

NcclCommunicator::NcclCommunicator(Communicator& host, int device, cudaStream_t stream)
    : host_(&host), device_(device), stream_(stream) {
  init();
}

NcclCommunicator::NcclCommunicator(std::unique_ptr<Communicator> host, int device,
                                   cudaStream_t stream)
    : host_(host.get()), owned_host_(std::move(host)), device_(device), stream_(stream) {
  init();
}

void NcclCommunicator::init() {
  rank_ = host_->rank();
  size_ = host_->size();
  DeviceScope scope(device_);
  ncclUniqueId id;
  broadcast_unique_id(*host_, &id, sizeof id, [](void* p) {
    NN_NCCL_CALL(ncclGetUniqueId(static_cast<ncclUniqueId*>(p)));
  });
  NN_NCCL_CALL(ncclCommInitRank(&comm_, size_, id, rank_));
  try {
    NN_CUDA_CALL(cudaStreamCreateWithFlags(&async_stream_, cudaStreamNonBlocking));
  } catch (...) {
    ncclCommDestroy(comm_);
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) {
    // Work still enqueued must finish before the communicator goes; errors cannot be thrown
    // from here, so a failed wait aborts instead of destroying gracefully.
    bool clean = cudaStreamSynchronize(stream_) == cudaSuccess &&
                 (!async_stream_ || cudaStreamSynchronize(async_stream_) == cudaSuccess);
    ncclResult_t async = ncclSuccess;
    clean = clean && ncclCommGetAsyncError(comm_, &async) == ncclSuccess && async == ncclSuccess;
    if (clean)
      ncclCommDestroy(comm_);
    else
      ncclCommAbort(comm_);
  }
  if (async_stream_) cudaStreamDestroy(async_stream_);
}

ncclComm_t NcclCommunicator::live(const char* what) const {
  if (!comm_)
    throw BackendError(std::string("NCCL: ") + what +
                       ": the communicator was aborted after an earlier error");
  return comm_;
}

void NcclCommunicator::abort_comm() {
  if (!comm_) return;
  ncclCommAbort(comm_);
  comm_ = nullptr;
}

void NcclCommunicator::require_device(const void* p, const char* what) const {
  if (!p) return;
  cudaPointerAttributes a{};
  NN_CUDA_CALL(cudaPointerGetAttributes(&a, p));
  if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged)
    throw InternalError(std::string("communicator nccl: ") + what +
                        " was given host memory; a Device communicator takes device buffers "
                        "(stage through a host communicator instead)");
}

void* NcclCommunicator::stage(const void* src, size_t bytes) {
  void* p = nullptr;
  NN_CUDA_CALL(cudaMallocAsync(&p, bytes, stream_));
  NN_CUDA_CALL(cudaMemcpyAsync(p, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  return p;
}

void NcclCommunicator::release_stage(void* p) {
  if (p) NN_CUDA_CALL(cudaFreeAsync(p, stream_));
}

void NcclCommunicator::all_reduce_raw(void* data, size_t n, CommType type, ReduceOp op) {
  if (n == 0) return;
  DeviceScope scope(device_);
  require_device(data, "all_reduce");
  NN_NCCL_CALL(ncclAllReduce(data, data, n, nccl_type(type), nccl_op(op, type), live("all_reduce"),
                             stream_));
}

// Runs a plan of distributed/nccl_plan.h on the backend's stream over the caller's buffers.
void NcclCommunicator::run_plan(const NcclPlan& plan, const void* send, void* recv, CommType type,
                                ReduceOp op, const char* what) {
  const size_t es = comm_type_size(type);
  const ncclDataType_t t = nccl_type(type);
  const ncclComm_t c = live(what);
  auto source = [&](const NcclCall& k) {
    return k.from_recv ? at(static_cast<const void*>(recv), k.src, es) : at(send, k.src, es);
  };
  auto target = [&](const NcclCall& k) { return at(recv, k.dst, es); };
  std::unique_ptr<Group> group;
  if (plan.grouped) group = std::make_unique<Group>();
  for (const NcclCall& k : plan.calls) {
    switch (k.kind) {
      case NcclCall::AllGather:
        NN_NCCL_CALL(ncclAllGather(source(k), target(k), k.count, t, c, stream_));
        break;
      case NcclCall::ReduceScatter:
        NN_NCCL_CALL(
            ncclReduceScatter(source(k), target(k), k.count, t, nccl_op(op, type), c, stream_));
        break;
      case NcclCall::Broadcast:
        NN_NCCL_CALL(ncclBroadcast(source(k), target(k), k.count, t, k.peer, c, stream_));
        break;
      case NcclCall::Reduce: {
        // Only the root's receive buffer is written; the others pass their source (unused).
        void* dst = k.peer == rank_ ? static_cast<void*>(target(k)) : const_cast<char*>(source(k));
        NN_NCCL_CALL(ncclReduce(source(k), dst, k.count, t, nccl_op(op, type), k.peer, c, stream_));
        break;
      }
      case NcclCall::Send:
        NN_NCCL_CALL(ncclSend(source(k), k.count, t, k.peer, c, stream_));
        break;
      case NcclCall::Recv:
        NN_NCCL_CALL(ncclRecv(target(k), k.count, t, k.peer, c, stream_));
        break;
      case NcclCall::Copy:
        if (group) {  // copies follow the group
          group->end();
          group.reset();
        }
        if (source(k) != target(k))
          NN_CUDA_CALL(cudaMemcpyAsync(target(k), source(k), k.count * es, cudaMemcpyDeviceToDevice,
                                       stream_));
        break;
    }
  }
  if (group) group->end();
}

void NcclCommunicator::all_gather_v_raw(const void* send, void* recv, const size_t* counts,
                                        CommType type) {
  const size_t es = comm_type_size(type);
  const Displacements d(counts, size_);
  if (d.total == 0) return;
  DeviceScope scope(device_);
  require_device(recv, "all_gather");
  char* mine = at(recv, d.at[size_t(rank_)], es);
  const size_t my_bytes = counts[rank_] * es;
  if (my_bytes) require_device(send, "all_gather");
  // In place (send is this rank's block of recv) is fine for NCCL; any other overlap is staged.
  void* staged = nullptr;
  if (send != mine && overlaps(send, my_bytes, recv, d.total * es))
    send = staged = stage(send, my_bytes);
  run_plan(plan_all_gather(counts, size_, rank_), send, recv, type, ReduceOp::Sum, "all_gather");
  release_stage(staged);
}

void NcclCommunicator::reduce_scatter_v_raw(const void* send, void* recv, const size_t* counts,
                                            CommType type, ReduceOp op) {
  const size_t es = comm_type_size(type);
  const Displacements d(counts, size_);
  if (d.total == 0) return;
  DeviceScope scope(device_);
  require_device(send, "reduce_scatter");
  if (counts[rank_]) require_device(recv, "reduce_scatter");
  (void)nccl_op(op, type);  // refuses byte reductions before any rank starts a call
  void* staged = nullptr;
  if (overlaps(send, d.total * es, recv, counts[rank_] * es))
    send = staged = stage(send, d.total * es);
  run_plan(plan_reduce_scatter(counts, size_, rank_), send, recv, type, op, "reduce_scatter");
  release_stage(staged);
}

void NcclCommunicator::gather_v_raw(const void* send, void* recv, const size_t* counts,
                                    CommType type, int root) {
  if (root < 0 || root >= size_) throw InternalError("communicator: gather root out of range");
  const size_t es = comm_type_size(type);
  const Displacements d(counts, size_);
  if (d.total == 0) return;
  DeviceScope scope(device_);
  const size_t my_bytes = counts[rank_] * es;
  if (my_bytes) require_device(send, "gather");
  void* staged = nullptr;
  if (rank_ == root) {
    require_device(recv, "gather");
    // The receives may overwrite an overlapping send buffer before its copy: stage it.
    char* mine = at(recv, d.at[size_t(rank_)], es);
    if (send != mine && overlaps(send, my_bytes, recv, d.total * es))
      send = staged = stage(send, my_bytes);
  }
  run_plan(plan_gather(counts, size_, rank_, root), send, recv, type, ReduceOp::Sum, "gather");
  release_stage(staged);
}

void NcclCommunicator::broadcast_raw(void* data, size_t n, CommType type, int root) {
  if (root < 0 || root >= size_) throw InternalError("communicator: broadcast root out of range");
  if (n == 0) return;
  DeviceScope scope(device_);
  require_device(data, "broadcast");
  NN_NCCL_CALL(ncclBroadcast(data, data, n, nccl_type(type), root, live("broadcast"), stream_));
}

void NcclCommunicator::barrier() {
  synchronize();
  host_->barrier();
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  synchronize();
  auto host = host_->split(color, key);
  if (!host) return nullptr;
  return std::make_unique<NcclCommunicator>(std::move(host), device_, stream_);
}

std::unique_ptr<Communicator> NcclCommunicator::split_by_host() {
  synchronize();
  return std::make_unique<NcclCommunicator>(host_->split_by_host(), device_, stream_);
}

std::unique_ptr<PendingOp> NcclCommunicator::start_all_reduce_raw(void* data, size_t n,
                                                                  CommType type, ReduceOp op) {
  DeviceScope scope(device_);
  if (n) require_device(data, "asynchronous all_reduce");
  // The reduction must see what the backend's stream has written so far (the gradients), so
  // the second stream waits for that point; the backend goes on with later kernels meanwhile.
  cudaEvent_t ready = nullptr, done = nullptr;
  NN_CUDA_CALL(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  try {
    NN_CUDA_CALL(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    NN_CUDA_CALL(cudaEventRecord(ready, stream_));
    NN_CUDA_CALL(cudaStreamWaitEvent(async_stream_, ready, 0));
    if (n)
      NN_NCCL_CALL(ncclAllReduce(data, data, n, nccl_type(type), nccl_op(op, type),
                                 live("asynchronous all_reduce"), async_stream_));
    // The backend's stream does not wait for `done` (that would stall the backward kernels
    // issued after this call); the caller's wait() orders the sums with later work.
    NN_CUDA_CALL(cudaEventRecord(done, async_stream_));
  } catch (...) {
    cudaEventDestroy(ready);
    if (done) cudaEventDestroy(done);
    throw;
  }
  cudaEventDestroy(ready);  // released once the recorded work is done
  return std::make_unique<NcclPendingOp>(*this, done);
}

void NcclCommunicator::synchronize() {
  DeviceScope scope(device_);
  cudaEvent_t e = nullptr;
  NN_CUDA_CALL(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  try {
    NN_CUDA_CALL(cudaEventRecord(e, stream_));
    wait_event(e, "synchronize");
  } catch (...) {
    cudaEventDestroy(e);
    throw;
  }
  cudaEventDestroy(e);
}

void NcclCommunicator::wait_event(cudaEvent_t event, const char* what) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const double timeout = collective_timeout_seconds();
  for (int spins = 0;; ++spins) {
    const cudaError_t q = cudaEventQuery(event);
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) NN_CUDA_CALL(q);
    if (comm_) {
      ncclResult_t async = ncclSuccess;
      NN_NCCL_CALL(ncclCommGetAsyncError(comm_, &async));
      if (async != ncclSuccess && async != ncclInProgress) {
        const char* text = ncclGetLastError(comm_);
        const std::string last = text ? text : "";
        abort_comm();
        throw BackendError(std::string("NCCL: ") + what + ": " + ncclGetErrorString(async) +
                           (last.empty() ? "" : " (" + last + ")"));
      }
    }
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (timeout > 0 && waited > timeout) {
      abort_comm();
      throw BackendError(std::string("NCCL: ") + what + " waited " + std::to_string(int(waited)) +
                         " s for the other ranks (NN_MPI_TIMEOUT); "
                         "another rank has stopped or hung");
    }
    // Spin briefly (collectives of small buckets finish in microseconds), then sleep.
    if (spins < 1000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace nn
