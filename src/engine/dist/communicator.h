// The multi-process seam. Training code talks to a Communicator, never to MPI or NCCL directly.
// LocalCommunicator is the single-process implementation; an MPI implementation (host buffers)
// lives in dist/mpi/ and a NCCL one (device buffers) will follow with the CUDA backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace nn {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In-place sums across all processes. Buffers are backend pointers the implementation can use.
  virtual void all_reduce_sum(float* data, size_t n) = 0;
  virtual void all_reduce_sum(double* data, size_t n) = 0;
  virtual void broadcast(void* data, size_t bytes, int root) = 0;
  virtual void barrier() = 0;
};

class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void all_reduce_sum(float*, size_t) override {}
  void all_reduce_sum(double*, size_t) override {}
  void broadcast(void*, size_t, int) override {}
  void barrier() override {}
};

}  // namespace nn
