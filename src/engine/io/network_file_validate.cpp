// Consistency checks on a NetworkFile, run before writing (so that we never write a file we would
// refuse to read) and after reading (so that callers can rely on names, sizes and values).
// Messages name the attribute or variable as stored in the file.
#include <cmath>
#include <map>

#include "core/error.h"
#include "io/network_file_layout.h"

namespace nn {
namespace {

std::string quoted(const std::string& s) {
  return "'" + s + "'";
}

bool checked_product(std::initializer_list<uint64_t> factors, uint64_t& product) {
  product = 1;
  for (uint64_t f : factors)
    if (__builtin_mul_overflow(product, f, &product)) return false;
  return true;
}

class Validator {
 public:
  Validator(const NetworkFile& net, const std::string& file) : net_(net), file_(file) {}

  void run() {
    check_network();
    for (size_t i = 0; i < net_.spec.layers.size(); ++i) check_layer(i);
    for (size_t i = 0; i < net_.spec.layers.size(); ++i) check_layer_links(i);
    for (size_t i = 0; i < net_.weights.size(); ++i) check_weight(i);
    check_layer_arrays();
    check_training();
  }

 private:
  [[noreturn]] void fail_att(const std::string& name, const std::string& problem) const {
    throw DataError(file_ + ": attribute " + quoted(name) + " " + problem);
  }
  [[noreturn]] void fail_var(const std::string& name, const std::string& problem) const {
    throw DataError(file_ + ": variable " + quoted(name) + " " + problem);
  }

  void finite(const std::string& name, float v) const {
    if (!std::isfinite(v)) fail_att(name, "is " + std::to_string(v) + ", expected a finite number");
  }
  void code(const std::string& name, uint32_t v, uint32_t max) const {
    if (v > max) fail_att(name, "is " + std::to_string(v) + ", expected 0.." + std::to_string(max));
  }
  void at_least(const std::string& name, int64_t v, int64_t min) const {
    if (v < min)
      fail_att(name, "is " + std::to_string(v) + ", expected at least " + std::to_string(min));
  }
  void in_range(const std::string& name, int64_t v, int64_t min, int64_t max) const {
    if (v < min || v > max)
      fail_att(name, "is " + std::to_string(v) + ", expected " + std::to_string(min) + ".." +
                         std::to_string(max));
  }
  void finite_values(const std::string& var, FloatRun values) const {
    for (size_t k = 0; k < values.size; ++k)
      if (!std::isfinite(values.data[k]))
        fail_var(var, "element " + std::to_string(k) + " is " +
                          (std::isnan(values.data[k]) ? "NaN" : std::to_string(values.data[k])) +
                          ", expected finite values");
  }
  void size_is(const std::string& var, size_t actual, uint64_t expected,
               const std::string& why) const {
    if (actual != expected)
      fail_var(var, "has " + std::to_string(actual) + " values, expected " +
                        std::to_string(expected) + " (" + why + ")");
  }

  // Index of the layer called `name`, or -1.
  long layer_index(const std::string& name) const {
    auto it = index_.find(name);
    return it == index_.end() ? -1 : static_cast<long>(it->second);
  }
  const LayerSpec& existing_layer(const std::string& att, const std::string& name) const {
    const long li = layer_index(name);
    if (li < 0) fail_att(att, "names layer " + quoted(name) + ", which does not exist");
    return net_.spec.layers[li];
  }

