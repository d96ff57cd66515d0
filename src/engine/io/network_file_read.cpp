// Reads DSSTNE's network layout (docs/file-formats.md, "Network files") and our "nn_" extras into
// a NetworkFile. Required/optional attributes follow DSSTNE's loader (LoadNeuralNetworkNetCDF,
// LoadNNLayerDescriptorNetCDF, LoadNNWeightDescriptorNetCDF); deviations, on purpose:
//  - per-layer sparseness penalty comes from layer<i>_sparsenessPenalty_p/_beta, not from the
//    global attributes that DSSTNE's loader reads by mistake (LoadNNLayerDescriptorNetCDF);
//  - a file with nn_format_version must carry all our extras; a file without it is DSSTNE's: no
//    training state, network-wide slope/alpha/lambda keep NetworkSpec's defaults, and each
//    layer's SharedWeights list is rebuilt from the shared weights that feed it.
#include "core/error.h"
#include "io/nc_attribute_reader.h"
#include "io/netcdf_strings.h"
#include "io/network_file_layout.h"

namespace nn {
namespace {

class LayoutReader {
 public:
  LayoutReader(const netCDF::NcFile& nc, const std::string& file, const NetcdfStorage* storage)
      : in_(nc, file), nc_id_(nc.getId()) {
    in_.set_storage(storage);
  }

  NetworkFile read() {
    ours_ = in_.has("nn_format_version");
    if (ours_) {
      const uint64_t version = in_.unsigned_value("nn_format_version", UINT32_MAX);
      if (version > kNetworkFormatVersion)
        in_.fail("nn_format_version", "is " + std::to_string(version) +
                                          ", this build reads versions up to " +
                                          std::to_string(kNetworkFormatVersion));
    }
    NetworkFile net;
    read_globals(net);
    read_training(net.training);
    const uint64_t layers = in_.unsigned_value("layers", UINT32_MAX);
    for (uint64_t i = 0; i < layers; ++i) read_layer(i, net);
    const uint64_t weights = in_.unsigned_value("weights", UINT32_MAX);
    for (uint64_t i = 0; i < weights; ++i) net.weights.push_back(read_weight(i));
    if (!ours_) rebuild_shared_weight_specs(net);
    return net;
  }

 private:
  void read_globals(NetworkFile& net) const {
    NetworkSpec& s = net.spec;
    s.source = in_.file();
    s.version = in_.finite_float("version");
    s.name = in_.text("name");
    s.kind = in_.enum_value("kind", NetworkKind::AutoEncoder);
    s.error_function = in_.enum_value("errorFunction", ErrorFunction::L2Hinge);
    s.maxout_k = in_.int32("maxout_k");
    s.decay = in_.finite_float_or("decay", 0.0f);
    s.lrn_k = in_.finite_float("LRN_k");
    s.lrn_alpha = in_.finite_float("LRN_alpha");
    s.lrn_beta = in_.finite_float("LRN_beta");
    s.lrn_n = in_.int32("LRN_n");
    // The switches are derived from the parameters (beta > 0, p > 0); required as DSSTNE does.
    in_.flag("bSparsenessPenalty");
    s.sparseness_penalty_p = in_.finite_float("sparsenessPenalty_p");
    s.sparseness_penalty_beta = in_.finite_float("sparsenessPenalty_beta");
    in_.flag("bDenoising");
    s.denoising_p = in_.finite_float("denoising_p");
    s.delta_boost_one = in_.finite_float("deltaBoost_one");
    s.delta_boost_zero = in_.finite_float("deltaBoost_zero");
    s.smce_one_scale = in_.finite_float("SMCE_oneScale");
    s.smce_zero_scale = in_.finite_float("SMCE_zeroScale");
    s.smce_one_target = in_.finite_float("SMCE_oneTarget");
    s.smce_zero_target = in_.finite_float("SMCE_zeroTarget");
    s.shuffle_indices = in_.flag("ShuffleIndices");
    net.checkpoint_name = in_.text_or("checkpoint_name", "checkpoint");
    net.checkpoint_interval = in_.int32_or("checkpoint_interval", 0);
    if (ours_) {
      s.relu_slope = in_.finite_float("nn_RELUSlope");
      s.elu_alpha = in_.finite_float("nn_ELUAlpha");
      s.selu_lambda = in_.finite_float("nn_SELULambda");
      // Added with MaxOut/ReluMax bounds; files from before it use the default.
      if (in_.has("nn_ActivationMax")) s.activation_max = in_.finite_float("nn_ActivationMax");
      // Added with Mult-DAE/Mult-VAE networks; absent means Normalized.
      if (in_.has("nn_SoftMaxTargets"))
        s.softmax_targets = in_.enum_value("nn_SoftMaxTargets", SoftMaxTargets::Raw);
    }
  }

