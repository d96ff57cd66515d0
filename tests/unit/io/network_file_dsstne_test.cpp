// Networks written in DSSTNE's layout (by the raw-netCDF test helper, without any "nn_" item) load
// with the right spec and arrays, DSSTNE's optional attributes take their documented defaults,
// and the per-layer sparseness penalty is read from the layer (DSSTNE's own loader does not).
#include <gtest/gtest.h>

#include "io/dsstne_network_writer.h"
#include "io/model_io_test_support.h"
#include "io/network_file.h"

namespace nn::test {
namespace {

// Input(8, sparse) -> Hidden(4, ReLU, BN) -> Output(8, sigmoid), the output weight tied to the
// transposed input weight, as a DSSTNE autoencoder would save it.
DsstneNetwork dsstne_autoencoder() {
  DsstneNetwork net;
  net.name = "autoencoder";
  net.kind = 1;
  net.error_function = 1;  // L2
  net.sparseness_penalty_p = 0.3f;
  net.sparseness_penalty_beta = 0.7f;
  net.decay = 0.015f;
  net.checkpoint_name = "gl.nc";
  net.checkpoint_interval = 10;
  net.checkpoint_epochs = 3;

  DsstneLayer input = dsstne_fc_layer("Input", 0, 8, {}, 0, "gl_input");
  input.attributes = 1;  // Sparse
  DsstneLayer hidden = dsstne_fc_layer("Hidden", 1, 4, {"Input"}, 2);
  hidden.attributes = 4;  // BatchNormalization
  hidden.sparseness_penalty_p = 0.05f;
  hidden.sparseness_penalty_beta = 1.5f;
  hidden.relu_slope = 0.125f;
  hidden.weight_init = 1;
  hidden.weight_init_scale = 0.5f;
  hidden.bias_init = -0.25f;
  hidden.p_dropout = 0.1f;
  hidden.bn_scale = {1.0f, 1.5f, 2.0f, 2.5f};
  hidden.bn_bias = {0.0f, -0.5f, 0.25f, 0.125f};
  hidden.bn_running_mean = {0.1f, 0.2f, 0.3f, 0.4f};
  hidden.bn_running_variance = {1.0f, 2.0f, 3.0f, 4.0f};
  DsstneLayer output = dsstne_fc_layer("Output", 2, 8, {"Hidden"}, 0, "gl_output");
  net.layers = {input, hidden, output};

  DsstneWeight encoder = dsstne_fc_weight("Input", 8, "Hidden", 4);
  encoder.norm = 3.0f;
  encoder.locked = true;
  DsstneWeight decoder;
  decoder.input_layer = "Hidden";
  decoder.output_layer = "Output";
  decoder.width = 8;
  decoder.height = 4;
  decoder.shared = true;
  decoder.transposed = true;
  decoder.source_input_layer = "Input";
  decoder.source_output_layer = "Hidden";
  decoder.bias = {0, 1, 2, 3, 4, 5, 6, 7};
  net.weights = {encoder, decoder};
  return net;
}

TEST(DsstneNetworkFile, LoadsSpecAndArrays) {
  ScratchDir dir;
  const std::string path = dir.file("dsstne.nc");
  const DsstneNetwork written = dsstne_autoencoder();
  write_dsstne_network(path, written);
  const NetworkFile net = read_network_file(path);

  const NetworkSpec& s = net.spec;
  EXPECT_EQ(s.source, path);
  EXPECT_EQ(s.name, "autoencoder");
  EXPECT_EQ(s.kind, NetworkKind::AutoEncoder);
  EXPECT_EQ(s.error_function, ErrorFunction::L2);
  EXPECT_EQ(s.version, 0.9f);
  EXPECT_EQ(s.decay, 0.015f);
  EXPECT_EQ(s.sparseness_penalty_p, 0.3f);
  EXPECT_EQ(s.sparseness_penalty_beta, 0.7f);
  EXPECT_EQ(s.smce_one_target, 0.9f);
  EXPECT_TRUE(s.shuffle_indices);
  EXPECT_EQ(net.checkpoint_name, "gl.nc");
  EXPECT_EQ(net.checkpoint_interval, 10);
  // DSSTNE keeps no network-wide slope/alpha/lambda: ours keep their defaults.
  EXPECT_EQ(s.relu_slope, NetworkSpec{}.relu_slope);

  ASSERT_EQ(s.layers.size(), 3u);
  const LayerSpec& in = s.layers[0];
  EXPECT_EQ(in.name, "Input");
  EXPECT_EQ(in.kind, LayerKind::Input);
  EXPECT_EQ(in.dataset, "gl_input");
  EXPECT_TRUE(in.sparse);
  EXPECT_FALSE(in.n_auto);
  EXPECT_EQ(in.n, (std::array<uint32_t, 4>{8, 1, 1, 1}));
  EXPECT_TRUE(in.sources.empty());
  const LayerSpec& hidden = s.layers[1];
  EXPECT_EQ(hidden.kind, LayerKind::Hidden);
  EXPECT_EQ(hidden.activation, Activation::RectifiedLinear);
  EXPECT_EQ(hidden.sources, std::vector<std::string>{"Input"});
  EXPECT_TRUE(hidden.batch_normalization);
  EXPECT_FALSE(hidden.sparse);
  EXPECT_EQ(hidden.weight_init, WeightInit::CaffeXavier);
  EXPECT_EQ(hidden.weight_init_scale, 0.5f);
  EXPECT_EQ(hidden.bias_init, -0.25f);
  EXPECT_EQ(hidden.p_dropout, 0.1f);
  EXPECT_EQ(hidden.relu_slope, 0.125f);
  EXPECT_EQ(hidden.elu_alpha, 1.0f);
  // The quirk fix: the layer's own values, not the network's 0.3/0.7.
  EXPECT_EQ(hidden.sparseness_penalty_p, 0.05f);
  EXPECT_EQ(hidden.sparseness_penalty_beta, 1.5f);
  const LayerSpec& out = s.layers[2];
  EXPECT_EQ(out.kind, LayerKind::Output);
  EXPECT_EQ(out.activation, Activation::Sigmoid);
  ASSERT_EQ(out.shared_weights.size(), 1u);  // rebuilt from weight1's attributes
  EXPECT_EQ(out.shared_weights[0].source_input_layer, "Input");
  EXPECT_EQ(out.shared_weights[0].source_output_layer, "Hidden");
  EXPECT_EQ(out.shared_weights[0].input_layer, "Hidden");
  EXPECT_TRUE(out.shared_weights[0].transposed);

  ASSERT_EQ(net.weights.size(), 2u);
  const WeightArrays& enc = net.weights[0];
  EXPECT_EQ(enc.input_layer, "Input");
  EXPECT_EQ(enc.output_layer, "Hidden");
  EXPECT_EQ(enc.width, 4u);
  EXPECT_EQ(enc.height, 8u);
  EXPECT_TRUE(enc.locked);
  EXPECT_FALSE(enc.shared);
  EXPECT_EQ(enc.norm, 3.0f);
  EXPECT_EQ(enc.weights, written.weights[0].weights);
  EXPECT_EQ(enc.bias, written.weights[0].bias);
  EXPECT_TRUE(enc.weight_state.empty());
  EXPECT_TRUE(enc.bias_state.empty());
  const WeightArrays& dec = net.weights[1];
  EXPECT_TRUE(dec.shared);
  EXPECT_TRUE(dec.transposed);
  EXPECT_EQ(dec.source_input_layer, "Input");
  EXPECT_EQ(dec.source_output_layer, "Hidden");
  EXPECT_TRUE(dec.weights.empty());
  EXPECT_EQ(dec.bias, written.weights[1].bias);

  ASSERT_EQ(net.layers.size(), 1u);
  EXPECT_EQ(net.layers[0].layer, "Hidden");
  EXPECT_EQ(net.layers[0].bn_scale, written.layers[1].bn_scale);
  EXPECT_EQ(net.layers[0].bn_bias, written.layers[1].bn_bias);
  EXPECT_EQ(net.layers[0].bn_running_mean, written.layers[1].bn_running_mean);
  EXPECT_EQ(net.layers[0].bn_running_variance, written.layers[1].bn_running_variance);
  EXPECT_TRUE(net.layers[0].bn_scale_state.empty());

  EXPECT_FALSE(net.training.present);
}

TEST(DsstneNetworkFile, OptionalAttributesTakeDefaults) {
  ScratchDir dir;
  DsstneNetwork written = dsstne_autoencoder();
  written.layers[1].attributes = 0;  // no BN
  written.omit = {
      "decay",           "checkpoint_name", "checkpoint_interval",   "checkpoint_epochs",
      "weight0_bLocked", "weight0_norm",    "layer1_poolingfunction"};
  write_dsstne_network(dir.file("old.nc"), written);
  const NetworkFile net = read_network_file(dir.file("old.nc"));
  EXPECT_EQ(net.spec.decay, 0.0f);
  EXPECT_EQ(net.checkpoint_name, "checkpoint");
  EXPECT_EQ(net.checkpoint_interval, 0);
  EXPECT_FALSE(net.weights[0].locked);
  EXPECT_EQ(net.weights[0].norm, 0.0f);
  EXPECT_EQ(net.spec.layers[1].pooling, PoolingFunction::None);
  // BN variables of a layer without the BatchNormalization bit are ignored, as DSSTNE does.
  EXPECT_TRUE(net.layers.empty());
}

TEST(DsstneNetworkFile, MissingArraysMeanInitialiseLater) {
  ScratchDir dir;
  DsstneNetwork written = dsstne_autoencoder();
  written.omit = {"weight0_weights"};
  write_dsstne_network(dir.file("noweights.nc"), written);
  const NetworkFile net = read_network_file(dir.file("noweights.nc"));
  // DSSTNE initialises the whole weight when either array is missing: both come back empty.
  EXPECT_TRUE(net.weights[0].weights.empty());
  EXPECT_TRUE(net.weights[0].bias.empty());
  EXPECT_FALSE(net.weights[1].bias.empty());
}

TEST(DsstneNetworkFile, ResavedByUsAndReloadedUnchanged) {
  ScratchDir dir;
  write_dsstne_network(dir.file("dsstne.nc"), dsstne_autoencoder());
  const NetworkFile first = read_network_file(dir.file("dsstne.nc"));
  write_network_file(dir.file("ours.nc"), first);
  expect_same_network_file(first, read_network_file(dir.file("ours.nc")));
}

}  // namespace
}  // namespace nn::test
