// Creation of the CUDA backend, callable from plain C++ (no CUDA headers): make_backend uses it.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace nn {

// The CUDA backend on device `device` (a valid index: the caller checked cuda_device_count()).
// TF32 tensor-core products are used for gemm when the environment sets NN_CUDA_TF32=1
// (FP32 otherwise); NN_CUDNN_ALGO and NN_CUDNN_WORKSPACE_MB set how convolution algorithms are
// chosen (cudnn_choice.h; ConfigError when malformed). Throws BackendError when the device
// cannot be set up.
std::unique_ptr<Backend> make_cuda_backend(int device);

}  // namespace nn
