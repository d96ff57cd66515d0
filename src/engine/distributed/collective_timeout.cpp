// collective_timeout_seconds (distributed/process.h) in a file of its own: the CUDA module's NCCL
// communicator calls it and must not link the process set-up around it (which reaches MPI).
#include <cstdlib>

#include "distributed/process.h"

namespace nn {

double collective_timeout_seconds() {
  const char* v = std::getenv("NN_MPI_TIMEOUT");
  if (!v || !*v) return 600.0;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  return end != v && s >= 0 ? s : 600.0;
}

}  // namespace nn
