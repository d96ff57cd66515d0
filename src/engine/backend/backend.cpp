// make_backend: the table of backends selectable by name. CUDA comes from the module of
// backend/cuda_module.h, which also answers the device probes.
#include "backend/backend.h"

#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/device_probe.h"
#include "backend/cuda_module.h"
#include "core/error.h"

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
    // CUDA when its module loads and the requested device exists; the CPU otherwise (a machine
    // without a driver reports 0 devices).
    if (device < cuda_device_count()) return cuda_module()->make_backend(device);
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
    return cuda_module()->make_backend(device);
#else
    throw ConfigError("backend 'cuda': this build has no CUDA support; use --backend cpu");
#endif
  }
  throw ConfigError("backend '" + name + "': unknown; expected one of cpu, cuda, auto");
}

}  // namespace nn
