// make_backend: the table of backends selectable by name, plus the CUDA probe's fallback for
// builds without CUDA (the real probe is backend/cuda/device_probe.cu).
#include "backend/backend.h"

#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/device_probe.h"
#include "core/error.h"

namespace nn {

std::unique_ptr<Backend> make_backend(const std::string& name, int threads) {
  if (threads < 0)
    throw ConfigError("backend '" + name + "': threads = " + std::to_string(threads) +
                      "; expected 0 (every core) or a positive count");
  // "auto" means cuda when a GPU is usable; until the CUDA backend exists it is the CPU.
  if (name == "cpu" || name == "auto") return std::make_unique<CpuBackend>(threads);
  if (name == "cuda") {
#ifdef NN_HAVE_CUDA
    throw ConfigError("backend 'cuda': not implemented yet; use --backend cpu");
#else
    throw ConfigError("backend 'cuda': this build has no CUDA support; use --backend cpu");
#endif
  }
  throw ConfigError("backend '" + name + "': unknown; expected one of cpu, cuda, auto");
}

#ifndef NN_HAVE_CUDA
int cuda_device_count() noexcept {
  return 0;
}
std::string cuda_device_summary() {
  return "no CUDA device: this build has no CUDA support";
}
bool cuda_smoke_test() noexcept {
  return false;
}
#endif

}  // namespace nn
