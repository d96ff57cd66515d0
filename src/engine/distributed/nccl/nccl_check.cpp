// NCCL status -> BackendError (nccl_check.h).
#include "distributed/nccl/nccl_check.h"

#include <cstring>
#include <string>

#include "core/error.h"

namespace nn::nccl {

void throw_nccl_error(ncclResult_t status, const char* call, const char* file, int line) {
  const char* base = std::strrchr(file, '/');
  std::string message = std::string(base ? base + 1 : file) + ":" + std::to_string(line) + ": " +
                        call + ": " + ncclGetErrorString(status);
  // NCCL keeps a more specific description of the last failure of this thread.
  const char* last = ncclGetLastError(nullptr);
  if (last && *last) message += std::string(" (") + last + ")";
  throw BackendError(message);
}

}  // namespace nn::nccl
