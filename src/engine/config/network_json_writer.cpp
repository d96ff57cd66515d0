// Writes a NetworkSpec back as DSSTNE-style JSON with canonical key names, so that
// parse_network_json(network_spec_to_json(s)) == s for every spec the parser can produce.
// Network-level values are always written; layer values only where they differ from the default.
#include "config/json_reader.h"
#include "config/parse.h"

namespace nn {
namespace {

using config_detail::Json;
using config_detail::shortest_double;

Json number(float value) {
  return Json(shortest_double(value));
}

bool is_hidden_or_output(const LayerSpec& l) {
  return l.kind == LayerKind::Hidden || l.kind == LayerKind::Output;
}

Json name_list(const std::vector<std::string>& names) {
  if (names.size() == 1) return Json(names[0]);
  Json out = Json::array();
  for (const auto& n : names) out.push_back(n);
  return out;
}

// The first `count` entries of a size array, or a bare integer when count is 1.
template <size_t N>
Json dims(const std::array<uint32_t, N>& values, int count) {
  if (count <= 1) return Json(values[0]);
  Json out = Json::array();
  for (int i = 0; i < count; ++i) out.push_back(values[i]);
  return out;
}

// KernelStride has no dimension count of its own: write as many entries as are not 1.
int stride_count(const std::array<uint32_t, 3>& s) {
  return s[2] != 1 ? 3 : s[1] != 1 ? 2 : 1;
}

Json layer_json(const LayerSpec& l, const NetworkSpec& spec) {
  Json j = Json::object();
  j["Name"] = l.name;
  j["Kind"] = to_string(l.kind);
  j["Type"] = to_string(l.type);
  j["N"] = l.n_auto ? Json("auto") : dims(l.n, l.dimensions);
  if (l.sparse) j["Sparse"] = true;
  if (l.kind == LayerKind::Input && l.normalize != RowNormalization::None)
    j["Normalize"] = to_string(l.normalize);
  if (l.p_dropout != 0) j["pDropout"] = number(l.p_dropout);
  if (!l.dataset.empty() && (l.kind == LayerKind::Input || l.kind == LayerKind::Output))
    j["DataSet"] = l.dataset;
  if (l.kind != LayerKind::Input) {
    j["Source"] = name_list(l.sources);
    if (l.type != LayerType::FullyConnected) {
      j["Kernel"] = dims(l.kernel, l.kernel_dimensions);
      j["KernelStride"] = dims(l.kernel_stride, stride_count(l.kernel_stride));
    }
  }
  if (is_hidden_or_output(l)) {
    if (l.type == LayerType::Pooling && l.pooling != PoolingFunction::None)
      j["Function"] = to_string(l.pooling);
    if (!l.skips.empty()) {
      Json skips = Json::array();
      for (const auto& s : l.skips) skips.push_back(s);
      j["Skip"] = skips;
    }
    j["Activation"] = to_string(l.activation);
    if (l.relu_slope != spec.relu_slope) j["RELUSlope"] = number(l.relu_slope);
    if (l.elu_alpha != spec.elu_alpha) j["ELUAlpha"] = number(l.elu_alpha);
    if (l.selu_lambda != spec.selu_lambda) j["SELULambda"] = number(l.selu_lambda);
    if (l.activation_max != spec.activation_max) j["ActivationMax"] = number(l.activation_max);
    if (l.weight_norm != 0) j["WeightNorm"] = number(l.weight_norm);
    if (l.delta_norm != 0) j["DeltaNorm"] = number(l.delta_norm);
    if (l.parallel != ParallelMode::Auto) j["Parallel"] = to_string(l.parallel);
    if (l.weight_init != WeightInit::Xavier || l.weight_init_scale != 1 || l.bias_init != 0) {
      j["WeightInit"] = {{"Scheme", to_string(l.weight_init)},
                         {"Scale", number(l.weight_init_scale)},
                         {"Bias", number(l.bias_init)}};
    }
    if (!l.shared_weights.empty()) {
      Json shared = Json::array();
      for (const auto& s : l.shared_weights) {
        shared.push_back({{"SourceInputLayer", s.source_input_layer},
                          {"SourceOutputLayer", s.source_output_layer},
                          {"InputLayer", s.input_layer},
                          {"Transposed", s.transposed}});
      }
      j["SharedWeights"] = shared;
    }
  }
  if (l.type == LayerType::Variational && (l.kl_beta != 1 || l.kl_anneal_steps != 0))
    j["KL"] = {{"Beta", number(l.kl_beta)}, {"AnnealSteps", l.kl_anneal_steps}};
  if (l.sampling.enabled())
    j["Sampling"] = {{"Negatives", l.sampling.negatives},
                     {"Distribution", to_string(l.sampling.distribution)}};
  if (l.kind == LayerKind::Hidden) {
    if (l.batch_normalization) j["BatchNormalization"] = true;
    if (l.sparseness_penalty_p != 0 || l.sparseness_penalty_beta != 0) {
      j["SparsenessPenalty"] = {{"p", number(l.sparseness_penalty_p)},
                                {"beta", number(l.sparseness_penalty_beta)}};
    }
  }
  return j;
}

}  // namespace

std::string network_spec_to_json(const NetworkSpec& spec) {
  Json j = Json::object();
  j["Version"] = number(spec.version);
  j["Name"] = spec.name;
  j["Kind"] = to_string(spec.kind);
  j["ErrorFunction"] = to_string(spec.error_function);
  j["SoftMaxTargets"] = to_string(spec.softmax_targets);
  j["ShuffleIndices"] = spec.shuffle_indices;
  if (spec.precision) j["Precision"] = to_string(*spec.precision);
  j["RELUSlope"] = number(spec.relu_slope);
  j["ELUAlpha"] = number(spec.elu_alpha);
  j["SELULambda"] = number(spec.selu_lambda);
  j["ActivationMax"] = number(spec.activation_max);
  j["Decay"] = number(spec.decay);
  j["LRN"] = {{"k", number(spec.lrn_k)},
              {"n", spec.lrn_n},
              {"alpha", number(spec.lrn_alpha)},
              {"beta", number(spec.lrn_beta)}};
  j["Maxout"] = {{"k", spec.maxout_k}};
  j["SparsenessPenalty"] = {{"p", number(spec.sparseness_penalty_p)},
                            {"beta", number(spec.sparseness_penalty_beta)}};
  j["Denoising"] = {{"p", number(spec.denoising_p)}};
  j["DeltaBoost"] = {{"one", number(spec.delta_boost_one)},
                     {"zero", number(spec.delta_boost_zero)}};
  j["ScaledMarginalCrossEntropy"] = {{"oneTarget", number(spec.smce_one_target)},
                                     {"zeroTarget", number(spec.smce_zero_target)},
                                     {"oneScale", number(spec.smce_one_scale)},
                                     {"zeroScale", number(spec.smce_zero_scale)}};
  Json layers = Json::array();
  for (const auto& l : spec.layers) layers.push_back(layer_json(l, spec));
  j["Layers"] = layers;
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace nn