  void read_training(TrainingState& t) const {
    t.present = in_.has("nn_training_epoch");
    if (!t.present) return;
    t.epoch = in_.unsigned_value("nn_training_epoch", UINT64_MAX);
    t.step = in_.unsigned_value("nn_training_step", UINT64_MAX);
    t.rng_state = in_.unsigned_value("nn_training_rng_state", UINT64_MAX);
    if (in_.has("nn_training_batch")) {
      t.batch = in_.unsigned_value("nn_training_batch", UINT64_MAX);
      t.epoch_loss = in_.finite_double("nn_training_epoch_loss");
    }
    t.seed = in_.unsigned_value("nn_training_seed", UINT64_MAX);
    t.optimizer = in_.enum_value("nn_training_optimizer", OptimizerKind::Adam);
    t.alpha = in_.finite_float("nn_training_alpha");
    t.lambda = in_.finite_float("nn_training_lambda");
    t.lambda1 = in_.finite_float("nn_training_lambda1");
    t.mu = in_.finite_float("nn_training_mu");
    t.mu1 = in_.finite_float("nn_training_mu1");
    t.minibatch = in_.uint32("nn_training_minibatch");
    t.smoothed_error = in_.any_float("nn_training_smoothed_error");
  }

  void read_layer(uint64_t i, NetworkFile& net) const {
    auto key = [i](const std::string& k) { return layer_key(i, k); };
    LayerSpec l;
    l.name = in_.text(key("name"));
    l.kind = in_.enum_value(key("kind"), LayerKind::Target);
    // Variational (3) is ours: a DSSTNE file stops at Pooling (2).
    l.type = in_.enum_value(key("type"), ours_ ? LayerType::Variational : LayerType::Pooling);
    if (l.type == LayerType::Pooling || in_.has(key("poolingfunction")))
      l.pooling = in_.enum_value(key("poolingfunction"), PoolingFunction::GlobalTemporal);
    l.dataset = in_.text(key("dataSet"));
    l.n_auto = false;  // sizes in a file are concrete
    const char* n_keys[] = {"Nx", "Ny", "Nz", "Nw"};
    for (int d = 0; d < 4; ++d) l.n[d] = in_.uint32(key(n_keys[d]));
    l.dimensions = static_cast<int>(in_.unsigned_value(key("dimensions"), INT32_MAX));
    const char* kernel_keys[] = {"kernelX", "kernelY", "kernelZ"};
    const char* stride_keys[] = {"kernelStrideX", "kernelStrideY", "kernelStrideZ"};
    const char* padding_keys[] = {"kernelPaddingX", "kernelPaddingY", "kernelPaddingZ"};
    for (int d = 0; d < 3; ++d) {
      l.kernel[d] = in_.uint32(key(kernel_keys[d]));
      l.kernel_stride[d] = in_.uint32(key(stride_keys[d]));
      in_.uint32(key(padding_keys[d]));  // required by DSSTNE; derived again when needed
    }
    l.kernel_dimensions = static_cast<int>(in_.unsigned_value(key("kernelDimensions"), INT32_MAX));
    l.p_dropout = in_.finite_float(key("pDropout"));
    l.weight_init = in_.enum_value(key("weightInit"), WeightInit::SELU);
    l.weight_init_scale = in_.finite_float(key("weightInitScale"));
    l.bias_init = in_.finite_float(key("biasInit"));
    l.weight_norm = in_.finite_float(key("weightNorm"));
    l.delta_norm = in_.finite_float(key("deltaNorm"));
    l.activation = in_.enum_value(key("activation"), Activation::MaxOut);
    l.sparseness_penalty_p = in_.finite_float(key("sparsenessPenalty_p"));
    l.sparseness_penalty_beta = in_.finite_float(key("sparsenessPenalty_beta"));
    l.relu_slope = in_.finite_float(key("RELUSlope"));
    l.elu_alpha = in_.finite_float(key("ELUAlpha"));
    l.selu_lambda = in_.finite_float(key("SELULambda"));
    l.activation_max = ours_ && in_.has(key("nn_activationMax"))
                           ? in_.finite_float(key("nn_activationMax"))
                           : net.spec.activation_max;
    l.maxout_k = net.spec.maxout_k;
    // The "Parallel" key (ours; absent means Auto): 0 Auto, 1 Data, 2 Model.
    if (ours_ && in_.has(key("nn_parallel"))) {
      const uint64_t mode = in_.unsigned_value(key("nn_parallel"), 2);
      l.parallel = static_cast<ParallelMode>(mode);
    }
    if (ours_ && in_.has(key("nn_normalize")))
      l.normalize = in_.enum_value(key("nn_normalize"), RowNormalization::L2);
    // "Sampling" (ours; absent means off): negatives and 0 Uniform, 1 Popularity.
    if (ours_ && in_.has(key("nn_samplingNegatives"))) {
      l.sampling.negatives =
          static_cast<uint32_t>(in_.unsigned_value(key("nn_samplingNegatives"), UINT32_MAX));
      l.sampling.distribution =
          static_cast<SamplingDistribution>(in_.unsigned_value(key("nn_samplingDistribution"), 1));
    }
    if (l.type == LayerType::Variational) {
      l.kl_beta = in_.finite_float(key("nn_klBeta"));
      l.kl_anneal_steps = in_.unsigned_value(key("nn_klAnnealSteps"), UINT64_MAX);
    }
    const uint32_t attributes = in_.uint32(key("attributes"));
    const uint32_t known = kLayerSparse | kLayerDenoising | kLayerBatchNormalization;
    if (attributes & ~known)
      in_.fail(key("attributes"), "is " + std::to_string(attributes) +
                                      ", expected a sum of Sparse=1, Denoising=2, "
                                      "BatchNormalization=4");
    l.sparse = attributes & kLayerSparse;
    l.batch_normalization = attributes & kLayerBatchNormalization;
    l.sources = read_names(key("sources"), key("source"));
    l.skips = read_names(key("skips"), key("skip"));
    if (ours_) {
      const uint64_t count = in_.unsigned_value(key("nn_sharedWeights"), UINT32_MAX);
      for (uint64_t j = 0; j < count; ++j) {
        const std::string p = "nn_sharedWeight" + std::to_string(j) + "_";
        SharedWeightSpec s;
        s.source_input_layer = in_.text(key(p + "sourceInputLayer"));
        s.source_output_layer = in_.text(key(p + "sourceOutputLayer"));
        s.input_layer = in_.text(key(p + "inputLayer"));
        s.transposed = in_.flag(key(p + "transposed"));
        l.shared_weights.push_back(s);
      }
    }
    // DSSTNE reads BN arrays only for layers flagged BatchNormalization; missing arrays mean
    // "initialise" (scale 1, the rest 0), as in NNLayer's constructor.
    if (l.batch_normalization && in_.has_variable(key("scaleBN"))) {
      LayerArrays a;
      a.layer = l.name;
      a.bn_scale = in_.float_variable(key("scaleBN"));
      a.bn_bias = in_.float_variable(key("biasBN"));
      a.bn_running_mean = in_.float_variable(key("runningMeanBN"));
      a.bn_running_variance = in_.float_variable(key("runningVarianceBN"));
      a.bn_scale_state = read_states(key("nn_scaleBN_states"), key("nn_scaleBN_state"));
      a.bn_bias_state = read_states(key("nn_biasBN_states"), key("nn_biasBN_state"));
      net.layers.push_back(std::move(a));
    }
    // The layer's items (ours, optional): networks written before them, and DSSTNE's, have none.
    if (ours_ && has_variable(nc_id_, key("nn_features")))
      l.features = make_feature_names(read_string_variable(nc_id_, key("nn_features"), in_.file()));
    net.spec.layers.push_back(std::move(l));
  }

