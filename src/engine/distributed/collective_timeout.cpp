// collective_timeout_seconds and rank_silence_timeout_seconds (distributed/process.h) in a file of
// their own: the CUDA module's NCCL communicator calls the first and must not link the process
// set-up around it (which reaches MPI).
#include <cstdlib>

#include "distributed/process.h"

namespace nn {

namespace {

double seconds_from_environment(const char* name, double fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const double s = std::strtod(v, &end);
  return end != v && s >= 0 ? s : fallback;
}

}  // namespace

double collective_timeout_seconds() {
  return seconds_from_environment("NN_MPI_TIMEOUT", 300.0);
}

double rank_silence_timeout_seconds() {
  return seconds_from_environment("NN_MPI_RANK_TIMEOUT", 60.0);
}

}  // namespace nn
