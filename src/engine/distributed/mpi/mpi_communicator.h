// The Communicator over MPI, on host buffers. Owns a duplicate of the MPI communicator it is
// made from (so its traffic never matches anybody else's), errors are returned as BackendError
// rather than killing the process, and asynchronous all-reduces run on a second duplicate from
// a communication thread when MPI grants MPI_THREAD_MULTIPLE.
#pragma once

#include <mpi.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "distributed/communicator.h"

namespace nn {

class MpiCommunicator : public Communicator {
 public:
  // Duplicates `comm`; with `adopt`, takes ownership of `comm` itself instead (from a split).
  explicit MpiCommunicator(MPI_Comm comm, bool adopt = false);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MemorySpace memory_space() const override { return MemorySpace::Host; }
  std::string name() const override { return "mpi"; }

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

  MPI_Comm handle() const { return comm_; }

 private:
  struct Task;
  void worker_loop();
  void stop_worker();

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm async_comm_ = MPI_COMM_NULL;  // the communication thread's duplicate
  int rank_ = 0, size_ = 1;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Task>> queue_;
  std::thread worker_;
  bool stopping_ = false;
};

}  // namespace nn
