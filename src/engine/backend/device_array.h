// RAII array in a backend's memory (host memory for the CPU backend, device memory for CUDA).
// Move-only; grows by reallocation (contents are not preserved on growth), with 50% spare
// capacity once it has grown, so buffers sized by the data (a batch's non-zeros) stop
// reallocating after a few batches instead of whenever a batch has more than any before. The
// first allocation is exact (weights and other fixed-size arrays carry no spare). An array may also
// borrow another's memory (borrow()): it then never releases it, so one copy of a model's weights
// can serve several networks (api::Evaluator) whose activations are their own.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace nn {

template <typename T>
class DeviceArray {
 public:
  DeviceArray() = default;
  DeviceArray(Backend& backend, size_t n) { resize(backend, n); }
  ~DeviceArray() { reset(); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  DeviceArray(DeviceArray&& o) noexcept { swap(o); }
  DeviceArray& operator=(DeviceArray&& o) noexcept {
    if (this != &o) {
      reset();
      swap(o);
    }
    return *this;
  }

  // Ensures room for n elements; reallocates (dropping contents) only when capacity is short.
  // Growing memory of its own (not a borrowed view, same backend) reserves
  // max(n, 1.5 x the old capacity), so a sequence of growing sizes allocates O(log) times.
  void resize(Backend& backend, size_t n) {
    if (backend_ == &backend && n <= capacity_) {
      size_ = n;
      return;
    }
    const bool grow = backend_ == &backend && owned_ && capacity_ > 0;
    const size_t capacity = grow ? std::max(n, capacity_ + capacity_ / 2) : n;
    reset();
    backend_ = &backend;
    if (capacity) ptr_ = static_cast<T*>(backend.allocate(capacity * sizeof(T)));
    size_ = n;
    capacity_ = capacity;
  }
  void reset() noexcept {
    if (ptr_ && backend_ && owned_) backend_->release(ptr_);
    ptr_ = nullptr;
    size_ = capacity_ = 0;
    owned_ = true;
  }
  // Drops this array's memory and views `other`'s instead (same backend). `other` must outlive
  // this view; a later resize() beyond the view's size allocates memory of its own.
  void borrow(DeviceArray& other) {
    reset();
    backend_ = other.backend_;
    ptr_ = other.ptr_;
    size_ = capacity_ = other.size_;
    owned_ = false;
  }
  bool borrowed() const { return !owned_; }

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  // Its memory is the host's (a CPU backend's array): data() may be read in place.
  bool host_readable() const { return backend_ != nullptr && backend_->host_memory(); }
  size_t size() const { return size_; }
  // Elements that fit without reallocating (>= size()).
  size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }

  void upload(const T* host, size_t n) {
    if (n) backend_->upload(ptr_, host, n * sizeof(T));
  }
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
  // Resizes to host.size() and uploads.
  void assign(Backend& backend, const std::vector<T>& host) {
    resize(backend, host.size());
    upload(host);
  }
  std::vector<T> to_host() const {
    std::vector<T> out(size_);
    if (size_) backend_->download(out.data(), ptr_, size_ * sizeof(T));
    return out;
  }

 private:
  void swap(DeviceArray& o) noexcept {
    std::swap(backend_, o.backend_);
    std::swap(ptr_, o.ptr_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
    std::swap(owned_, o.owned_);
  }
  Backend* backend_ = nullptr;
  T* ptr_ = nullptr;
  size_t size_ = 0, capacity_ = 0;
  bool owned_ = true;
};

}  // namespace nn
