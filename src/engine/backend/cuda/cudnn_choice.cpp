// cuDNN algorithm settings, workspace budget and choice (cudnn_choice.h).
#include "backend/cuda/cudnn_choice.h"

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/memory_budget.h"

namespace nn::cuda {

CudnnSettings parse_cudnn_settings(const char* algo, const char* workspace_mb) {
  CudnnSettings s;
  if (algo && *algo) {
    if (std::strcmp(algo, "fastest") == 0)
      s.fastest = true;
    else if (std::strcmp(algo, "deterministic") != 0)
      throw ConfigError(std::string("NN_CUDNN_ALGO='") + algo +
                        "': expected 'deterministic' (the default) or 'fastest'");
  }
  if (workspace_mb && *workspace_mb) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long mb = std::strtoull(workspace_mb, &end, 10);
    const bool digits_only = *workspace_mb >= '0' && *workspace_mb <= '9' && end && *end == '\0';
    if (!digits_only || errno == ERANGE || mb > (SIZE_MAX >> 20))
      throw ConfigError(std::string("NN_CUDNN_WORKSPACE_MB='") + workspace_mb +
                        "': expected a whole number of MiB (default 1024)");
    s.workspace_limit = size_t(mb) << 20;
  }
  return s;
}

CudnnSettings cudnn_settings_from_env() {
  return parse_cudnn_settings(std::getenv("NN_CUDNN_ALGO"), std::getenv("NN_CUDNN_WORKSPACE_MB"));
}

size_t workspace_budget(size_t limit, size_t free_bytes, size_t held_bytes) {
  const size_t available =
      free_bytes + held_bytes < free_bytes ? SIZE_MAX : free_bytes + held_bytes;
  const size_t usable = available - available / 16;
  // scratch() allocates need + need / 2 when it grows; the largest need whose allocation fits.
  size_t allocatable = usable / 3 * 2;
  if (held_bytes > allocatable) allocatable = held_bytes;  // already there: no allocation
  return limit < allocatable ? limit : allocatable;
}

AlgoChoice choose_algorithm(const std::vector<AlgoCandidate>& ranked, bool fastest, bool tf32,
                            size_t budget) {
  AlgoChoice choice;
  for (size_t i = 0; i < ranked.size(); ++i) {
    const AlgoCandidate& c = ranked[i];
    const char* why = nullptr;
    std::string needs;
    if (!c.supported) {
      why = "not supported for this shape";
    } else if (c.tensor_ops && !tf32) {
      why = "tensor-op math (NN_CUDA_TF32 is off)";
    } else if (!fastest && !c.deterministic) {
      why = "not deterministic";
    } else if (!fastest && c.transform) {
      why = "FFT or Winograd arithmetic (reduced precision)";
    } else if (c.workspace > budget) {
      needs = "needs " + format_bytes(c.workspace) + " of workspace";
      why = needs.c_str();
    }
    if (!why) {
      choice.index = int(i);
      return choice;
    }
    choice.refused += (choice.refused.empty() ? "" : "; ") + std::string("algorithm ") +
                      std::to_string(c.algo) + ": " + why;
  }
  if (ranked.empty()) choice.refused = "cuDNN listed no algorithm";
  return choice;
}

std::string no_algorithm_message(const char* pass, const CudnnSettings& settings, size_t budget,
                                 size_t free_bytes, const std::string& shape,
                                 const AlgoChoice& choice) {
  return std::string("cuDNN: no ") + (settings.fastest ? "" : "deterministic direct or GEMM ") +
         pass + " convolution algorithm within the workspace budget of " + format_bytes(budget) +
         " (NN_CUDNN_WORKSPACE_MB: " + format_bytes(settings.workspace_limit) + "; " +
         format_bytes(free_bytes) + " of device memory free) for " + shape + " (" + choice.refused +
         "); " +
         (settings.fastest ? "raise NN_CUDNN_WORKSPACE_MB or use smaller batches"
                           : "raise NN_CUDNN_WORKSPACE_MB, use smaller batches, or set "
                             "NN_CUDNN_ALGO=fastest to allow non-deterministic, FFT and Winograd "
                             "algorithms");
}

}  // namespace nn::cuda
