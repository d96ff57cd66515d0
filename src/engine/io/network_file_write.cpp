// Writes a NetworkFile in DSSTNE's attribute layout (docs/file-formats.md, "Network files": names,
// NetCDF types and order as NNNetwork::SaveNetCDF writes them) plus our "nn_" extras (see
// network_file_layout.h). The input has been validated; errors here are I/O errors.
#include "config/layer_shapes.h"
#include "io/netcdf_strings.h"
#include "io/network_file_layout.h"

namespace nn {
namespace {

using netCDF::NcDim;
using netCDF::ncFloat;
using netCDF::NcGroup;
using netCDF::ncInt;
using netCDF::ncUint;
using netCDF::ncUint64;
using netCDF::NcVar;

class LayoutWriter {
 public:
  LayoutWriter(const NcGroup& nc, const NetworkFile& net) : nc_(nc), net_(net) {}

  void write() {
    write_globals();
    if (net_.training.present) write_training();
    uint32_(kLayersKey, net_.spec.layers.size());
    for (size_t i = 0; i < net_.spec.layers.size(); ++i) write_layer(i);
    uint32_(kWeightsKey, net_.weights.size());
    for (size_t i = 0; i < net_.weights.size(); ++i) write_weight(i);
  }

 private:
  static constexpr const char* kLayersKey = "layers";
  static constexpr const char* kWeightsKey = "weights";

  void text(const std::string& name, const std::string& value) const { nc_.putAtt(name, value); }
  void uint32_(const std::string& name, uint64_t value) const {
    nc_.putAtt(name, ncUint, static_cast<unsigned int>(value));
  }
  void uint64_(const std::string& name, uint64_t value) const {
    nc_.putAtt(name, ncUint64, static_cast<unsigned long long>(value));
  }
  void int32_(const std::string& name, int value) const { nc_.putAtt(name, ncInt, value); }
  void float_(const std::string& name, float value) const { nc_.putAtt(name, ncFloat, value); }

  // Float variables sharing one dimension (several arrays of the same length).
  void floats(const std::string& dim_name, size_t size,
              const std::vector<std::pair<std::string, FloatRun>>& vars) const {
    const NcDim dim = nc_.addDim(dim_name, size);
    for (const auto& [name, values] : vars) {
      NcVar var = nc_.addVar(name, ncFloat, dim);
      var.putVar(values.data);
    }
  }

  // Optimizer state arrays: a count attribute, one dimension, numbered variables.
  void states(const std::string& count_key, const std::string& dim_name,
              const std::string& var_prefix, const std::vector<FloatRun>& arrays) const {
    if (arrays.empty()) return;
    uint32_(count_key, arrays.size());
    std::vector<std::pair<std::string, FloatRun>> vars;
    for (size_t k = 0; k < arrays.size(); ++k)
      vars.emplace_back(var_prefix + std::to_string(k), arrays[k]);
    floats(dim_name, arrays[0].size, vars);
  }

  void write_globals() const {
    const NetworkSpec& s = net_.spec;
    float_("version", s.version);
    text("name", s.name);
    uint32_("kind", static_cast<uint32_t>(s.kind));
    uint32_("errorFunction", static_cast<uint32_t>(s.error_function));
    int32_("maxout_k", s.maxout_k);
    float_("decay", s.decay);
    float_("LRN_k", s.lrn_k);
    int32_("LRN_n", s.lrn_n);
    float_("LRN_alpha", s.lrn_alpha);
    float_("LRN_beta", s.lrn_beta);
    // DSSTNE derives both switches from the parameters when parsing JSON (LoadNeuralNetworkJSON).
    uint32_("bSparsenessPenalty", s.sparseness_penalty_beta > 0.0f);
    float_("sparsenessPenalty_p", s.sparseness_penalty_p);
    float_("sparsenessPenalty_beta", s.sparseness_penalty_beta);
    uint32_("bDenoising", s.denoising_p > 0.0f);
    float_("denoising_p", s.denoising_p);
    float_("deltaBoost_one", s.delta_boost_one);
    float_("deltaBoost_zero", s.delta_boost_zero);
    float_("SMCE_oneScale", s.smce_one_scale);
    float_("SMCE_zeroScale", s.smce_zero_scale);
    float_("SMCE_oneTarget", s.smce_one_target);
    float_("SMCE_zeroTarget", s.smce_zero_target);
    uint32_("ShuffleIndices", s.shuffle_indices);
    text("checkpoint_name", net_.checkpoint_name);
    int32_("checkpoint_interval", net_.checkpoint_interval);
    // DSSTNE's count of epochs since the last checkpoint, so that a DSSTNE run resumed from this
    // file checkpoints on the same schedule.
    int checkpoint_epochs = 0;
    if (net_.training.present && net_.checkpoint_interval > 0)
      checkpoint_epochs = static_cast<int>(net_.training.epoch % net_.checkpoint_interval);
    int32_("checkpoint_epochs", checkpoint_epochs);
    uint32_("nn_format_version", kNetworkFormatVersion);
    float_("nn_RELUSlope", s.relu_slope);
    float_("nn_ELUAlpha", s.elu_alpha);
    float_("nn_SELULambda", s.selu_lambda);
    float_("nn_ActivationMax", s.activation_max);
    if (s.softmax_targets != SoftMaxTargets::Normalized)
      uint32_("nn_SoftMaxTargets", static_cast<uint32_t>(s.softmax_targets));
  }