  void check_network() const {
    const NetworkSpec& s = net_.spec;
    code("kind", static_cast<uint32_t>(s.kind), 1);
    code("errorFunction", static_cast<uint32_t>(s.error_function), 6);
    const std::pair<const char*, float> floats[] = {
        {"version", s.version},
        {"decay", s.decay},
        {"LRN_k", s.lrn_k},
        {"LRN_alpha", s.lrn_alpha},
        {"LRN_beta", s.lrn_beta},
        {"sparsenessPenalty_p", s.sparseness_penalty_p},
        {"sparsenessPenalty_beta", s.sparseness_penalty_beta},
        {"denoising_p", s.denoising_p},
        {"deltaBoost_one", s.delta_boost_one},
        {"deltaBoost_zero", s.delta_boost_zero},
        {"SMCE_oneScale", s.smce_one_scale},
        {"SMCE_zeroScale", s.smce_zero_scale},
        {"SMCE_oneTarget", s.smce_one_target},
        {"SMCE_zeroTarget", s.smce_zero_target},
        {"nn_RELUSlope", s.relu_slope},
        {"nn_ELUAlpha", s.elu_alpha},
        {"nn_SELULambda", s.selu_lambda},
        {"nn_ActivationMax", s.activation_max},
    };
    for (const auto& [name, value] : floats) finite(name, value);
  }

  void check_layer(size_t i) {
    const LayerSpec& l = net_.spec.layers[i];
    auto key = [i](const char* k) { return layer_key(i, k); };
    if (l.name.empty()) fail_att(key("name"), "is empty, expected a layer name");
    auto [it, added] = index_.emplace(l.name, i);
    if (!added)
      fail_att(key("name"), "repeats layer name " + quoted(l.name) + " (also " +
                                layer_key(it->second, "name") + ")");
    code(key("kind"), static_cast<uint32_t>(l.kind), 3);
    code(key("type"), static_cast<uint32_t>(l.type), 3);
    if (l.features) {
      const std::string problem = feature_names_problem(*l.features, l.units());
      if (!problem.empty()) fail_var(key("nn_features"), problem);
    }
    code(key("nn_normalize"), static_cast<uint32_t>(l.normalize), 1);
    if (l.normalize != RowNormalization::None && l.kind != LayerKind::Input)
      fail_att(key("nn_normalize"), "is set on a " + std::string(to_string(l.kind)) +
                                        " layer; only Input layers normalise their rows");
    if (l.type == LayerType::Variational) {
      if (l.kind != LayerKind::Hidden)
        fail_att(key("type"), "is 3 (Variational) on a " + std::string(to_string(l.kind)) +
                                  " layer; Variational layers are Hidden layers");
      finite(key("nn_klBeta"), l.kl_beta);
      if (l.kl_beta < 0)
        fail_att(key("nn_klBeta"), "is " + std::to_string(l.kl_beta) + ", expected >= 0");
    }
    code(key("poolingfunction"), static_cast<uint32_t>(l.pooling), 9);
    code(key("weightInit"), static_cast<uint32_t>(l.weight_init), 6);
    code(key("activation"), static_cast<uint32_t>(l.activation), 13);
    const char* n_keys[] = {"Nx", "Ny", "Nz", "Nw"};
    for (int d = 0; d < 4; ++d) at_least(key(n_keys[d]), l.n[d], 1);
    uint64_t units = 0;
    if (!checked_product({l.n[0], l.n[1], l.n[2], l.n[3]}, units))
      fail_att(key("Nx"), "and Ny, Nz, Nw multiply beyond 64 bits");
    in_range(key("dimensions"), l.dimensions, 1, 4);
    const char* kernel_keys[] = {"kernelX", "kernelY", "kernelZ"};
    const char* stride_keys[] = {"kernelStrideX", "kernelStrideY", "kernelStrideZ"};
    for (int d = 0; d < 3; ++d) {
      at_least(key(kernel_keys[d]), l.kernel[d], 1);
      at_least(key(stride_keys[d]), l.kernel_stride[d], 1);
    }
    in_range(key("kernelDimensions"), l.kernel_dimensions, 1, 3);
    const std::pair<const char*, float> floats[] = {
        {"pDropout", l.p_dropout},
        {"weightInitScale", l.weight_init_scale},
        {"biasInit", l.bias_init},
        {"weightNorm", l.weight_norm},
        {"deltaNorm", l.delta_norm},
        {"sparsenessPenalty_p", l.sparseness_penalty_p},
        {"sparsenessPenalty_beta", l.sparseness_penalty_beta},
        {"RELUSlope", l.relu_slope},
        {"ELUAlpha", l.elu_alpha},
        {"SELULambda", l.selu_lambda},
        {"nn_activationMax", l.activation_max},
    };
    for (const auto& [name, value] : floats) finite(key(name), value);
    if ((l.activation == Activation::ReluMax || l.activation == Activation::LinearMax) &&
        !(l.activation_max > 0))
      fail_att(key("nn_activationMax"), "is " + std::to_string(l.activation_max) +
                                            ", expected > 0 (the bound of " +
                                            to_string(l.activation) + ")");
    if (l.activation == Activation::MaxOut && net_.spec.maxout_k < 1)
      fail_att("maxout_k", "is " + std::to_string(net_.spec.maxout_k) + ", expected >= 1 (layer " +
                               quoted(l.name) + " uses MaxOut)");
  }

