// Pooling layer (no weights), as DSSTNE's ForwardPropagatePooling; the function is the layer's
// `Function`:
//  * Max, Average: pooling over each channel's plane with the layer's Kernel and KernelStride.
//  * LRN: cross-channel local response normalisation with the network's LRN k, n, alpha, beta.
//  * Maxout: cross-channel maxout with k = the network's Maxout.k: output channel c is the
//    largest of input channels c*k .. c*k+k-1 at each position (channels = the source's last
//    dimension, as for LRN; Kernel is ignored).
//  * DotProduct, Cosine: one score per source after the first, against source 0 (>= 2 dense
//    sources of equal size; output unit i-1 scores source i). Cosine clamps each norm to at
//    least Backend::kCosineEpsilon, so a zero vector scores 0.
// For Max, Average, LRN and Maxout the results of several sources are summed. Skip activations
// are added, and there is no activation function (Activation is ignored). Dropout (pDropout,
// hidden layers, training only) is applied to the output like fully connected layers do;
// DSSTNE ignores pDropout on pooling layers. Sizes come from config/layer_shapes.h;
// Stochastic, LCN and GlobalTemporal are rejected.
#pragma once

#include <vector>

#include "config/layer_shapes.h"
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
  void allocate(Backend& backend, uint32_t max_rows) override;
  void forward(const LayerContext& ctx) override;
  void backward(const LayerContext& ctx) override;

  bool is_lrn() const { return spec_.pooling == PoolingFunction::LRN; }
  bool is_maxout() const { return spec_.pooling == PoolingFunction::Maxout; }
  // DotProduct or Cosine: scores against source 0 instead of a sum over sources.
  bool is_similarity() const {
    return spec_.pooling == PoolingFunction::DotProduct || spec_.pooling == PoolingFunction::Cosine;
  }
  const std::vector<PoolParams>& pool_params() const { return pools_; }  // per source
  const LrnParams& lrn_params() const { return lrn_; }
  const std::vector<MaxoutShape>& maxout_shapes() const { return maxouts_; }  // per source

 private:
  void build_maxout(const std::string& at);
  void build_similarity(const std::string& at);

  LrnSettings lrn_settings_;
  std::vector<PoolParams> pools_;
  LrnParams lrn_;
  std::vector<MaxoutShape> maxouts_;
  // Maxout: the winning piece of every output, per source (the backward routes through it), and
  // scratch for a source's pooled output (sources after the first are added) or its gradient
  // (maxout_backward overwrites, while a source's delta sums its consumers).
  std::vector<DeviceArray<uint32_t>> winners_;
  DeviceArray<float> scratch_;
};

}  // namespace nn
