// The multi-process seam. Training and prediction code talks to a Communicator, never to MPI or
// NCCL directly. LocalCommunicator is the single-process implementation; distributed/mpi/
// implements it over MPI on host buffers; a NCCL implementation (device buffers, a stream) slots in
// later.
//
// WHOSE MEMORY A BUFFER LIVES IN. Every pointer handed to a Communicator must live in the memory
// space that memory_space() reports:
//   - MemorySpace::Host   (LocalCommunicator, MpiCommunicator): ordinary host memory. The CPU
//     backend's arrays are host memory, so they are passed as they are. A device backend stages
//     through host buffers before calling a Host communicator.
//   - MemorySpace::Device (a NCCL communicator): memory of the device the communicator was made
//     for. Calls are then enqueued on the communicator's stream and return before they finish;
//     synchronize() (or PendingOp::wait()) orders them with the host.
// Model code therefore passes backend buffers (Backend arrays) and asks compatible_with() when
// the pairing could be wrong; it never branches on the implementation.
//
// ORDER AND THREADS. Collectives are matched by call order, as in MPI: every member of a
// communicator must issue the same collectives in the same order with the same counts (except
// where a call takes per-rank counts). One thread at a time calls the blocking operations of a
// communicator. Asynchronous all-reduces (start_all_reduce_raw) complete in the order they were
// started and may run while the caller keeps computing, but the buffer must not be touched until
// wait() returns; they do not interleave with blocking calls on the same communicator, so the
// caller waits for them before issuing a blocking collective.
//
// COUNTS are in elements of the buffer's type, not bytes (broadcast_bytes excepted). Reductions
// over integer types are exact; float sums follow the implementation's summation order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace nn {

enum class MemorySpace { Host, Device };
enum class CommType { Float32, Float64, Int32, Int64, Byte };
enum class ReduceOp { Sum, Max, Min };

size_t comm_type_size(CommType t);
const char* comm_type_name(CommType t);

template <typename T>
struct CommTypeOf;
template <>
struct CommTypeOf<float> {
  static constexpr CommType value = CommType::Float32;
};
template <>
struct CommTypeOf<double> {
  static constexpr CommType value = CommType::Float64;
};
template <>
struct CommTypeOf<int32_t> {
  static constexpr CommType value = CommType::Int32;
};
template <>
struct CommTypeOf<int64_t> {
  static constexpr CommType value = CommType::Int64;
};
template <>
struct CommTypeOf<char> {  // text and raw bytes: gathers and broadcasts only
  static constexpr CommType value = CommType::Byte;
};
template <>
struct CommTypeOf<uint8_t> {
  static constexpr CommType value = CommType::Byte;
};
// Unsigned counts travel as the signed type of the same width: sums are exact (two's
// complement), Max/Min are not for values at or above 2^31 / 2^63.
template <>
struct CommTypeOf<uint64_t> {
  static constexpr CommType value = CommType::Int64;
};
template <>
struct CommTypeOf<uint32_t> {
  static constexpr CommType value = CommType::Int32;
};

// An operation started asynchronously. wait() returns when the buffer may be used again and
// rethrows the operation's error, if any. Destroying an unfinished op waits for it.
class PendingOp {
 public:
  virtual ~PendingOp() = default;
  virtual void wait() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual MemorySpace memory_space() const = 0;
  // "local", "mpi", ...: for logs.
  virtual std::string name() const = 0;

  // --- the typed core every implementation provides -------------------------------------------
  // In place: data[0..n) becomes the reduction over all ranks of their data[0..n).
  virtual void all_reduce_raw(void* data, size_t n, CommType type, ReduceOp op) = 0;
  // recv (sum of counts) receives every rank's send buffer, rank order; rank r sends counts[r].
  virtual void all_gather_v_raw(const void* send, void* recv, const size_t* counts,
                                CommType type) = 0;
  // send holds sum(counts) elements on every rank; rank r receives in recv the element-wise sum
  // over ranks of the block [offset_r, offset_r + counts[r]).
  virtual void reduce_scatter_v_raw(const void* send, void* recv, const size_t* counts,
                                    CommType type, ReduceOp op) = 0;
  // As all_gather_v, but only `root` receives (recv may be null elsewhere).
  virtual void gather_v_raw(const void* send, void* recv, const size_t* counts, CommType type,
                            int root) = 0;
  virtual void broadcast_raw(void* data, size_t n, CommType type, int root) = 0;
  virtual void barrier() = 0;
  // Members with the same colour form a new communicator, ranked by (key, old rank). Collective
  // over this communicator. A negative colour returns null (the caller takes part in none).
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;
  // The ranks of this communicator that share this host (shared memory), as a communicator.
  virtual std::unique_ptr<Communicator> split_by_host() = 0;
  // Starts an in-place all-reduce that may run while the caller computes (see ORDER above). The
  // default runs it at once and returns a finished op.
  virtual std::unique_ptr<PendingOp> start_all_reduce_raw(void* data, size_t n, CommType type,
                                                          ReduceOp op);
  // Waits for operations enqueued on a device stream; host implementations return at once.
  virtual void synchronize() {}