  // Names that refer to other layers; run once every layer name is known.
  void check_layer_links(size_t i) const {
    const LayerSpec& l = net_.spec.layers[i];
    for (size_t j = 0; j < l.sources.size(); ++j)
      existing_layer(layer_key(i, "source" + std::to_string(j)), l.sources[j]);
    for (size_t j = 0; j < l.skips.size(); ++j)
      existing_layer(layer_key(i, "skip" + std::to_string(j)), l.skips[j]);
    for (size_t j = 0; j < l.shared_weights.size(); ++j) {
      const SharedWeightSpec& s = l.shared_weights[j];
      const std::string p = "nn_sharedWeight" + std::to_string(j) + "_";
      existing_layer(layer_key(i, p + "sourceInputLayer"), s.source_input_layer);
      existing_layer(layer_key(i, p + "sourceOutputLayer"), s.source_output_layer);
      existing_layer(layer_key(i, p + "inputLayer"), s.input_layer);
    }
  }

  void check_weight(size_t i) const {
    const WeightArrays& w = net_.weights[i];
    auto key = [i](const std::string& k) { return weight_key(i, k); };
    const LayerSpec& in = existing_layer(key("inputLayer"), w.input_layer);
    const LayerSpec& out = existing_layer(key("outputLayer"), w.output_layer);
    if (out.type == LayerType::Pooling || out.kind == LayerKind::Input)
      fail_att(key("outputLayer"), "names layer " + quoted(out.name) + ", which has no weights (" +
                                       (out.kind == LayerKind::Input ? "Input" : "Pooling") +
                                       " layer)");
    bool is_source = false;
    for (const auto& s : out.sources) is_source |= (s == in.name);
    if (!is_source)
      fail_att(key("inputLayer"),
               "names layer " + quoted(in.name) + ", which is not a source of " + quoted(out.name));
    finite(key("norm"), w.norm);

    const char* dim_keys[] = {"width", "height", "length", "depth", "breadth"};
    const uint64_t dims[] = {w.width, w.height, w.length, w.depth, w.breadth};
    for (int d = 0; d < 5; ++d)
      if (dims[d] < 1) fail_att(key(dim_keys[d]), "is 0, expected at least 1");
    uint64_t size = 0;
    if (!checked_product({w.width, w.height, w.length, w.depth, w.breadth}, size))
      fail_att(key("width"), "times height, length, depth and breadth exceeds 64 bits");
    if (out.type == LayerType::FullyConnected || out.type == LayerType::Variational)
      check_fc_shape(i, w, in, out);

    check_sharing(i, w, out);
    const FloatRun weights = weights_of(w);
    if (w.shared) {
      if (!weights.empty())
        fail_var(key("weights"),
                 "is given for a shared weight, expected none (the values belong to " +
                     quoted(w.source_input_layer) + " -> " + quoted(w.source_output_layer) + ")");
    } else if (weights.empty() != w.bias.empty()) {
      // DSSTNE re-initialises a weight when either array is missing; a half-stored weight is a bug.
      fail_var(key(weights.empty() ? "weights" : "bias"),
               "is missing while " + quoted(key(weights.empty() ? "bias" : "weights")) +
                   " is present (store both or neither)");
    }
    const std::string dims_text = std::to_string(w.width) + "*" + std::to_string(w.height) + "*" +
                                  std::to_string(w.length) + "*" + std::to_string(w.depth) + "*" +
                                  std::to_string(w.breadth);
    const std::string size_why = "width*height*length*depth*breadth = " + dims_text;
    if (!weights.empty()) size_is(key("weights"), weights.size, size, size_why);
    if (!w.bias.empty()) {
      if (out.type == LayerType::Convolutional)
        size_is(key("bias"), w.bias.size(), w.width, "width = output channels");
      else
        size_is(key("bias"), w.bias.size(), fc_outputs(out),
                out.activation == Activation::MaxOut ? "units x maxout_k of " + quoted(out.name)
                : out.type == LayerType::Variational
                    ? "2 x units (means and log-variances) of " + quoted(out.name)
                    : "units of " + quoted(out.name));
    }
    finite_values(key("weights"), weights);
    finite_values(key("bias"), run_of(w.bias));
    check_states(key("nn_state"), weight_states_of(w), weights.size, key("weights"));
    check_states(key("nn_bias_state"), runs_of(w.bias_state), w.bias.size(), key("bias"));
  }

