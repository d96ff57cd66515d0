// The one place where CUDA runtime, cuBLAS and cuDNN statuses become typed errors. Every call
// into those libraries goes through NN_CUDA_CALL / NN_CUBLAS_CALL / NN_CUDNN_CALL, and every
// kernel launch is followed by NN_CUDA_LAUNCHED, so a failure throws BackendError naming the call
// ("cuda/backend.cu:57: cudaMalloc(&p, bytes): out of memory").
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace nn::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                   int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);

[[noreturn]] void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file,
                                    int line);

inline void check(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) throw_cuda_error(status, call, file, line);
}
inline void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, call, file, line);
}

inline void check(cudnnStatus_t status, const char* call, const char* file, int line) {
  if (status != CUDNN_STATUS_SUCCESS) throw_cudnn_error(status, call, file, line);
}

}  // namespace nn::cuda

#define NN_CUDA_CALL(expr) ::nn::cuda::check((expr), #expr, __FILE__, __LINE__)
#define NN_CUBLAS_CALL(expr) ::nn::cuda::check((expr), #expr, __FILE__, __LINE__)
#define NN_CUDNN_CALL(expr) ::nn::cuda::check((expr), #expr, __FILE__, __LINE__)
// After a kernel launch: a bad configuration or an earlier asynchronous fault shows here.
#define NN_CUDA_LAUNCHED(kernel) ::nn::cuda::check(cudaGetLastError(), kernel, __FILE__, __LINE__)
