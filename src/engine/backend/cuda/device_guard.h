// Makes a CUDA backend's device current on the calling thread for the scope of one call.
//
// CUDA's current device is per host thread, and a stream, a cuBLAS or cuDNN handle and device
// memory all belong to the device they were created on: a kernel launched on another device's
// stream, or a cudaMalloc while another device is current, fails or puts memory on the wrong
// GPU. Setting the device once in the backend's constructor is not enough: another backend on
// another device (two models in one process), another library, or a call from a thread that
// never set a device (its current device is 0) changes what is current. So every CudaBackend
// entry point starts with a DeviceGuard on its device (tests/unit/backend/cuda_device_guard_test
// checks that every one does).
//
// Cheap: cudaGetDevice reads the thread's current context; cudaSetDevice is called only when
// the device differs, and the caller's device is restored on the way out only then, so a thread
// that uses one backend pays one cudaGetDevice per call.
#pragma once

#include <cuda_runtime.h>

#include <new>

#include "backend/cuda/cuda_check.h"

namespace nn::cuda {

class DeviceGuard {
 public:
  // Throws BackendError when the device cannot be made current.
  explicit DeviceGuard(int device) {
    NN_CUDA_CALL(cudaGetDevice(&previous_));
    if (previous_ != device) {
      NN_CUDA_CALL(cudaSetDevice(device));
      switched_ = true;
    }
  }
  // For destructors and noexcept operations: failures are ignored (and cleared).
  DeviceGuard(int device, std::nothrow_t) noexcept {
    if (cudaGetDevice(&previous_) != cudaSuccess) {
      cudaGetLastError();
      return;
    }
    if (previous_ != device) {
      switched_ = cudaSetDevice(device) == cudaSuccess;
      if (!switched_) cudaGetLastError();
    }
  }
  ~DeviceGuard() {
    if (switched_ && cudaSetDevice(previous_) != cudaSuccess) cudaGetLastError();
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool switched_ = false;
};

}  // namespace nn::cuda
