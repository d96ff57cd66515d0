// Plain, validated description of a network, produced from DSSTNE's JSON layer definition
// language by parse_network_json() and consumed by the model builder. No JSON types leak out.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "config/enums.h"
#include "core/feature_names.h"

namespace nn {

struct SharedWeightSpec {
  std::string source_input_layer;
  std::string source_output_layer;
  std::string input_layer;
  bool transposed = false;
};

// How a layer runs under several processes (the layer key "Parallel"): the rule of
// model/parallel_plan.h decides (Auto), or the user does: every rank holds the whole layer and
// takes its rows of each minibatch (Data), or every rank holds a slice of its units (Model).
enum class ParallelMode { Auto, Data, Model };
const char* to_string(ParallelMode m);

// Sampled output training (the Output layer key "Sampling", docs/wide-outputs.md): each
// training minibatch computes only its rows' target columns plus `negatives` columns drawn for
// the whole minibatch, uniformly or in proportion to each item's count in the training targets.
// negatives == 0: off (the full layer). Prediction and validation always use the full layer.
enum class SamplingDistribution { Uniform, Popularity };
const char* to_string(SamplingDistribution d);
struct SamplingSpec {
  uint32_t negatives = 0;
  SamplingDistribution distribution = SamplingDistribution::Uniform;
  bool enabled() const { return negatives > 0; }
};
bool operator==(const SamplingSpec& a, const SamplingSpec& b);

struct LayerSpec {
  std::string name;
  LayerKind kind = LayerKind::Hidden;
  LayerType type = LayerType::FullyConnected;
  PoolingFunction pooling = PoolingFunction::None;
  std::string dataset;  // Input/Output: name of the bound dataset
  bool n_auto = false;  // "N": "auto": size taken from the dataset named by `dataset`
  std::array<uint32_t, 4> n{{1, 1, 1, 1}};  // Nx, Ny, Nz, Nw
  int dimensions = 1;
  std::vector<std::string> sources;  // empty in the JSON => previous layer (parser fills it in)
  std::vector<std::string> skips;
  bool sparse = false;
  float p_dropout = 0.0f;
  Activation activation = Activation::Sigmoid;
  WeightInit weight_init = WeightInit::Xavier;
  float weight_init_scale = 1.0f;
  float bias_init = 0.0f;
  float weight_norm = 0.0f;
  float delta_norm = 0.0f;
  std::array<uint32_t, 3> kernel{{1, 1, 1}};
  int kernel_dimensions = 1;
  std::array<uint32_t, 3> kernel_stride{{1, 1, 1}};
  bool batch_normalization = false;
  float sparseness_penalty_p = 0.0f;     // per-layer override (0 => network value)
  float sparseness_penalty_beta = 0.0f;  // per-layer override (0 => network value)
  float relu_slope = 0.0f;               // resolved: per-layer value or network default
  float elu_alpha = 0.0f;                // resolved
  float selu_lambda = 0.0f;              // resolved
  float activation_max = 0.0f;           // resolved: the bound of ReluMax and LinearMax
  int maxout_k = 2;  // resolved: the network's Maxout.k (pieces per MaxOut unit)
  std::vector<SharedWeightSpec> shared_weights;
  ParallelMode parallel = ParallelMode::Auto;
  // Ours. Input layers: what each example's row is divided by before the network sees it
  // (the key "Normalize").
  RowNormalization normalize = RowNormalization::None;
  // Ours. Variational layers (the key "KL"): the weight of the KL divergence term,
  // beta = kl_beta * min(1, updates done / kl_anneal_steps), or kl_beta throughout when
  // kl_anneal_steps is 0.
  float kl_beta = 1.0f;
  uint64_t kl_anneal_steps = 0;
  // Ours. Output layers: sampled output training (the key "Sampling").
  SamplingSpec sampling;
  // Ours. Input and Output layers: the names of their units' features (items), taken from the
  // dataset bound to them when it has them and written into the network file
  // (layer<i>_nn_features), so that the network knows its items. Null: not known.
  FeatureNames features;

  // N0 x N1 x N2 x N3; UINT64_MAX when the product does not fit 64 bits.
  uint64_t units() const {
    uint64_t a = uint64_t(n[0]) * n[1], b = uint64_t(n[2]) * n[3], r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
  }
};

struct NetworkSpec {
  std::string source;  // file the spec came from (for messages); may be empty
  float version = 0.9f;
  std::string name;
  NetworkKind kind = NetworkKind::FeedForward;
  ErrorFunction error_function = ErrorFunction::CrossEntropy;
  // LRN (cuDNN-style local response normalisation)
  float lrn_k = 2.0f, lrn_alpha = 1e-4f, lrn_beta = 0.75f;
  int lrn_n = 5;
  int maxout_k = 2;
  float sparseness_penalty_p = 0.0f, sparseness_penalty_beta = 0.0f;
  float denoising_p = 0.0f;
  float delta_boost_one = 1.0f, delta_boost_zero = 1.0f;
  float smce_one_target = 0.9f, smce_zero_target = 0.1f;
  float smce_one_scale = 1.0f, smce_zero_scale = 1.0f;
  bool shuffle_indices = true;
  // "Precision" (ours): the dense products' arithmetic; unset = FP32 unless the CDL or a tool's
  // --precision says otherwise. Read from the JSON only: network files do not store it.
  std::optional<Precision> precision;
  float relu_slope = 0.01f;  // deviation from DSSTNE's 1.0 (identity); see docs
  float elu_alpha = 1.0f;
  float selu_lambda = 1.050701f;
  float activation_max = 1.0f;  // ours: default bound of ReluMax / LinearMax
  float decay = 0.0f;
  SoftMaxTargets softmax_targets = SoftMaxTargets::Normalized;  // ours
  std::vector<LayerSpec> layers;

  const LayerSpec* find_layer(const std::string& layer_name) const {
    for (const auto& l : layers)
      if (l.name == layer_name) return &l;
    return nullptr;
  }
};

// Field-by-field equality (floats compared exactly), e.g. for checking that
// parse_network_json(network_spec_to_json(s)) == s. NetworkSpec's `source` is not compared: it
// says where a spec came from, not what it describes.
bool operator==(const SharedWeightSpec& a, const SharedWeightSpec& b);
bool operator==(const LayerSpec& a, const LayerSpec& b);
bool operator==(const NetworkSpec& a, const NetworkSpec& b);
inline bool operator!=(const SharedWeightSpec& a, const SharedWeightSpec& b) {
  return !(a == b);
}
inline bool operator!=(const LayerSpec& a, const LayerSpec& b) {
  return !(a == b);
}
inline bool operator!=(const NetworkSpec& a, const NetworkSpec& b) {
  return !(a == b);
}

}  // namespace nn
