// The Communicator over NCCL, on device buffers (MemorySpace::Device): one process per GPU,
// bootstrapped over a host communicator (rank 0 makes the ncclUniqueId, the host communicator
// broadcasts it). Blocking collectives are enqueued on the CUDA backend's stream, so they are
// ordered with the backend's kernels without any host synchronisation and return before they
// finish; synchronize() waits for them. Asynchronous all-reduces run on a second stream of the
// communicator, after the work already enqueued on the backend's stream, so they overlap the
// backward kernels issued after them; PendingOp::wait() blocks until one is done.
//
// Where NCCL has no direct collective: all_gather with unequal counts is a group of broadcasts
// (one per rank), reduce_scatter with unequal counts a group of reduces, gather a group of
// ncclSend/ncclRecv; equal counts use ncclAllGather / ncclReduceScatter. These call sequences
// are plans (distributed/nccl_plan.h) tested on the host; run_plan() only maps them onto NCCL
// calls. split and split_by_host split the host communicator and bootstrap a new NCCL communicator
// over it; barrier waits for the stream and then uses the host communicator.
//
// Waits poll the stream's event and ncclCommGetAsyncError: an asynchronous NCCL error, or a wait
// longer than NN_MPI_TIMEOUT (collective_timeout_seconds(); a peer died or hung), aborts the
// NCCL communicator and throws BackendError instead of hanging.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <memory>
#include <string>

#include "distributed/communicator.h"
#include "distributed/nccl_plan.h"

namespace nn {

class NcclCommunicator : public Communicator {
 public:
  // Collective over `host` (which must outlive this object): joins a new NCCL communicator of
  // host.size() ranks on CUDA device `device`; blocking collectives go to `stream` (not owned:
  // the backend's).
  NcclCommunicator(Communicator& host, int device, cudaStream_t stream);
  // As above over a host communicator this object owns (from a split).
  NcclCommunicator(std::unique_ptr<Communicator> host, int device, cudaStream_t stream);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MemorySpace memory_space() const override { return MemorySpace::Device; }
  std::string name() const override { return "nccl"; }
  int device() const { return device_; }

  void all_reduce_raw(void* data, size_t n, CommType type, ReduceOp op) override;
  void all_gather_v_raw(const void* send, void* recv, const size_t* counts, CommType type) override;
  void reduce_scatter_v_raw(const void* send, void* recv, const size_t* counts, CommType type,
                            ReduceOp op) override;
  void gather_v_raw(const void* send, void* recv, const size_t* counts, CommType type,
                    int root) override;
  void broadcast_raw(void* data, size_t n, CommType type, int root) override;
  void barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;
  std::unique_ptr<Communicator> split_by_host() override;
  std::unique_ptr<PendingOp> start_all_reduce_raw(void* data, size_t n, CommType type,
                                                  ReduceOp op) override;
  void synchronize() override;

  // For PendingOp: waits for `event` (polling NCCL's asynchronous error and the timeout).
  void wait_event(cudaEvent_t event, const char* what);

 private:
  void init();
  void run_plan(const NcclPlan& plan, const void* send, void* recv, CommType type, ReduceOp op,
                const char* what);
  ncclComm_t live(const char* what) const;  // the handle, or BackendError after an abort
  void require_device(const void* p, const char* what) const;
  // Device scratch of `bytes` holding a copy of `src`, freed in stream order by the caller.
  void* stage(const void* src, size_t bytes);
  void release_stage(void* p);
  void abort_comm();

  Communicator* host_ = nullptr;
  std::unique_ptr<Communicator> owned_host_;
  int device_ = 0;
  int rank_ = 0, size_ = 1;
  cudaStream_t stream_ = nullptr;        // the backend's
  cudaStream_t async_stream_ = nullptr;  // ours: asynchronous all-reduces
  ncclComm_t comm_ = nullptr;
};

}  // namespace nn
