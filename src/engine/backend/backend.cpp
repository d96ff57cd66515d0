// make_backend: the table of backends selectable by name, plus the CUDA probe's fallback for
// builds without CUDA (the real probe is backend/cuda/device_probe.cu).
#include "backend/backend.h"

#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/device_probe.h"
#include "core/error.h"

#ifdef NN_HAVE_CUDA
#include "backend/cuda/cuda_factory.h"
#endif

namespace nn {

std::unique_ptr<Backend> make_backend(const std::string& name, int threads, int device) {
  if (threads < 0)
    throw ConfigError("backend '" + name + "': threads = " + std::to_string(threads) +
                      "; expected 0 (every core) or a positive count");
  if (device < 0)
    throw ConfigError("backend '" + name + "': device = " + std::to_string(device) +
                      "; expected a CUDA device index >= 0");
  if (name == "cpu") return std::make_unique<CpuBackend>(threads);
  if (name == "auto") {
    // CUDA when it is built in and the requested device exists; the CPU otherwise (a machine
    // without a driver reports 0 devices).
#ifdef NN_HAVE_CUDA
    if (device < cuda_device_count()) return make_cuda_backend(device);
#endif
    return std::make_unique<CpuBackend>(threads);
  }
  if (name == "cuda") {
#ifdef NN_HAVE_CUDA
    const int count = cuda_device_count();
    if (count == 0)
      throw ConfigError("backend 'cuda': no usable CUDA device (" + cuda_device_summary() +
                        "); use --backend cpu or auto");
    if (device >= count)
      throw ConfigError("backend 'cuda': device " + std::to_string(device) + " does not exist (" +
                        std::to_string(count) + " CUDA device" + (count == 1 ? "" : "s") +
                        ": indices 0.." + std::to_string(count - 1) + ")");
    return make_cuda_backend(device);
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
bool cudnn_loadable(std::string* why) noexcept {
  if (why) *why = "this build has no CUDA support";
  return false;
}
#endif

}  // namespace nn
