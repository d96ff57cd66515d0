// Creation of the CUDA backend and the module's own device probes, callable from plain C++ (no
// CUDA headers): the module's entry (distributed/cuda/module_entry.cpp) hands them to the engine,
// which reaches them through backend/cuda_module.h (its probes in device_probe.h).
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace nn {

// The CUDA backend on device `device` (a valid index: the caller checked cuda_device_count()).
// TF32 tensor-core products are used for gemm when the environment sets NN_CUDA_TF32=1
// (FP32 otherwise); NN_CUDNN_ALGO and NN_CUDNN_WORKSPACE_MB set how convolution algorithms are
// chosen (cudnn_choice.h; ConfigError when malformed). Throws BackendError when the device
// cannot be set up.
std::unique_ptr<Backend> make_cuda_backend(int device);

namespace cuda {
// What device_probe.h's functions answer, computed here (device_probe.cu, cudnn_support.cpp).
int device_count() noexcept;
std::string device_summary();
bool smoke_test() noexcept;
bool cudnn_loadable(std::string* why) noexcept;
// The program's allocation context (core/allocation_context.h: the module's own copy of it is
// never set), for out-of-memory messages.
const std::string& host_allocation();
}  // namespace cuda

}  // namespace nn
