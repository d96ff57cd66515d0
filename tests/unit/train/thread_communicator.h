// An in-process Communicator for tests: N ranks are N threads of this process, and every
// collective is an exchange through shared memory (each rank posts its buffer, all meet at a
// barrier, each computes its result from everyone's buffers, all meet again). So data-parallel
// code runs with several ranks, uneven row splits included, without mpirun.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "distributed/communicator.h"

namespace nn::test {

// The ranks' shared state: a reusable barrier and one slot per rank.
class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), slots_(size_t(size)) {}
  int size() const { return size_; }
  void barrier() {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
  }
  const void*& slot(int rank) { return slots_[size_t(rank)]; }

 private:
  int size_, arrived_ = 0;
  uint64_t generation_ = 0;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<const void*> slots_;
};

// memcpy that allows null pointers for 0 bytes (memcpy itself does not: UBSan reports it, and
// empty vectors and ranks without rows hand over null data).
inline void copy_bytes(void* dst, const void* src, size_t n) {
  if (n > 0) std::memcpy(dst, src, n);
}

class ThreadCommunicator : public Communicator {
 public:
  ThreadCommunicator(std::shared_ptr<ThreadGroup> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  MemorySpace memory_space() const override { return MemorySpace::Host; }
  std::string name() const override { return "threads"; }

  void all_reduce_raw(void* data, size_t n, CommType type, ReduceOp op) override {
    const size_t bytes = n * comm_type_size(type);
    std::vector<char> result(bytes);
    exchange(data, [&] {
      copy_bytes(result.data(), group_->slot(0), bytes);
      for (int r = 1; r < size(); ++r) combine(result.data(), group_->slot(r), n, type, op);
    });
    copy_bytes(data, result.data(), bytes);  // every rank has read `data` by now
  }
  void all_gather_v_raw(const void* send, void* recv, const size_t* counts,
                        CommType type) override {
    const size_t unit = comm_type_size(type);
    exchange(send, [&] {
      char* out = static_cast<char*>(recv);
      for (int r = 0; r < size(); ++r) {
        copy_bytes(out, group_->slot(r), counts[r] * unit);
        out += counts[r] * unit;
      }
    });
  }
  void reduce_scatter_v_raw(const void* send, void* recv, const size_t* counts, CommType type,
                            ReduceOp op) override {
    const size_t unit = comm_type_size(type);
    size_t offset = 0;
    for (int r = 0; r < rank_; ++r) offset += counts[r];
    exchange(send, [&] {
      copy_bytes(recv, static_cast<const char*>(group_->slot(0)) + offset * unit,
                 counts[rank_] * unit);
      for (int r = 1; r < size(); ++r)
        combine(recv, static_cast<const char*>(group_->slot(r)) + offset * unit, counts[rank_],
                type, op);
    });
  }
  void gather_v_raw(const void* send, void* recv, const size_t* counts, CommType type,
                    int root) override {
    std::vector<char> all;
    size_t total = 0;
    for (int r = 0; r < size(); ++r) total += counts[r];
    all.resize(total * comm_type_size(type));
    all_gather_v_raw(send, all.data(), counts, type);
    if (rank_ == root) copy_bytes(recv, all.data(), all.size());
  }
  void broadcast_raw(void* data, size_t n, CommType type, int root) override {
    std::vector<char> copy(n * comm_type_size(type));
    exchange(data, [&] { copy_bytes(copy.data(), group_->slot(root), copy.size()); });
    copy_bytes(data, copy.data(), copy.size());
  }
  void barrier() override { group_->barrier(); }
  // Every rank shares one host; a split with one colour for all is the same group.
  std::unique_ptr<Communicator> split(int color, int key) override {
    if (color < 0) return nullptr;
    return std::make_unique<ThreadCommunicator>(group_, rank_);
  }
  std::unique_ptr<Communicator> split_by_host() override { return split(0, rank_); }

 private:
  // Posts `mine`, lets every rank run `read` over all posted buffers, and waits until all did.
  template <class Read>
  void exchange(const void* mine, Read read) {
    group_->slot(rank_) = mine;
    barrier();
    read();
    barrier();
  }
  template <class T>
  static void combine_as(void* acc, const void* in, size_t n, ReduceOp op) {
    T* a = static_cast<T*>(acc);
    const T* b = static_cast<const T*>(in);
    for (size_t i = 0; i < n; ++i)
      a[i] = op == ReduceOp::Sum   ? a[i] + b[i]
             : op == ReduceOp::Max ? std::max(a[i], b[i])
                                   : std::min(a[i], b[i]);
  }
  static void combine(void* acc, const void* in, size_t n, CommType type, ReduceOp op) {
    switch (type) {
      case CommType::Float32:
        return combine_as<float>(acc, in, n, op);
      case CommType::Float64:
        return combine_as<double>(acc, in, n, op);
      case CommType::Int32:
        return combine_as<int32_t>(acc, in, n, op);
      case CommType::Int64:
        return combine_as<int64_t>(acc, in, n, op);
      case CommType::Byte:
        return combine_as<uint8_t>(acc, in, n, op);
    }
  }

  std::shared_ptr<ThreadGroup> group_;
  int rank_;
};

}  // namespace nn::test
