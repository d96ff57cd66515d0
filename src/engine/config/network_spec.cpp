// Equality of network specs, field by field (used by round-trip checks and by callers that compare
// a network file's description with a JSON one).
#include "config/network_spec.h"

#include <tuple>

namespace nn {

const char* to_string(ParallelMode m) {
  switch (m) {
    case ParallelMode::Data:
      return "Data";
    case ParallelMode::Model:
      return "Model";
    case ParallelMode::Auto:
      break;
  }
  return "Auto";
}

bool operator==(const SharedWeightSpec& a, const SharedWeightSpec& b) {
  return std::tie(a.source_input_layer, a.source_output_layer, a.input_layer, a.transposed) ==
         std::tie(b.source_input_layer, b.source_output_layer, b.input_layer, b.transposed);
}

const char* to_string(SamplingDistribution d) {
  return d == SamplingDistribution::Popularity ? "Popularity" : "Uniform";
}

bool operator==(const SamplingSpec& a, const SamplingSpec& b) {
  return a.negatives == b.negatives && a.distribution == b.distribution;
}

bool operator==(const LayerSpec& a, const LayerSpec& b) {
  const auto fields = [](const LayerSpec& l) {
    return std::tie(l.name, l.kind, l.type, l.pooling, l.dataset, l.n_auto, l.n, l.dimensions,
                    l.sources, l.skips, l.sparse, l.p_dropout, l.activation, l.weight_init,
                    l.weight_init_scale, l.bias_init, l.weight_norm, l.delta_norm, l.kernel,
                    l.kernel_dimensions, l.kernel_stride, l.batch_normalization,
                    l.sparseness_penalty_p, l.sparseness_penalty_beta, l.relu_slope, l.elu_alpha,
                    l.selu_lambda, l.activation_max, l.maxout_k, l.shared_weights, l.parallel,
                    l.normalize, l.kl_beta, l.kl_anneal_steps, l.sampling);
  };
  return fields(a) == fields(b);
}

bool operator==(const NetworkSpec& a, const NetworkSpec& b) {
  const auto fields = [](const NetworkSpec& s) {
    return std::tie(s.version, s.name, s.kind, s.error_function, s.lrn_k, s.lrn_alpha, s.lrn_beta,
                    s.lrn_n, s.maxout_k, s.sparseness_penalty_p, s.sparseness_penalty_beta,
                    s.denoising_p, s.delta_boost_one, s.delta_boost_zero, s.smce_one_target,
                    s.smce_zero_target, s.smce_one_scale, s.smce_zero_scale, s.shuffle_indices,
                    s.relu_slope, s.elu_alpha, s.selu_lambda, s.activation_max, s.decay,
                    s.softmax_targets, s.precision, s.layers);
  };
  return fields(a) == fields(b);
}

}  // namespace nn