  // True when buffers in `space` may be passed directly.
  bool compatible_with(MemorySpace space) const { return space == memory_space(); }

  // --- typed convenience wrappers --------------------------------------------------------------
  template <typename T>
  void all_reduce_sum(T* data, size_t n) {
    all_reduce_raw(data, n, CommTypeOf<T>::value, ReduceOp::Sum);
  }
  template <typename T>
  void all_reduce_max(T* data, size_t n) {
    all_reduce_raw(data, n, CommTypeOf<T>::value, ReduceOp::Max);
  }
  template <typename T>
  void all_reduce_min(T* data, size_t n) {
    all_reduce_raw(data, n, CommTypeOf<T>::value, ReduceOp::Min);
  }
  template <typename T>
  T sum(T value) {
    all_reduce_sum(&value, 1);
    return value;
  }
  template <typename T>
  T max(T value) {
    all_reduce_max(&value, 1);
    return value;
  }
  // Equal counts: recv holds size() * n elements.
  template <typename T>
  void all_gather(const T* send, size_t n, T* recv) {
    std::vector<size_t> counts(size_t(size()), n);
    all_gather_v_raw(send, recv, counts.data(), CommTypeOf<T>::value);
  }
  template <typename T>
  void all_gather_v(const T* send, T* recv, const std::vector<size_t>& counts) {
    check_counts(counts);
    all_gather_v_raw(send, recv, counts.data(), CommTypeOf<T>::value);
  }
  // Equal counts: send holds size() * n elements, recv n.
  template <typename T>
  void reduce_scatter_sum(const T* send, T* recv, size_t n) {
    std::vector<size_t> counts(size_t(size()), n);
    reduce_scatter_v_raw(send, recv, counts.data(), CommTypeOf<T>::value, ReduceOp::Sum);
  }
  template <typename T>
  void reduce_scatter_sum_v(const T* send, T* recv, const std::vector<size_t>& counts) {
    check_counts(counts);
    reduce_scatter_v_raw(send, recv, counts.data(), CommTypeOf<T>::value, ReduceOp::Sum);
  }
  template <typename T>
  void gather(const T* send, size_t n, T* recv, int root) {
    std::vector<size_t> counts(size_t(size()), n);
    gather_v_raw(send, recv, counts.data(), CommTypeOf<T>::value, root);
  }
  template <typename T>
  void gather_v(const T* send, T* recv, const std::vector<size_t>& counts, int root) {
    check_counts(counts);
    gather_v_raw(send, recv, counts.data(), CommTypeOf<T>::value, root);
  }
  template <typename T>
  void broadcast(T* data, size_t n, int root) {
    broadcast_raw(data, n, CommTypeOf<T>::value, root);
  }
  void broadcast_bytes(void* data, size_t bytes, int root) {
    broadcast_raw(data, bytes, CommType::Byte, root);
  }
  // Sends root's string to every rank.
  void broadcast_string(std::string& s, int root);
  template <typename T>
  std::unique_ptr<PendingOp> start_all_reduce_sum(T* data, size_t n) {
    return start_all_reduce_raw(data, n, CommTypeOf<T>::value, ReduceOp::Sum);
  }

 protected:
  void check_counts(const std::vector<size_t>& counts) const;
};

// One process: every collective is the identity (copies where send and receive differ).
class LocalCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  MemorySpace memory_space() const override { return MemorySpace::Host; }
  std::string name() const override { return "local"; }
  void all_reduce_raw(void*, size_t, CommType, ReduceOp) override {}
  void all_gather_v_raw(const void* send, void* recv, const size_t* counts, CommType type) override;
  void reduce_scatter_v_raw(const void* send, void* recv, const size_t* counts, CommType type,
                            ReduceOp op) override;
  void gather_v_raw(const void* send, void* recv, const size_t* counts, CommType type,
                    int root) override;
  void broadcast_raw(void*, size_t, CommType, int) override {}
  void barrier() override {}
  std::unique_ptr<Communicator> split(int color, int key) override;
  std::unique_ptr<Communicator> split_by_host() override;
};

}  // namespace nn
