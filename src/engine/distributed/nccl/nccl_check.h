// The one place where NCCL statuses become typed errors: every NCCL call goes through
// NN_NCCL_CALL, so a failure throws BackendError naming the call, NCCL's description and its
// last-error text ("nccl_communicator.cpp:80: ncclAllReduce(...): unhandled cuda error (run with
// NCCL_DEBUG=INFO for details): ...").
#pragma once

#include <nccl.h>

namespace nn::nccl {

[[noreturn]] void throw_nccl_error(ncclResult_t status, const char* call, const char* file,
                                   int line);

inline void check(ncclResult_t status, const char* call, const char* file, int line) {
  if (status != ncclSuccess) throw_nccl_error(status, call, file, line);
}

}  // namespace nn::nccl

#define NN_NCCL_CALL(expr) ::nn::nccl::check((expr), #expr, __FILE__, __LINE__)