  void write_training() const {
    const TrainingState& t = net_.training;
    uint64_("nn_training_epoch", t.epoch);
    uint64_("nn_training_step", t.step);
    uint64_("nn_training_rng_state", t.rng_state);
    // Only a run stopped mid-epoch has these (an epoch's file stays as it always was).
    if (t.batch > 0) {
      uint64_("nn_training_batch", t.batch);
      nc_.putAtt("nn_training_epoch_loss", netCDF::ncDouble, t.epoch_loss);
    }
    uint64_("nn_training_seed", t.seed);
    uint32_("nn_training_optimizer", static_cast<uint32_t>(t.optimizer));
    float_("nn_training_alpha", t.alpha);
    float_("nn_training_lambda", t.lambda);
    float_("nn_training_lambda1", t.lambda1);
    float_("nn_training_mu", t.mu);
    float_("nn_training_mu1", t.mu1);
    uint32_("nn_training_minibatch", t.minibatch);
    float_("nn_training_smoothed_error", t.smoothed_error);
  }

  void write_layer(size_t i) const {
    const NetworkSpec& spec = net_.spec;
    const LayerSpec& l = spec.layers[i];
    auto key = [i](const std::string& k) { return layer_key(i, k); };
    text(key("name"), l.name);
    uint32_(key("kind"), static_cast<uint32_t>(l.kind));
    uint32_(key("type"), static_cast<uint32_t>(l.type));
    uint32_(key("poolingfunction"), static_cast<uint32_t>(l.pooling));
    text(key("dataSet"), l.dataset);
    uint32_(key("Nx"), l.n[0]);
    uint32_(key("Ny"), l.n[1]);
    uint32_(key("Nz"), l.n[2]);
    uint32_(key("Nw"), l.n[3]);
    uint32_(key("dimensions"), static_cast<uint32_t>(l.dimensions));
    uint32_(key("kernelX"), l.kernel[0]);
    uint32_(key("kernelY"), l.kernel[1]);
    uint32_(key("kernelZ"), l.kernel[2]);
    uint32_(key("kernelDimensions"), static_cast<uint32_t>(l.kernel_dimensions));
    uint32_(key("kernelStrideX"), l.kernel_stride[0]);
    uint32_(key("kernelStrideY"), l.kernel_stride[1]);
    uint32_(key("kernelStrideZ"), l.kernel_stride[2]);
    const auto padding = kernel_padding(spec, l);
    uint32_(key("kernelPaddingX"), padding[0]);
    uint32_(key("kernelPaddingY"), padding[1]);
    uint32_(key("kernelPaddingZ"), padding[2]);
    float_(key("pDropout"), l.p_dropout);
    uint32_(key("weightInit"), static_cast<uint32_t>(l.weight_init));
    float_(key("weightInitScale"), l.weight_init_scale);
    float_(key("biasInit"), l.bias_init);
    float_(key("weightNorm"), l.weight_norm);
    float_(key("deltaNorm"), l.delta_norm);
    uint32_(key("activation"), static_cast<uint32_t>(l.activation));
    float_(key("sparsenessPenalty_p"), l.sparseness_penalty_p);
    float_(key("sparsenessPenalty_beta"), l.sparseness_penalty_beta);
    float_(key("RELUSlope"), l.relu_slope);
    float_(key("ELUAlpha"), l.elu_alpha);
    float_(key("SELULambda"), l.selu_lambda);
    float_(key("nn_activationMax"), l.activation_max);
    if (l.parallel != ParallelMode::Auto)
      uint32_(key("nn_parallel"), static_cast<uint32_t>(l.parallel));
    if (l.normalize != RowNormalization::None)
      uint32_(key("nn_normalize"), static_cast<uint32_t>(l.normalize));
    if (l.sampling.enabled()) {
      uint32_(key("nn_samplingNegatives"), l.sampling.negatives);
      uint32_(key("nn_samplingDistribution"), static_cast<uint32_t>(l.sampling.distribution));
    }
    if (l.type == LayerType::Variational) {
      float_(key("nn_klBeta"), l.kl_beta);
      uint64_(key("nn_klAnnealSteps"), l.kl_anneal_steps);
    }
    uint32_t attributes = 0;
    if (l.sparse) attributes |= kLayerSparse;
    // DSSTNE marks sparse Input layers as denoised when the network has Denoising.p > 0
    // (LoadNeuralNetworkJSON; docs/config-reference.md, "Top-level keys").
    if (l.sparse && l.kind == LayerKind::Input && spec.denoising_p > 0.0f)
      attributes |= kLayerDenoising;
    if (l.batch_normalization) attributes |= kLayerBatchNormalization;
    uint32_(key("attributes"), attributes);
    uint32_(key("sources"), l.sources.size());
    for (size_t j = 0; j < l.sources.size(); ++j)
      text(key("source" + std::to_string(j)), l.sources[j]);
    uint32_(key("skips"), l.skips.size());
    for (size_t j = 0; j < l.skips.size(); ++j) text(key("skip" + std::to_string(j)), l.skips[j]);
    write_layer_arrays(i, l);
    if (l.features && !l.features->empty())
      write_string_variable(nc_.getId(), key("nn_featureDim"), key("nn_features"), *l.features,
                            "network file");
    uint32_(key("nn_sharedWeights"), l.shared_weights.size());
    for (size_t j = 0; j < l.shared_weights.size(); ++j) {
      const SharedWeightSpec& s = l.shared_weights[j];
      const std::string p = "nn_sharedWeight" + std::to_string(j) + "_";
      text(key(p + "sourceInputLayer"), s.source_input_layer);
      text(key(p + "sourceOutputLayer"), s.source_output_layer);
      text(key(p + "inputLayer"), s.input_layer);
      uint32_(key(p + "transposed"), s.transposed);
    }
  }