  std::vector<std::string> read_names(const std::string& count_key,
                                      const std::string& item_prefix) const {
    const uint64_t count = in_.unsigned_value(count_key, UINT32_MAX);
    std::vector<std::string> names;
    for (uint64_t j = 0; j < count; ++j) names.push_back(in_.text(item_prefix + std::to_string(j)));
    return names;
  }

  std::vector<std::vector<float>> read_states(const std::string& count_key,
                                              const std::string& var_prefix) const {
    std::vector<std::vector<float>> states;
    if (!in_.has(count_key)) return states;
    const uint64_t count = in_.unsigned_value(count_key, 16);
    for (uint64_t k = 0; k < count; ++k)
      states.push_back(in_.float_variable(var_prefix + std::to_string(k)));
    return states;
  }

  WeightArrays read_weight(uint64_t i) const {
    auto key = [i](const std::string& k) { return weight_key(i, k); };
    WeightArrays w;
    w.input_layer = in_.text(key("inputLayer"));
    w.output_layer = in_.text(key("outputLayer"));
    w.width = in_.unsigned_value(key("width"), UINT64_MAX);
    w.height = in_.unsigned_value(key("height"), UINT64_MAX);
    w.length = in_.unsigned_value(key("length"), UINT64_MAX);
    w.depth = in_.unsigned_value(key("depth"), UINT64_MAX);
    w.breadth = in_.unsigned_value(key("breadth"), UINT64_MAX);
    w.shared = in_.flag(key("bShared"));
    w.locked = in_.flag_or(key("bLocked"), false);
    w.norm = in_.finite_float_or(key("norm"), 0.0f);
    if (w.shared) {
      w.transposed = in_.flag(key("bTransposed"));
      w.source_input_layer = in_.text(key("sourceInputLayer"));
      w.source_output_layer = in_.text(key("sourceOutputLayer"));
    }
    // DSSTNE initialises a weight randomly when an array is absent (in the NNNetwork constructor,
    // NNNetwork.cpp): both stay empty then.
    const bool has_bias = in_.has_variable(key("bias"));
    const bool has_weights = in_.has_variable(key("weights"));
    if (w.shared) {
      if (has_bias) w.bias = in_.float_variable(key("bias"));
    } else if (has_bias && has_weights) {
      w.bias = in_.float_variable(key("bias"));
      w.weights = in_.float_variable(key("weights"));
    }
    w.weight_state = read_states(key("nn_states"), key("nn_state"));
    w.bias_state = read_states(key("nn_bias_states"), key("nn_bias_state"));
    return w;
  }

  // DSSTNE files describe sharing only on the weights; our spec keeps it on the output layer.
  static void rebuild_shared_weight_specs(NetworkFile& net) {
    for (const WeightArrays& w : net.weights) {
      if (!w.shared) continue;
      for (LayerSpec& l : net.spec.layers) {
        if (l.name != w.output_layer) continue;
        SharedWeightSpec s;
        s.source_input_layer = w.source_input_layer;
        s.source_output_layer = w.source_output_layer;
        s.input_layer = w.input_layer;
        s.transposed = w.transposed;
        l.shared_weights.push_back(s);
        break;
      }
    }
  }

  NcAttributeReader in_;
  int nc_id_;
  bool ours_ = false;
};

}  // namespace

NetworkFile read_network_layout(const netCDF::NcFile& nc, const std::string& file,
                                const NetcdfStorage* storage) {
  return LayoutReader(nc, file, storage).read();
}

}  // namespace nn
