// Shared layer plumbing: buffer allocation and activation parameters.
#include "layers/layer.h"

#include "core/error.h"

namespace nn {

ActivationParams activation_params(const LayerSpec& spec) {
  ActivationParams p;
  p.kind = spec.activation;
  p.slope = spec.relu_slope;
  p.alpha = spec.elu_alpha;
  p.lambda = spec.selu_lambda;
  return p;
}

Layer::Layer(const LayerSpec& spec, uint32_t index) : spec_(spec), index_(index) {}

void Layer::allocate(Backend& backend, uint32_t max_rows) {
  const size_t n = size_t(max_rows) * units();
  a_.resize(backend, n);
  if (needs_delta()) delta_.resize(backend, n);
  if (spec_.p_dropout > 0.0f && spec_.kind == LayerKind::Hidden) pre_dropout_.resize(backend, n);
}

const SparseView& Layer::sparse_output() const {
  throw InternalError("layer '" + name() + "' has no sparse output");
}

}  // namespace nn