  // Outputs of a fully connected weight: the layer's units, times maxout_k for MaxOut layers
  // (k pre-activations per unit), times 2 for Variational layers (a mean and a log-variance).
  static uint64_t fc_outputs(const LayerSpec& out) {
    if (out.type == LayerType::Variational) return 2 * out.units();
    return out.activation == Activation::MaxOut ? out.units() * uint64_t(out.maxout_k)
                                                : out.units();
  }

  void check_fc_shape(size_t i, const WeightArrays& w, const LayerSpec& in,
                      const LayerSpec& out) const {
    const uint64_t outputs = fc_outputs(out);
    if (w.width != outputs || w.height != in.units())
      fail_att(weight_key(i, "width"),
               "and 'height' are " + std::to_string(w.width) + " x " + std::to_string(w.height) +
                   ", expected " + std::to_string(outputs) + " x " + std::to_string(in.units()) +
                   " for " + quoted(in.name) + " (" + std::to_string(in.units()) + " units) -> " +
                   quoted(out.name) + " (" + std::to_string(out.units()) + " units" +
                   (out.type == LayerType::Variational ? ", a mean and a log-variance each"
                    : outputs != out.units()
                        ? " of " + std::to_string(out.maxout_k) + " MaxOut pieces each"
                        : std::string()) +
                   ")");
    const char* keys[] = {"length", "depth", "breadth"};
    const uint64_t values[] = {w.length, w.depth, w.breadth};
    for (int d = 0; d < 3; ++d)
      if (values[d] != 1)
        fail_att(weight_key(i, keys[d]),
                 "is " + std::to_string(values[d]) + ", expected 1 for a fully connected weight");
  }

  // The weight's shared flag must agree with the output layer's SharedWeights list, so that
  // DSSTNE (which reads the weight attributes) and we (which read the spec) see the same network.
  void check_sharing(size_t i, const WeightArrays& w, const LayerSpec& out) const {
    const SharedWeightSpec* spec = nullptr;
    for (const auto& s : out.shared_weights)
      if (s.input_layer == w.input_layer) spec = &s;
    if (!w.shared) {
      if (w.transposed)
        fail_att(weight_key(i, "bTransposed"), "is set on a weight that is not shared");
      if (!w.source_input_layer.empty() || !w.source_output_layer.empty())
        fail_att(weight_key(i, "sourceInputLayer"), "is set on a weight that is not shared");
      if (spec)
        fail_att(weight_key(i, "bShared"), "is 0, but layer " + quoted(out.name) +
                                               " declares its weights from " +
                                               quoted(w.input_layer) + " as shared");
      return;
    }
    existing_layer(weight_key(i, "sourceInputLayer"), w.source_input_layer);
    existing_layer(weight_key(i, "sourceOutputLayer"), w.source_output_layer);
    if (!spec)
      fail_att(weight_key(i, "bShared"), "is 1, but layer " + quoted(out.name) +
                                             " has no SharedWeights entry for input " +
                                             quoted(w.input_layer));
    if (spec->source_input_layer != w.source_input_layer ||
        spec->source_output_layer != w.source_output_layer || spec->transposed != w.transposed)
      fail_att(weight_key(i, "sourceInputLayer"),
               "and 'sourceOutputLayer' share " + quoted(w.source_input_layer) + " -> " +
                   quoted(w.source_output_layer) + (w.transposed ? " transposed" : "") +
                   ", but layer " + quoted(out.name) + " SharedWeights says " +
                   quoted(spec->source_input_layer) + " -> " + quoted(spec->source_output_layer) +
                   (spec->transposed ? " transposed" : ""));
    bool found = false;
    for (const auto& other : net_.weights)
      found |= !other.shared && other.input_layer == w.source_input_layer &&
               other.output_layer == w.source_output_layer;
    if (!found)
      fail_att(weight_key(i, "sourceInputLayer"),
               "and 'sourceOutputLayer' name " + quoted(w.source_input_layer) + " -> " +
                   quoted(w.source_output_layer) + ", but no unshared weight connects them");
  }