  void write_layer_arrays(size_t i, const LayerSpec& l) const {
    const LayerArrays* arrays = nullptr;
    for (const auto& a : net_.layers)
      if (a.layer == l.name) arrays = &a;
    if (!arrays || arrays->bn_scale.empty()) return;
    auto key = [i](const std::string& k) { return layer_key(i, k); };
    floats(key("bnDim"), arrays->bn_scale.size(),
           {{key("scaleBN"), run_of(arrays->bn_scale)},
            {key("biasBN"), run_of(arrays->bn_bias)},
            {key("runningMeanBN"), run_of(arrays->bn_running_mean)},
            {key("runningVarianceBN"), run_of(arrays->bn_running_variance)}});
    // Scale and bias states have the BN size; one dimension serves both lists.
    if (!arrays->bn_scale_state.empty() || !arrays->bn_bias_state.empty()) {
      const NcDim dim = nc_.addDim(key("nn_bnStateDim"), arrays->bn_scale.size());
      auto put = [&](const std::string& count_key, const std::string& prefix,
                     const std::vector<std::vector<float>>& list) {
        uint32_(key(count_key), list.size());
        for (size_t k = 0; k < list.size(); ++k) {
          NcVar var = nc_.addVar(key(prefix + std::to_string(k)), ncFloat, dim);
          var.putVar(list[k].data());
        }
      };
      put("nn_scaleBN_states", "nn_scaleBN_state", arrays->bn_scale_state);
      put("nn_biasBN_states", "nn_biasBN_state", arrays->bn_bias_state);
    }
  }

  void write_weight(size_t i) const {
    const WeightArrays& w = net_.weights[i];
    auto key = [i](const std::string& k) { return weight_key(i, k); };
    text(key("inputLayer"), w.input_layer);
    text(key("outputLayer"), w.output_layer);
    uint64_(key("width"), w.width);
    uint64_(key("height"), w.height);
    uint64_(key("length"), w.length);
    uint64_(key("depth"), w.depth);
    uint64_(key("breadth"), w.breadth);
    uint32_(key("bShared"), w.shared);
    uint32_(key("bLocked"), w.locked);
    float_(key("norm"), w.norm);
    // A NetCDF dimension of length 0 would be unlimited, so absent arrays get no variable at all
    // (DSSTNE's NNNetwork constructor then initialises the weight randomly).
    if (!w.bias.empty()) floats(key("biasDim"), w.bias.size(), {{key("bias"), run_of(w.bias)}});
    const FloatRun weights = weights_of(w);
    if (w.shared) {
      uint32_(key("bTransposed"), w.transposed);
      text(key("sourceInputLayer"), w.source_input_layer);
      text(key("sourceOutputLayer"), w.source_output_layer);
    } else if (!weights.empty()) {
      floats(key("weightDim"), weights.size, {{key("weights"), weights}});
    }
    states(key("nn_states"), key("nn_stateDim"), key("nn_state"), weight_states_of(w));
    states(key("nn_bias_states"), key("nn_biasStateDim"), key("nn_bias_state"),
           runs_of(w.bias_state));
  }

  const NcGroup& nc_;
  const NetworkFile& net_;
};

}  // namespace

void write_network_layout(const NcGroup& nc, const NetworkFile& net) {
  LayoutWriter(nc, net).write();
}

}  // namespace nn
