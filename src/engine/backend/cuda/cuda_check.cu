// CUDA runtime, cuBLAS and cuDNN statuses turned into BackendError (see cuda_check.h).
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cudnn_support.h"
#include "core/error.h"

namespace nn::cuda {
namespace {

std::string where(const char* file, int line) {
  std::string f = file;
  const size_t slash = f.find_last_of('/');
  if (slash != std::string::npos) f = f.substr(slash + 1);
  return f + ":" + std::to_string(line) + ": ";
}

const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cuBLAS status";
}

}  // namespace

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  // Clear a non-sticky error so that the next call starts clean (a sticky one stays: the
  // context is lost and every later call fails with it too).
  cudaGetLastError();
  throw BackendError(where(file, line) + call + ": " + cudaGetErrorName(status) + " (" +
                     cudaGetErrorString(status) + ")");
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw BackendError(where(file, line) + call + ": " + cublas_status_name(status) + " (code " +
                     std::to_string(int(status)) + ")");
}

void throw_cudnn_error(cudnnStatus_t status, const char* call, const char* file, int line) {
  // cudnnGetErrorString names the status (CUDNN_STATUS_BAD_PARAM, ...). A status means cuDNN
  // was loaded, so cudnn_api() does not throw here.
  throw BackendError(where(file, line) + call + ": " + cudnn_api().cudnnGetErrorString(status) +
                     " (code " + std::to_string(int(status)) + ")");
}

}  // namespace nn::cuda