  void check_states(const std::string& prefix, const std::vector<FloatRun>& states, size_t size,
                    const std::string& owner) const {
    for (size_t k = 0; k < states.size(); ++k) {
      const std::string var = prefix + std::to_string(k);
      if (size == 0) fail_var(var, "is given, but " + quoted(owner) + " has no values");
      size_is(var, states[k].size, size, "same as " + quoted(owner));
      finite_values(var, states[k]);
    }
  }

  void check_layer_arrays() const {
    std::map<std::string, size_t> seen;
    for (const LayerArrays& a : net_.layers) {
      const long li = layer_index(a.layer);
      if (li < 0)
        throw DataError(file_ + ": layer arrays given for layer " + quoted(a.layer) +
                        ", which does not exist");
      if (!seen.emplace(a.layer, 0).second)
        throw DataError(file_ + ": layer arrays given twice for layer " + quoted(a.layer));
      const LayerSpec& l = net_.spec.layers[li];
      auto key = [li](const char* k) { return layer_key(li, k); };
      const std::vector<float>* bn[] = {&a.bn_scale, &a.bn_bias, &a.bn_running_mean,
                                        &a.bn_running_variance};
      const char* bn_keys[] = {"scaleBN", "biasBN", "runningMeanBN", "runningVarianceBN"};
      const size_t size = a.bn_scale.size();
      bool any = false;
      for (auto* v : bn) any |= !v->empty();
      if (any) {
        if (!l.batch_normalization)
          fail_var(key("scaleBN"),
                   "is given, but layer " + quoted(l.name) + " has BatchNormalization off");
        if (size == 0) fail_var(key("scaleBN"), "is missing while other BN arrays are present");
        for (int k = 1; k < 4; ++k)
          size_is(key(bn_keys[k]), bn[k]->size(), size, "same as " + quoted(key("scaleBN")));
      }
      for (int k = 0; k < 4; ++k) finite_values(key(bn_keys[k]), run_of(*bn[k]));
      check_states(key("nn_scaleBN_state"), runs_of(a.bn_scale_state), size, key("scaleBN"));
      check_states(key("nn_biasBN_state"), runs_of(a.bn_bias_state), size, key("biasBN"));
    }
  }

  void check_training() const {
    const TrainingState& t = net_.training;
    if (!t.present) return;
    code("nn_training_optimizer", static_cast<uint32_t>(t.optimizer), 6);
    finite("nn_training_alpha", t.alpha);
    finite("nn_training_lambda", t.lambda);
    finite("nn_training_lambda1", t.lambda1);
    finite("nn_training_mu", t.mu);
    finite("nn_training_mu1", t.mu1);
  }

  const NetworkFile& net_;
  const std::string& file_;
  std::map<std::string, size_t> index_;  // layer name -> position
};

}  // namespace

void validate_network_file(const NetworkFile& net, const std::string& file) {
  Validator(net, file).run();
}

}  // namespace nn
