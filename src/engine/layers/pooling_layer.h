// Pooling layer (no weights): Max or Average pooling over each channel's plane, or cross-channel
// local response normalisation (LRN, with the network's LRN k, n, alpha, beta), as DSSTNE's
// ForwardPropagatePooling: the results of several sources are summed, skip activations added,
// no activation function. Dropout (pDropout, hidden layers, training only) is applied to the
// output like fully connected layers do; DSSTNE ignores pDropout on pooling layers.
// Other pooling functions (Maxout, DotProduct, Cosine, ...) are rejected when sizes are derived
// (model/layer_dimensions.h).
#pragma once

#include <vector>

#include "layers/layer.h"

namespace nn {

struct LrnSettings {
  float k = 2.0f, alpha = 1e-4f, beta = 0.75f;
  int n = 5;
};

class PoolingLayer : public Layer {
 public:
  PoolingLayer(const LayerSpec& spec, uint32_t index);

  // The network's LRN settings (used by LRN layers); call before build().
  void set_lrn(const LrnSettings& lrn) { lrn_settings_ = lrn; }

  void build(Backend& backend) override;
  void forward(const LayerContext& ctx) override;
  void backward(const LayerContext& ctx) override;

  bool is_lrn() const { return spec_.pooling == PoolingFunction::LRN; }
  const std::vector<PoolParams>& pool_params() const { return pools_; }  // per source
  const LrnParams& lrn_params() const { return lrn_; }

 private:
  LrnSettings lrn_settings_;
  std::vector<PoolParams> pools_;
  LrnParams lrn_;
};

}  // namespace nn
