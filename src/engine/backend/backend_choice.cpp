// Backend choice for a network (backend_choice.h).
#include "backend/backend_choice.h"

#include <memory>
#include <string>

#include "backend/cuda/device_probe.h"

namespace nn {

std::string cuda_unsupported_feature(const NetworkSpec& spec) {
  for (const LayerSpec& l : spec.layers) {
    const std::string name = "'" + l.name + "'";
    if (l.type == LayerType::Convolutional) return "Convolutional layer " + name;
    if (l.type == LayerType::Pooling) return "Pooling layer " + name;
    if (l.batch_normalization) return "BatchNormalization on layer " + name;
    if (l.weight_norm > 0) return "WeightNorm on layer " + name;
    if (l.delta_norm > 0) return "DeltaNorm on layer " + name;
    if (!l.shared_weights.empty()) return "shared weights on layer " + name;
    const float beta =
        l.sparseness_penalty_beta > 0 ? l.sparseness_penalty_beta : spec.sparseness_penalty_beta;
    if (l.kind == LayerKind::Hidden && l.sparse && beta > 0)
      return "the sparseness penalty on layer " + name;
  }
  return "";
}

std::unique_ptr<Backend> make_backend_for(const NetworkSpec& spec, const std::string& name,
                                          int threads, int device, std::string* note) {
  if (note) note->clear();
#ifdef NN_HAVE_CUDA
  if (name == "auto" && device >= 0 && device < cuda_device_count()) {
    const std::string missing = cuda_unsupported_feature(spec);
    if (!missing.empty()) {
      if (note)
        *note =
            "backend auto: " + missing + " is not implemented on CUDA yet; using the CPU backend";
      return make_backend("cpu", threads, device);
    }
  }
#endif
  return make_backend(name, threads, device);
}

}  // namespace nn
