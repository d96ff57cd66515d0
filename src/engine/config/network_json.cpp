// Reads DSSTNE's JSON layer definition language into a NetworkSpec (docs/config-reference.md,
// "Network description (JSON)"; DSSTNE's reader is NNNetwork.cpp's LoadNeuralNetworkJSON):
// case-insensitive keys and enumeration values, DSSTNE's defaults, default layer kinds, names and
// sources by position, and validation of every layer reference, with path-qualified errors.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "config/json_reader.h"
#include "config/parse.h"
#include "config/sampling_json.h"
#include "core/error.h"
#include "core/memory_budget.h"
#include "core/nearest_name.h"

namespace nn {
namespace {

using config_detail::child_path;
using config_detail::index_path;
using config_detail::Json;
using config_detail::JsonReader;
using config_detail::Member;

constexpr int64_t kMaxU32 = std::numeric_limits<uint32_t>::max();

// Layer kinds as bits, for the table of which keys each kind accepts.
constexpr unsigned kInputBit = 1u << unsigned(LayerKind::Input);
constexpr unsigned kHiddenBit = 1u << unsigned(LayerKind::Hidden);
constexpr unsigned kOutputBit = 1u << unsigned(LayerKind::Output);
constexpr unsigned kTargetBit = 1u << unsigned(LayerKind::Target);
constexpr unsigned kAnyKind = kInputBit | kHiddenBit | kOutputBit | kTargetBit;
constexpr unsigned kNotInput = kAnyKind & ~kInputBit;

unsigned kind_bit(LayerKind kind) {
  return 1u << unsigned(kind);
}

// Which type of layer a key needs, beyond its kind.
enum class TypeRule { Any, ConvOrPooling, Pooling, NotPooling, Variational };

// The layer keys DSSTNE's loader accepts and the layer kinds it accepts them on
// (docs/config-reference.md, "Layer keys").
struct LayerKey {
  const char* name;
  const char* alias;
  unsigned kinds;
  TypeRule type_rule;
};

const LayerKey kLayerKeys[] = {
    {"Kind", nullptr, kAnyKind, TypeRule::Any},
    {"Type", nullptr, kAnyKind, TypeRule::Any},
    {"Name", nullptr, kAnyKind, TypeRule::Any},
    {"N", nullptr, kAnyKind, TypeRule::Any},
    {"Sparse", nullptr, kAnyKind, TypeRule::Any},
    {"pDropout", nullptr, kAnyKind, TypeRule::Any},
    {"DataSet", nullptr, kInputBit | kOutputBit, TypeRule::Any},
    {"Source", nullptr, kNotInput, TypeRule::Any},
    {"Kernel", nullptr, kNotInput, TypeRule::ConvOrPooling},
    {"KernelStride", nullptr, kNotInput, TypeRule::ConvOrPooling},
    {"Function", nullptr, kHiddenBit | kOutputBit, TypeRule::Pooling},
    {"Skip", nullptr, kHiddenBit | kOutputBit, TypeRule::Any},
    {"Activation", nullptr, kHiddenBit | kOutputBit, TypeRule::Any},
    {"RELUSlope", "Slope", kHiddenBit | kOutputBit, TypeRule::Any},
    {"ELUAlpha", nullptr, kHiddenBit | kOutputBit, TypeRule::Any},
    {"SELULambda", nullptr, kHiddenBit | kOutputBit, TypeRule::Any},
    {"ActivationMax", nullptr, kHiddenBit | kOutputBit, TypeRule::Any},
    {"WeightNorm", nullptr, kHiddenBit | kOutputBit, TypeRule::Any},
    {"DeltaNorm", nullptr, kHiddenBit | kOutputBit, TypeRule::Any},
    {"WeightInit", nullptr, kHiddenBit | kOutputBit, TypeRule::Any},
    {"SharedWeights", nullptr, kHiddenBit | kOutputBit, TypeRule::NotPooling},
    {"BatchNormalization", nullptr, kHiddenBit, TypeRule::Any},
    {"SparsenessPenalty", nullptr, kHiddenBit, TypeRule::Any},
    {"Parallel", nullptr, kHiddenBit | kOutputBit, TypeRule::Any},
    // Ours (docs/config-reference.md): row normalisation of inputs, the KL term of Variational
    // layers.
    {"Normalize", nullptr, kInputBit, TypeRule::Any},
    {"KL", nullptr, kHiddenBit, TypeRule::Variational},
    // Ours: sampled output training (docs/wide-outputs.md).
    {"Sampling", nullptr, kOutputBit, TypeRule::NotPooling},
};

// Keys a Variational layer refuses although its kind takes them: the layer ends in its
// reparameterised sample, with nothing after it (docs/config-reference.md, "Variational
// layers").
const char* const kNotOnVariational[] = {"Skip",      "pDropout",           "SharedWeights",
                                         "DeltaNorm", "BatchNormalization", "SparsenessPenalty",
                                         "Sparse"};

// Top-level keys, aliases included, as listed in "expected one of" messages.
// clang-format off
const std::vector<std::string> kTopLevelKeys = {
    "Version", "Name", "Kind", "ErrorFunction", "ShuffleIndices", "RELUSlope", "Slope", "ELUAlpha",
    "SELULambda", "ActivationMax", "Decay", "LRN", "LocalResponseNormalization", "Maxout", "SparsenessPenalty",
    "Denoising", "DeltaBoost", "ScaledMarginalCrossEntropy", "DataScaledMarginalCrossEntropy",
    "SoftMaxTargets", "WeightsData", "Precision", "Layers"};
// clang-format on

const LayerKey* find_layer_key(const std::string& lower) {
  for (const auto& key : kLayerKeys)
    if (to_lower(key.name) == lower || (key.alias && to_lower(key.alias) == lower)) return &key;
  return nullptr;
}

bool type_allows(TypeRule rule, LayerType type) {
  switch (rule) {
    case TypeRule::Any:
      return true;
    case TypeRule::ConvOrPooling:
      return type != LayerType::FullyConnected;
    case TypeRule::Pooling:
      return type == LayerType::Pooling;
    case TypeRule::NotPooling:
      return type != LayerType::Pooling;
    case TypeRule::Variational:
      return type == LayerType::Variational;
  }
  return true;
}

const char* type_rule_text(TypeRule rule) {
  switch (rule) {
    case TypeRule::ConvOrPooling:
      return "Convolutional and Pooling layers";
    case TypeRule::Pooling:
      return "Pooling layers";
    case TypeRule::NotPooling:
      return "FullyConnected and Convolutional layers";
    case TypeRule::Variational:
      return "Variational layers";
    case TypeRule::Any:
      break;
  }
  return "any layer";
}

// "Hidden and Output layers" for a kind mask.
std::string kinds_text(unsigned mask) {
  std::vector<std::string> names;
  for (LayerKind k : {LayerKind::Input, LayerKind::Hidden, LayerKind::Output, LayerKind::Target})
    if (mask & kind_bit(k)) names.push_back(to_string(k));
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return out + " layers";
}

// "an Input", "a Hidden": for messages that name a kind or function.
std::string with_article(const std::string& word) {
  const bool vowel = !word.empty() && std::string("AEIOUaeiou").find(word[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + word;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Everything parsed for one layer that the spec itself does not keep.
struct LayerInfo {
  std::string path;  // "Layers[2]", or "Layers" when Layers is a single object
  bool explicit_source = false;
  std::optional<float> relu_slope, elu_alpha, selu_lambda, activation_max;
  std::vector<std::string> shared_paths;  // path of each SharedWeights entry
};

class NetworkParser {
 public:
  explicit NetworkParser(const std::string& source) : r_(source) {}

  NetworkSpec parse(const Json& root) {
    NetworkSpec spec;
    spec.source = r_.source();
    const Member* layers = nullptr;
    std::set<std::string> seen;
    const auto members = r_.members(root, "");
    for (const auto& m : members) {
      // A command file given where a network belongs (nn-train -c train.cdl).
      if (m.lower == "command" && !root.contains("Layers") && !root.contains("layers"))
        r_.fail("",
                "this looks like a command file (CDL), not a network file: it has Command "
                "and no Layers. Run it as nn-train " +
                    r_.source() +
                    " (or nn-predict for Command Predict); -c expects the network JSON that its "
                    "\"Network\" key names");
    }
    for (const auto& m : members) {
      const char* canonical = parse_top_key(m, spec);
      if (!canonical) {
        if (m.lower != "layers") unknown_top_key(m);
        canonical = "Layers";
        layers = &m;
      }
      once(seen, canonical, m);
    }
    if (!layers)
      r_.fail("Layers", "missing; a network needs at least an Input and an Output layer");
    parse_layers(*layers, spec);
    resolve(spec);
    return spec;
  }

 private:
  // Fails when two spellings of one key (RELUSlope and Slope) appear in the same object.
  void once(std::set<std::string>& seen, const std::string& canonical, const Member& m) const {
    if (!seen.insert(canonical).second)
      r_.fail(m.path, "given twice (" + canonical + " and an alias of it)");
  }

  [[noreturn]] void unknown_top_key(const Member& m) const { r_.unknown_key(m, kTopLevelKeys); }

  // Parses one top-level key other than Layers; returns its canonical name, or nullptr.
  const char* parse_top_key(const Member& m, NetworkSpec& spec) {
    const std::string& k = m.lower;
    if (k == "version") {
      spec.version = r_.get_float(m);
      r_.require(spec.version >= 0.7f, m.path, ">= 0.7", spec.version);
      return "Version";
    }
    if (k == "name") {
      spec.name = r_.get_string(m);
      return "Name";
    }
    if (k == "kind") {
      spec.kind = r_.get_enum<NetworkKind>(m);
      return "Kind";
    }
    if (k == "weightsdata") {
      r_.get_string(m);  // DSSTNE parses it and ignores it; so do we
      return "WeightsData";
    }
    if (k == "errorfunction") {
      spec.error_function = r_.get_enum<ErrorFunction>(m);
      return "ErrorFunction";
    }
    if (k == "softmaxtargets") {
      spec.softmax_targets = r_.get_enum<SoftMaxTargets>(m);
      return "SoftMaxTargets";
    }
    if (k == "precision") {
      spec.precision = r_.get_enum<Precision>(m);
      return "Precision";
    }
    if (k == "shuffleindices") {
      spec.shuffle_indices = r_.get_bool(m);
      return "ShuffleIndices";
    }
    if (k == "reluslope" || k == "slope") {
      spec.relu_slope = r_.get_float(m);
      return "RELUSlope";
    }
    if (k == "elualpha") {
      spec.elu_alpha = r_.get_float(m);
      return "ELUAlpha";
    }
    if (k == "selulambda") {
      spec.selu_lambda = r_.get_float(m);
      return "SELULambda";
    }
    if (k == "activationmax") {
      spec.activation_max = r_.get_float(m);
      r_.require(spec.activation_max > 0, m.path, "> 0", spec.activation_max);
      return "ActivationMax";
    }
    if (k == "decay") {
      spec.decay = r_.get_float(m);
      r_.require(spec.decay >= 0, m.path, ">= 0", spec.decay);
      return "Decay";
    }
    if (k == "lrn" || k == "localresponsenormalization") {
      for (const auto& p : r_.members(*m.value, m.path)) {
        if (p.lower == "k") {
          spec.lrn_k = r_.get_float(p);
        } else if (p.lower == "n") {
          spec.lrn_n = int(r_.get_int(*p.value, p.path, 1, std::numeric_limits<int>::max()));
        } else if (p.lower == "alpha") {
          spec.lrn_alpha = r_.get_float(p);
        } else if (p.lower == "beta") {
          spec.lrn_beta = r_.get_float(p);
        } else {
          r_.unknown_key(p, {"k", "n", "alpha", "beta"});
        }
      }
      return "LRN";
    }
    if (k == "maxout") {
      for (const auto& p : r_.members(*m.value, m.path)) {
        if (p.lower != "k") r_.unknown_key(p, {"k"});
        spec.maxout_k = int(r_.get_int(*p.value, p.path, 1, std::numeric_limits<int>::max()));
      }
      return "Maxout";
    }
    if (k == "sparsenesspenalty") {
      parse_sparseness(m, spec.sparseness_penalty_p, spec.sparseness_penalty_beta);
      return "SparsenessPenalty";
    }
    if (k == "denoising") {
      for (const auto& p : r_.members(*m.value, m.path)) {
        if (p.lower != "p") r_.unknown_key(p, {"p"});
        spec.denoising_p = r_.get_float(p);
        r_.require(spec.denoising_p >= 0 && spec.denoising_p < 1, p.path, "in [0, 1)",
                   spec.denoising_p);
      }
      return "Denoising";
    }
    if (k == "deltaboost") {
      for (const auto& p : r_.members(*m.value, m.path)) {
        if (p.lower == "one") {
          spec.delta_boost_one = r_.get_float(p);
        } else if (p.lower == "zero") {
          spec.delta_boost_zero = r_.get_float(p);
        } else {
          r_.unknown_key(p, {"one", "zero"});
        }
      }
      return "DeltaBoost";
    }
    if (k == "scaledmarginalcrossentropy" || k == "datascaledmarginalcrossentropy") {
      for (const auto& p : r_.members(*m.value, m.path)) {
        if (p.lower == "onetarget") {
          spec.smce_one_target = r_.get_float(p);
        } else if (p.lower == "zerotarget") {
          spec.smce_zero_target = r_.get_float(p);
        } else if (p.lower == "onescale") {
          spec.smce_one_scale = r_.get_float(p);
        } else if (p.lower == "zeroscale") {
          spec.smce_zero_scale = r_.get_float(p);
        } else {
          r_.unknown_key(p, {"oneTarget", "zeroTarget", "oneScale", "zeroScale"});
        }
      }
      // Both names fill the same parameters (DSSTNE keeps one set for SMCE and DSMCE).
      return "ScaledMarginalCrossEntropy";
    }
    return nullptr;
  }

  void parse_sparseness(const Member& m, float& p_out, float& beta_out) const {
    for (const auto& p : r_.members(*m.value, m.path)) {
      if (p.lower == "p") {
        p_out = r_.get_float(p);
        r_.require(p_out >= 0 && p_out <= 1, p.path, "in [0, 1]", p_out);
      } else if (p.lower == "beta") {
        beta_out = r_.get_float(p);
        r_.require(beta_out >= 0, p.path, ">= 0", beta_out);
      } else {
        r_.unknown_key(p, {"p", "beta"});
      }
    }
  }

  void parse_layers(const Member& m, NetworkSpec& spec) {
    const Json& value = *m.value;
    if (value.is_object()) {
      spec.layers.push_back(parse_layer(value, m.path, 0, 1));
      return;
    }
    if (!value.is_array() || value.empty())
      r_.wrong_type(value, m.path, "a non-empty array of layer objects");
    for (size_t i = 0; i < value.size(); ++i)
      spec.layers.push_back(parse_layer(value[i], index_path(m.path, i), i, value.size()));
  }

  // Valid keys for a layer of this kind and type, for "expected one of" messages.
  static std::vector<std::string> layer_keys_for(LayerKind kind, LayerType type) {
    std::vector<std::string> out;
    for (const auto& key : kLayerKeys) {
      if (!(key.kinds & kind_bit(kind)) || !type_allows(key.type_rule, type)) continue;
      out.push_back(key.name);
      if (key.alias) out.push_back(key.alias);
    }
    return out;
  }

  LayerSpec parse_layer(const Json& value, const std::string& path, size_t position, size_t count) {
    LayerSpec layer;
    LayerInfo info;
    info.path = path;
    const auto members = r_.members(value, path);

    // Kind and Type decide which other keys are valid, so they are read first (as DSSTNE does).
    layer.kind = position == 0           ? LayerKind::Input
                 : position + 1 == count ? LayerKind::Output
                                         : LayerKind::Hidden;
    for (const auto& m : members) {
      if (m.lower == "kind") layer.kind = r_.get_enum<LayerKind>(m);
      if (m.lower == "type") layer.type = r_.get_enum<LayerType>(m);
    }
    layer.name = std::string(to_string(layer.kind)) + std::to_string(position);

    if (layer.type == LayerType::Variational) {
      if (layer.kind != LayerKind::Hidden)
        r_.fail(child_path(path, "Type"), "Variational layers are Hidden layers, but this one is " +
                                              with_article(to_string(layer.kind)) + " layer");
      layer.activation = Activation::Linear;  // the sample is the layer's output
    }

    std::set<std::string> seen;
    for (const auto& m : members) {
      const LayerKey* key = find_layer_key(m.lower);
      if (!key) r_.unknown_key(m, layer_keys_for(layer.kind, layer.type));
      once(seen, key->name, m);
      if (layer.type == LayerType::Variational) check_variational_key(key->name, m);
      if (!(key->kinds & kind_bit(layer.kind))) {
        r_.fail(m.path, "not valid on " + with_article(to_string(layer.kind)) + " layer; only on " +
                            kinds_text(key->kinds));
      }
      if (!type_allows(key->type_rule, layer.type)) {
        r_.fail(m.path, std::string("only valid on ") + type_rule_text(key->type_rule) +
                            ", but this layer's Type is " + to_string(layer.type));
      }
      parse_layer_key(key->name, m, layer, info);
    }

    if (layer.type == LayerType::Pooling && layer.pooling == PoolingFunction::None &&
        (layer.kind == LayerKind::Hidden || layer.kind == LayerKind::Output)) {
      r_.fail(path, "a Pooling layer needs a Function; expected one of " +
                        enum_choices<PoolingFunction>());
    }
    if (layer.n_auto && layer.dataset.empty()) {
      r_.fail(child_path(path, "N"),
              "\"auto\" takes the size from the layer's DataSet, but the layer has no DataSet");
    }
    infos_.push_back(info);
    return layer;
  }

  // A key a Variational layer cannot take (kNotOnVariational), or an activation other than Linear.
  void check_variational_key(const std::string& key, const Member& m) const {
    for (const char* refused : kNotOnVariational)
      if (key == refused)
        r_.fail(m.path, std::string("not valid on a Variational layer (its output is the sampled "
                                    "code; put ") +
                            key + " on the layer that reads it)");
    if (key == "Activation" && r_.get_enum<Activation>(m) != Activation::Linear)
      r_.fail(m.path,
              std::string("a Variational layer outputs its sample as it is (Linear), not ") +
                  to_string(r_.get_enum<Activation>(m)) +
                  "; put the activation on the layer that reads it");
  }

  void parse_layer_key(const std::string& key, const Member& m, LayerSpec& layer, LayerInfo& info) {
    const Json& v = *m.value;
    if (key == "Kind" || key == "Type") return;  // read in the first pass
    if (key == "Name") {
      layer.name = r_.get_string(m);
      if (layer.name.empty()) r_.fail(m.path, "layer names must not be empty");
    } else if (key == "N") {
      parse_n(m, layer);
    } else if (key == "Sparse") {
      layer.sparse = r_.get_bool(m);
    } else if (key == "pDropout") {
      layer.p_dropout = r_.get_float(m);
      r_.require(layer.p_dropout >= 0 && layer.p_dropout < 1, m.path, "in [0, 1)", layer.p_dropout);
    } else if (key == "DataSet") {
      layer.dataset = r_.get_string(m);
    } else if (key == "Source") {
      layer.sources = r_.get_string_list(v, m.path, /*allow_empty=*/false);
      info.explicit_source = true;
    } else if (key == "Skip") {
      layer.skips = r_.get_string_list(v, m.path, /*allow_empty=*/true);
    } else if (key == "Kernel") {
      layer.kernel_dimensions = parse_kernel(m, layer.kernel);
    } else if (key == "KernelStride") {
      parse_kernel(m, layer.kernel_stride);
    } else if (key == "Function") {
      layer.pooling = r_.get_enum<PoolingFunction>(m);
    } else if (key == "Activation") {
      layer.activation = r_.get_enum<Activation>(m);
    } else if (key == "Normalize") {
      layer.normalize = r_.get_enum<RowNormalization>(m);
    } else if (key == "KL") {
      parse_kl(m, layer);
    } else if (key == "Sampling") {
      layer.sampling = parse_sampling(r_, m);
    } else if (key == "RELUSlope") {
      info.relu_slope = r_.get_float(m);
    } else if (key == "ELUAlpha") {
      info.elu_alpha = r_.get_float(m);
    } else if (key == "SELULambda") {
      info.selu_lambda = r_.get_float(m);
    } else if (key == "ActivationMax") {
      info.activation_max = r_.get_float(m);
      r_.require(*info.activation_max > 0, m.path, "> 0", *info.activation_max);
    } else if (key == "WeightNorm") {
      layer.weight_norm = r_.get_float(m);
      r_.require(layer.weight_norm >= 0, m.path, ">= 0 (0 disables it)", layer.weight_norm);
    } else if (key == "DeltaNorm") {
      layer.delta_norm = r_.get_float(m);
      r_.require(layer.delta_norm >= 0, m.path, ">= 0 (0 disables it)", layer.delta_norm);
    } else if (key == "WeightInit") {
      parse_weight_init(m, layer);
    } else if (key == "SharedWeights") {
      parse_shared_weights(m, layer, info);
    } else if (key == "BatchNormalization") {
      layer.batch_normalization = r_.get_bool(m);
    } else if (key == "SparsenessPenalty") {
      parse_sparseness(m, layer.sparseness_penalty_p, layer.sparseness_penalty_beta);
    } else if (key == "Parallel") {
      const std::string mode = to_lower(r_.get_string(m));
      if (mode == "auto")
        layer.parallel = ParallelMode::Auto;
      else if (mode == "data")
        layer.parallel = ParallelMode::Data;
      else if (mode == "model")
        layer.parallel = ParallelMode::Model;
      else
        r_.fail(m.path,
                "expected \"Auto\", \"Data\" or \"Model\", not \"" + r_.get_string(m) + "\"");
    }
  }

  void parse_n(const Member& m, LayerSpec& layer) const {
    const Json& v = *m.value;
    const char* expected = "an integer, an array of 1-4 integers or \"auto\"";
    if (v.is_string()) {
      if (to_lower(v.get<std::string>()) != "auto") r_.wrong_type(v, m.path, expected);
      if (layer.kind != LayerKind::Input && layer.kind != LayerKind::Output) {
        r_.fail(m.path, std::string("\"auto\" is not allowed on ") + to_string(layer.kind) +
                            " layers (only Input and Output layers take their size from a "
                            "dataset)");
      }
      layer.n_auto = true;
    } else if (v.is_number()) {
      layer.n[0] = uint32_t(r_.get_int(v, m.path, 1, kMaxU32));
      layer.dimensions = 1;
    } else if (v.is_array() && !v.empty() && v.size() <= 4) {
      std::optional<uint64_t> units = 1;
      std::string product;
      for (size_t i = 0; i < v.size(); ++i) {
        layer.n[i] = uint32_t(r_.get_int(v[i], index_path(m.path, i), 1, kMaxU32));
        if (units) units = checked_mul(*units, layer.n[i]);
        product += (i ? " x " : "") + std::to_string(layer.n[i]);
      }
      // Layers count their units in 32 bits; a product beyond that must not wrap to a small one.
      if (!units || *units > kMaxU32)
        r_.fail(m.path, product + " = " + (units ? std::to_string(*units) : "more than 2^64") +
                            " units; a layer has at most 4294967295 units");
      layer.dimensions = int(v.size());
    } else if (v.is_array()) {
      r_.fail(m.path, std::string("expected ") + expected + ", got an array of " +
                          std::to_string(v.size()) + " elements");
    } else {
      r_.wrong_type(v, m.path, expected);
    }
  }

  // Kernel or KernelStride: an integer (x) or an array of 1-3; returns the number given.
  int parse_kernel(const Member& m, std::array<uint32_t, 3>& out) const {
    const Json& v = *m.value;
    out = {1, 1, 1};
    if (v.is_number()) {
      out[0] = uint32_t(r_.get_int(v, m.path, 1, kMaxU32));
      return 1;
    }
    if (!v.is_array() || v.empty() || v.size() > 3)
      r_.wrong_type(v, m.path, "an integer or an array of 1-3 integers");
    for (size_t i = 0; i < v.size(); ++i)
      out[i] = uint32_t(r_.get_int(v[i], index_path(m.path, i), 1, kMaxU32));
    return int(v.size());
  }

  // "KL": {"Beta": b, "AnnealSteps": n}.
  void parse_kl(const Member& m, LayerSpec& layer) const {
    for (const auto& p : r_.members(*m.value, m.path)) {
      if (p.lower == "beta") {
        layer.kl_beta = r_.get_float(p);
        r_.require(layer.kl_beta >= 0, p.path, ">= 0", layer.kl_beta);
      } else if (p.lower == "annealsteps") {
        layer.kl_anneal_steps =
            uint64_t(r_.get_int(*p.value, p.path, 0, std::numeric_limits<int64_t>::max()));
      } else {
        r_.unknown_key(p, {"Beta", "AnnealSteps"});
      }
    }
  }

  void parse_weight_init(const Member& m, LayerSpec& layer) const {
    for (const auto& p : r_.members(*m.value, m.path)) {
      if (p.lower == "scheme") {
        layer.weight_init = r_.get_enum<WeightInit>(p);
      } else if (p.lower == "scale") {
        layer.weight_init_scale = r_.get_float(p);
      } else if (p.lower == "bias") {
        layer.bias_init = r_.get_float(p);
      } else {
        r_.unknown_key(p, {"Scheme", "Scale", "Bias"});
      }
    }
  }

  void parse_shared_weights(const Member& m, LayerSpec& layer, LayerInfo& info) const {
    const Json& v = *m.value;
    if (!v.is_object() && !v.is_array())
      r_.wrong_type(v, m.path, "an object or an array of objects");
    const size_t n = v.is_array() ? v.size() : 1;
    for (size_t i = 0; i < n; ++i) {
      const Json& entry = v.is_array() ? v[i] : v;
      const std::string path = v.is_array() ? index_path(m.path, i) : m.path;
      SharedWeightSpec shared;
      for (const auto& p : r_.members(entry, path)) {
        if (p.lower == "sourceinputlayer") {
          shared.source_input_layer = r_.get_string(p);
        } else if (p.lower == "sourceoutputlayer") {
          shared.source_output_layer = r_.get_string(p);
        } else if (p.lower == "inputlayer") {
          shared.input_layer = r_.get_string(p);
        } else if (p.lower == "transposed") {
          shared.transposed = r_.get_bool(p);
        } else {
          r_.unknown_key(p, {"SourceInputLayer", "SourceOutputLayer", "InputLayer", "Transposed"});
        }
      }
      for (auto [field, name] : {std::pair{&shared.source_input_layer, "SourceInputLayer"},
                                 std::pair{&shared.source_output_layer, "SourceOutputLayer"},
                                 std::pair{&shared.input_layer, "InputLayer"}}) {
        if (field->empty()) r_.fail(child_path(path, name), "missing; a layer name is required");
      }
      layer.shared_weights.push_back(shared);
      info.shared_paths.push_back(path);
    }
  }

  // Cross-layer rules: unique names, default sources, every reference resolved, network-level
  // defaults copied into layers, pooling sizes, no cycles.
  void resolve(NetworkSpec& spec) const {
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < spec.layers.size(); ++i) {
      auto [it, inserted] = index.emplace(spec.layers[i].name, i);
      if (!inserted) {
        r_.fail(child_path(infos_[i].path, "Name"),
                "duplicate layer name \"" + spec.layers[i].name + "\" (also the name of " +
                    infos_[it->second].path + ")");
      }
    }
    for (size_t i = 0; i < spec.layers.size(); ++i) resolve_layer(spec, i, index);
    check_cycles(spec, index);

    bool has_input = false, has_output = false;
    for (const auto& l : spec.layers) {
      has_input |= l.kind == LayerKind::Input;
      has_output |= l.kind == LayerKind::Output;
    }
    if (!has_input) r_.fail("Layers", "the network has no Input layer");
    if (!has_output) r_.fail("Layers", "the network has no Output layer");
  }

  void resolve_layer(NetworkSpec& spec, size_t i,
                     const std::map<std::string, size_t>& index) const {
    LayerSpec& layer = spec.layers[i];
    const LayerInfo& info = infos_[i];
    layer.relu_slope = info.relu_slope.value_or(spec.relu_slope);
    layer.elu_alpha = info.elu_alpha.value_or(spec.elu_alpha);
    layer.selu_lambda = info.selu_lambda.value_or(spec.selu_lambda);
    layer.activation_max = info.activation_max.value_or(spec.activation_max);
    layer.maxout_k = spec.maxout_k;

    if (layer.kind != LayerKind::Input && !info.explicit_source) {
      if (i == 0) {
        r_.fail(info.path, with_article(to_string(layer.kind)) +
                               " layer needs a Source, and there is no previous layer");
      }
      layer.sources = {spec.layers[i - 1].name};
    }
    check_references(layer, layer.sources, child_path(info.path, "Source"), "source", index);
    check_references(layer, layer.skips, child_path(info.path, "Skip"), "skip", index);

    if (layer.type == LayerType::Pooling && (layer.pooling == PoolingFunction::DotProduct ||
                                             layer.pooling == PoolingFunction::Cosine)) {
      // One score per additional source against source 0 (DSSTNE's rule).
      if (layer.sources.size() < 2) {
        r_.fail(child_path(info.path, "Source"),
                with_article(to_string(layer.pooling)) +
                    " pooling layer needs at least 2 sources, got " +
                    std::to_string(layer.sources.size()));
      }
      layer.n = {uint32_t(layer.sources.size() - 1), 1, 1, 1};
      layer.dimensions = 1;
    }

    for (size_t s = 0; s < layer.shared_weights.size(); ++s) {
      const SharedWeightSpec& shared = layer.shared_weights[s];
      const std::string& path = info.shared_paths[s];
      for (const auto* name :
           {&shared.source_input_layer, &shared.source_output_layer, &shared.input_layer}) {
        if (!index.count(*name)) {
          r_.fail(path, "layer \"" + layer.name + "\" names unknown layer \"" + *name +
                            "\"; layers are " + layer_list(spec) +
                            did_you_mean(*name, names_from(index)));
        }
      }
      if (std::find(layer.sources.begin(), layer.sources.end(), shared.input_layer) ==
          layer.sources.end()) {
        r_.fail(child_path(path, "InputLayer"),
                "\"" + shared.input_layer + "\" is not a source of layer \"" + layer.name +
                    "\" (its sources are " + join(layer.sources) + ")");
      }
      const LayerSpec& owner = spec.layers[index.at(shared.source_output_layer)];
      if (std::find(owner.sources.begin(), owner.sources.end(), shared.source_input_layer) ==
              owner.sources.end() ||
          owner.type == LayerType::Pooling) {
        r_.fail(path, "there is no weight from \"" + shared.source_input_layer + "\" to \"" +
                          shared.source_output_layer + "\" to share");
      }
    }
  }

  void check_references(const LayerSpec& layer, const std::vector<std::string>& names,
                        const std::string& path, const char* role,
                        const std::map<std::string, size_t>& index) const {
    std::set<std::string> seen;
    for (const auto& name : names) {
      if (!index.count(name)) {
        r_.fail(path, "layer \"" + layer.name + "\" names unknown " + role + " layer \"" + name +
                          "\"; layers are " + layer_list_from(index) +
                          did_you_mean(name, names_from(index)));
      }
      if (name == layer.name) r_.fail(path, "layer \"" + layer.name + "\" names itself");
      if (!seen.insert(name).second)
        r_.fail(path, "layer \"" + layer.name + "\" lists \"" + name + "\" twice");
    }
  }

  // A layer's inputs (sources and skips) must not lead back to it.
  void check_cycles(const NetworkSpec& spec, const std::map<std::string, size_t>& index) const {
    enum class Mark { None, Active, Done };
    std::vector<Mark> mark(spec.layers.size(), Mark::None);
    std::vector<size_t> stack;
    std::function<void(size_t)> visit = [&](size_t i) {
      if (mark[i] == Mark::Done) return;
      if (mark[i] == Mark::Active) {
        std::string cycle;
        auto from = std::find(stack.begin(), stack.end(), i);
        for (auto it = from; it != stack.end(); ++it) cycle += spec.layers[*it].name + " <- ";
        r_.fail(child_path(infos_[i].path, "Source"),
                "the layers form a cycle: " + cycle + spec.layers[i].name);
      }
      mark[i] = Mark::Active;
      stack.push_back(i);
      const LayerSpec& l = spec.layers[i];
      for (const auto* list : {&l.sources, &l.skips})
        for (const auto& name : *list) visit(index.at(name));
      stack.pop_back();
      mark[i] = Mark::Done;
    };
    for (size_t i = 0; i < spec.layers.size(); ++i) visit(i);
  }

  static std::string layer_list(const NetworkSpec& spec) {
    std::vector<std::string> names;
    for (const auto& l : spec.layers) names.push_back(l.name);
    return join(names);
  }

  // Layer names in document order.
  static std::vector<std::string> names_from(const std::map<std::string, size_t>& index) {
    std::vector<std::string> names(index.size());
    for (const auto& [name, i] : index) names[i] = name;
    return names;
  }

  static std::string layer_list_from(const std::map<std::string, size_t>& index) {
    return join(names_from(index));
  }

  JsonReader r_;
  std::vector<LayerInfo> infos_;
};

}  // namespace

NetworkSpec parse_network_json(const std::string& text, const std::string& source) {
  const std::string where = source.empty() ? "<network JSON>" : source;
  if (config_detail::looks_like_netcdf(text))
    throw ConfigError(where +
                      ": this is a NetCDF file (a dataset or a trained network), not a "
                      "network description; the network is JSON text (a trained .nc "
                      "network is for nn-predict -n)");
  const Json root = config_detail::parse_json_text(text, where);
  NetworkSpec spec = NetworkParser(where).parse(root);
  spec.source = source;
  return spec;
}

NetworkSpec load_network_json(const std::string& path) {
  return parse_network_json(config_detail::read_text_file(path, "network JSON file"), path);
}

}  // namespace nn
