// Backend choice for a network (backend_choice.h).
#include "backend/backend_choice.h"

#include <memory>
#include <string>

#include "backend/cuda/device_probe.h"
#include "config/enum_names.h"
#include "core/error.h"

namespace nn {

std::string cudnn_feature(const NetworkSpec& spec) {
  for (const LayerSpec& l : spec.layers) {
    const std::string name = "'" + l.name + "'";
    if (l.type == LayerType::Convolutional) return "Convolutional layer " + name;
    if (l.type == LayerType::Pooling && l.pooling == PoolingFunction::LRN)
      return "LRN Pooling layer " + name;
    if (l.batch_normalization) return "BatchNormalization on layer " + name;
  }
  return "";
}

std::unique_ptr<Backend> make_backend_for(const NetworkSpec& spec, const std::string& name,
                                          int threads, int device, std::string* note) {
  if (note) note->clear();
  if (name == "auto" && device >= 0 && device < cuda_device_count()) {
    const std::string needs = cudnn_feature(spec);
    std::string why;
    if (!needs.empty() && !cudnn_loadable(&why)) {
      if (note)
        *note = "backend auto: " + needs + " needs cuDNN: " + why + "; using the CPU backend";
      return make_backend("cpu", threads, device);
    }
  }
  return make_backend(name, threads, device);
}

Precision resolve_precision(const std::string& requested, const NetworkSpec& spec) {
  if (requested.empty()) return spec.precision.value_or(Precision::FP32);
  if (auto p = enum_from_string<Precision>(requested)) return *p;
  throw ConfigError("precision: unknown \"" + requested + "\"; expected fp32 or bf16");
}

}  // namespace nn
