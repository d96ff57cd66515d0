// How the CUDA backend chooses cuDNN's convolution algorithms: the settings, the workspace budget
// and the choice among cuDNN's ranked candidates. Plain host logic without cuDNN types (the
// candidates are converted from cuDNN's perf results in cudnn_support.cpp), so that
// tests/unit/backend/cudnn_host_test.cpp checks it on fake results without a GPU.
//
// Settings (environment, read when the backend is made; docs/cuda-backend.md):
//   NN_CUDNN_ALGO=deterministic  (default) only algorithms cuDNN reports as deterministic: the
//                                backend's promise of identical bits run to run holds for
//                                convolutions too (the non-deterministic backward data and
//                                filter algorithms add with atomics in a varying order); and no
//                                FFT or Winograd algorithm: they compute in a transformed domain
//                                whose rounding errors reach 1e-4 to 1e-3 relative (seen on an
//                                H100: a 5x5 filter gradient 4e-4 off), where the direct and
//                                GEMM algorithms stay within FP32 rounding of the CPU backend;
//   NN_CUDNN_ALGO=fastest        cuDNN's heuristic ranking without those filters: the fastest
//                                algorithm that fits, deterministic or not, transformed or not;
//   NN_CUDNN_WORKSPACE_MB=N      the most workspace one algorithm may use, in MiB (default 1024;
//                                0 allows only algorithms that need none).
// Within the setting, an algorithm's workspace must also be allocatable from the device memory
// free when the plan is made (workspace_budget). When no candidate qualifies the plan throws
// BackendError naming the convolution's shape, the budget and why each candidate was refused.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace nn::cuda {

struct CudnnSettings {
  bool fastest = false;                         // NN_CUDNN_ALGO=fastest
  size_t workspace_limit = size_t(1024) << 20;  // NN_CUDNN_WORKSPACE_MB, in bytes
};

// The settings from the two variables' values (null or empty: the default). Throws ConfigError
// naming the variable for anything else.
CudnnSettings parse_cudnn_settings(const char* algo, const char* workspace_mb);
// parse_cudnn_settings of NN_CUDNN_ALGO and NN_CUDNN_WORKSPACE_MB.
CudnnSettings cudnn_settings_from_env();

// The most workspace bytes one algorithm may need: the setting, and no more than the workspace
// buffer (the backend's scratch slot, which keeps 50% spare: needing W allocates 1.5 W, after
// freeing the `held` bytes it has) can get from the `free` device memory, keeping a sixteenth of
// what is available for everything else. A workspace the buffer already holds always fits.
size_t workspace_budget(size_t limit, size_t free_bytes, size_t held_bytes);

// One algorithm as cuDNN ranks it (fastest first).
struct AlgoCandidate {
  int algo = 0;
  bool supported = true;  // cuDNN's status for it was success (and its workspace size known)
  size_t workspace = 0;   // bytes
  bool deterministic = false;
  bool tensor_ops = false;  // its math is tensor-op (TF32) math
  bool transform = false;   // an FFT or Winograd algorithm (reduced precision)
};

struct AlgoChoice {
  int index = -1;       // into the candidates; -1: none qualifies
  std::string refused;  // why each candidate before the chosen one (or every one) was refused
};

// The first candidate that is supported, fits `budget`, uses tensor-op math only when `tf32`,
// and is deterministic and not an FFT or Winograd one unless `fastest`.
AlgoChoice choose_algorithm(const std::vector<AlgoCandidate>& ranked, bool fastest, bool tf32,
                            size_t budget);

// The BackendError message when no candidate of a pass ("forward", "backward data", "backward
// filter") qualifies: the pass, the budget and its sources, the convolution's shape, why each
// candidate was refused, and what to change.
std::string no_algorithm_message(const char* pass, const CudnnSettings& settings, size_t budget,
                                 size_t free_bytes, const std::string& shape,
                                 const AlgoChoice& choice);

}  // namespace nn::cuda
