// JSON network descriptions that parse: defaults, case-insensitivity, aliases, default kinds,
// names and sources, "auto" sizes, convolution/pooling keys, shared weights, and the DSSTNE test
// configurations (the validate_*.json files of DSSTNE's tst/test_data).
#include <gtest/gtest.h>

#include "config/enum_names.h"
#include "config/parse.h"
#include "core/test_util.h"

namespace nn {
namespace {

NetworkSpec parse(const std::string& text) {
  return parse_network_json(text, "net.json");
}

const char* kMinimal = R"({"Layers": [{"N": 10}, {"N": 5}]})";

TEST(NetworkJson, NetworkDefaults) {
  const NetworkSpec s = parse(kMinimal);
  EXPECT_EQ(s.source, "net.json");
  EXPECT_FLOAT_EQ(s.version, 0.9f);
  EXPECT_EQ(s.name, "");
  EXPECT_EQ(s.kind, NetworkKind::FeedForward);
  EXPECT_EQ(s.error_function, ErrorFunction::CrossEntropy);
  EXPECT_TRUE(s.shuffle_indices);
  EXPECT_FLOAT_EQ(s.lrn_k, 2.0f);
  EXPECT_EQ(s.lrn_n, 5);
  EXPECT_FLOAT_EQ(s.lrn_alpha, 1e-4f);
  EXPECT_FLOAT_EQ(s.lrn_beta, 0.75f);
  EXPECT_EQ(s.maxout_k, 2);
  EXPECT_EQ(s.sparseness_penalty_p, 0.0f);
  EXPECT_EQ(s.sparseness_penalty_beta, 0.0f);
  EXPECT_EQ(s.denoising_p, 0.0f);
  EXPECT_EQ(s.delta_boost_one, 1.0f);
  EXPECT_EQ(s.delta_boost_zero, 1.0f);
  EXPECT_FLOAT_EQ(s.smce_one_target, 0.9f);
  EXPECT_FLOAT_EQ(s.smce_zero_target, 0.1f);
  EXPECT_EQ(s.smce_one_scale, 1.0f);
  EXPECT_EQ(s.smce_zero_scale, 1.0f);
  EXPECT_FLOAT_EQ(s.relu_slope, 0.01f);  // our deviation from DSSTNE's 1.0
  EXPECT_EQ(s.elu_alpha, 1.0f);
  EXPECT_FLOAT_EQ(s.selu_lambda, 1.050701f);
  EXPECT_EQ(s.decay, 0.0f);
}

TEST(NetworkJson, LayerDefaults) {
  const NetworkSpec s = parse(R"({"Layers": [{"N": 10}, {"N": 7}, {"N": 5}]})");
  ASSERT_EQ(s.layers.size(), 3u);
  const LayerSpec& h = s.layers[1];
  EXPECT_EQ(h.kind, LayerKind::Hidden);
  EXPECT_EQ(h.type, LayerType::FullyConnected);
  EXPECT_EQ(h.pooling, PoolingFunction::None);
  EXPECT_EQ(h.activation, Activation::Sigmoid);
  EXPECT_EQ(h.weight_init, WeightInit::Xavier);
  EXPECT_EQ(h.weight_init_scale, 1.0f);
  EXPECT_EQ(h.bias_init, 0.0f);
  EXPECT_EQ(h.weight_norm, 0.0f);
  EXPECT_EQ(h.delta_norm, 0.0f);
  EXPECT_EQ(h.p_dropout, 0.0f);
  EXPECT_FALSE(h.sparse);
  EXPECT_FALSE(h.batch_normalization);
  EXPECT_FALSE(h.n_auto);
  EXPECT_EQ(h.n, (std::array<uint32_t, 4>{7, 1, 1, 1}));
  EXPECT_EQ(h.dimensions, 1);
  EXPECT_EQ(h.kernel, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(h.kernel_stride, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(h.kernel_dimensions, 1);
  EXPECT_TRUE(h.skips.empty());
  EXPECT_TRUE(h.shared_weights.empty());
  EXPECT_TRUE(h.dataset.empty());
  // Network defaults are resolved into every layer.
  EXPECT_FLOAT_EQ(h.relu_slope, 0.01f);
  EXPECT_EQ(h.elu_alpha, 1.0f);
  EXPECT_FLOAT_EQ(h.selu_lambda, 1.050701f);
}

TEST(NetworkJson, DefaultKindsNamesAndSourcesByPosition) {
  const NetworkSpec s = parse(R"({"Layers": [{"N": 4}, {"N": 3}, {"N": 3}, {"N": 2}]})");
  ASSERT_EQ(s.layers.size(), 4u);
  EXPECT_EQ(s.layers[0].kind, LayerKind::Input);
  EXPECT_EQ(s.layers[1].kind, LayerKind::Hidden);
  EXPECT_EQ(s.layers[2].kind, LayerKind::Hidden);
  EXPECT_EQ(s.layers[3].kind, LayerKind::Output);
  EXPECT_EQ(s.layers[0].name, "Input0");
  EXPECT_EQ(s.layers[1].name, "Hidden1");
  EXPECT_EQ(s.layers[2].name, "Hidden2");
  EXPECT_EQ(s.layers[3].name, "Output3");
  EXPECT_TRUE(s.layers[0].sources.empty());
  EXPECT_EQ(s.layers[1].sources, std::vector<std::string>{"Input0"});
  EXPECT_EQ(s.layers[2].sources, std::vector<std::string>{"Hidden1"});
  EXPECT_EQ(s.layers[3].sources, std::vector<std::string>{"Hidden2"});
  EXPECT_EQ(s.find_layer("Hidden2"), &s.layers[2]);
}

TEST(NetworkJson, DefaultNameFollowsExplicitKindAndPosition) {
  const NetworkSpec s = parse(R"({"Layers": [
      {"N": 4, "Name": "in"},
      {"N": 2, "Kind": "Output", "Source": "in"},
      {"N": 3, "Kind": "Hidden", "Source": "in"},
      {"N": 2, "Kind": "Target"}]})");
  EXPECT_EQ(s.layers[1].name, "Output1");
  EXPECT_EQ(s.layers[2].name, "Hidden2");
  EXPECT_EQ(s.layers[3].name, "Target3");
  EXPECT_EQ(s.layers[3].kind, LayerKind::Target);
  EXPECT_EQ(s.layers[3].sources, std::vector<std::string>{"Hidden2"});
}

TEST(NetworkJson, KeysAreCaseInsensitiveAtEveryLevel) {
  const NetworkSpec s = parse(R"({
    "VERSION": 0.8, "name": "ci", "kInD": "autoencoder", "errorfunction": "l2",
    "shuffleINDICES": false, "reluSLOPE": 0.2, "eluALPHA": 0.5, "seluLAMBDA": 1.5, "DECAY": 0.01,
    "lrn": {"K": 3, "N": 7, "ALPHA": 0.001, "BETA": 0.5},
    "maxOUT": {"K": 4},
    "sparsenessPENALTY": {"P": 0.05, "BETA": 2},
    "DENOISING": {"P": 0.2},
    "deltaboost": {"ONE": 2, "ZERO": 0.5},
    "scaledMarginalCrossEntropy": {"ONETARGET": 1, "zerotarget": 0, "OneScale": 30, "ZEROSCALE": 2},
    "layers": [
      {"NAME": "in", "kind": "INPUT", "n": 6, "SPARSE": true, "dataset": "input"},
      {"name": "h", "KIND": "hidden", "TYPE": "fullyconnected", "N": 4, "source": "in",
       "ACTIVATION": "TANH", "pdropout": 0.25, "WEIGHTNORM": 3, "deltaNORM": 4,
       "batchnormalization": true, "SPARSENESSPENALTY": {"p": 0.1, "Beta": 1},
       "weightinit": {"SCHEME": "gaussian", "SCALE": 0.5, "BIAS": 0.1},
       "slope": 0.3, "elualpha": 0.7, "SELULAMBDA": 1.1},
      {"name": "out", "N": 6, "SOURCE": ["h"], "skip": "in", "DataSet": "output",
       "sharedweights": {"sourceinputlayer": "in", "SOURCEOUTPUTLAYER": "h",
                         "InputLayer": "h", "TRANSPOSED": true}}]})");
  EXPECT_FLOAT_EQ(s.version, 0.8f);
  EXPECT_EQ(s.name, "ci");
  EXPECT_EQ(s.kind, NetworkKind::AutoEncoder);
  EXPECT_EQ(s.error_function, ErrorFunction::L2);
  EXPECT_FALSE(s.shuffle_indices);
  EXPECT_FLOAT_EQ(s.relu_slope, 0.2f);
  EXPECT_FLOAT_EQ(s.elu_alpha, 0.5f);
  EXPECT_FLOAT_EQ(s.selu_lambda, 1.5f);
  EXPECT_FLOAT_EQ(s.decay, 0.01f);
  EXPECT_FLOAT_EQ(s.lrn_k, 3);
  EXPECT_EQ(s.lrn_n, 7);
  EXPECT_FLOAT_EQ(s.lrn_alpha, 0.001f);
  EXPECT_FLOAT_EQ(s.lrn_beta, 0.5f);
  EXPECT_EQ(s.maxout_k, 4);
  EXPECT_FLOAT_EQ(s.sparseness_penalty_p, 0.05f);
  EXPECT_FLOAT_EQ(s.sparseness_penalty_beta, 2);
  EXPECT_FLOAT_EQ(s.denoising_p, 0.2f);
  EXPECT_FLOAT_EQ(s.delta_boost_one, 2);
  EXPECT_FLOAT_EQ(s.delta_boost_zero, 0.5f);
  EXPECT_EQ(s.smce_one_target, 1);
  EXPECT_EQ(s.smce_zero_target, 0);
  EXPECT_EQ(s.smce_one_scale, 30);
  EXPECT_EQ(s.smce_zero_scale, 2);

  ASSERT_EQ(s.layers.size(), 3u);
  const LayerSpec& in = s.layers[0];
  EXPECT_EQ(in.name, "in");
  EXPECT_TRUE(in.sparse);
  EXPECT_EQ(in.dataset, "input");
  EXPECT_FLOAT_EQ(in.relu_slope, 0.2f);  // Input layers get the network values

  const LayerSpec& h = s.layers[1];
  EXPECT_EQ(h.activation, Activation::Tanh);
  EXPECT_FLOAT_EQ(h.p_dropout, 0.25f);
  EXPECT_EQ(h.weight_norm, 3);
  EXPECT_EQ(h.delta_norm, 4);
  EXPECT_TRUE(h.batch_normalization);
  EXPECT_FLOAT_EQ(h.sparseness_penalty_p, 0.1f);
  EXPECT_EQ(h.sparseness_penalty_beta, 1);
  EXPECT_EQ(h.weight_init, WeightInit::Gaussian);
  EXPECT_EQ(h.weight_init_scale, 0.5f);
  EXPECT_FLOAT_EQ(h.bias_init, 0.1f);
  EXPECT_FLOAT_EQ(h.relu_slope, 0.3f);  // per-layer values override the network's
  EXPECT_FLOAT_EQ(h.elu_alpha, 0.7f);
  EXPECT_FLOAT_EQ(h.selu_lambda, 1.1f);

  const LayerSpec& out = s.layers[2];
  EXPECT_EQ(out.sources, std::vector<std::string>{"h"});
  EXPECT_EQ(out.skips, std::vector<std::string>{"in"});
  EXPECT_EQ(out.dataset, "output");
  EXPECT_FLOAT_EQ(out.relu_slope, 0.2f);
  ASSERT_EQ(out.shared_weights.size(), 1u);
  EXPECT_EQ(out.shared_weights[0].source_input_layer, "in");
  EXPECT_EQ(out.shared_weights[0].source_output_layer, "h");
  EXPECT_EQ(out.shared_weights[0].input_layer, "h");
  EXPECT_TRUE(out.shared_weights[0].transposed);
}

TEST(NetworkJson, AliasedKeysAndValues) {
  const NetworkSpec s = parse(R"({
    "LocalResponseNormalization": {"k": 1.5},
    "DataScaledMarginalCrossEntropy": {"oneScale": 4},
    "Slope": 0.125,
    "ErrorFunction": "Cross Entropy",
    "Layers": [{"N": 3},
               {"N": 3, "Activation": "relu", "RELUSlope": 0.5},
               {"N": 3, "Activation": "lrelu"},
               {"N": 3, "Activation": "elu"},
               {"N": 3, "Activation": "selu"},
               {"N": 3, "Activation": "ScaledExponentialLinear"}]})");
  EXPECT_FLOAT_EQ(s.lrn_k, 1.5f);
  EXPECT_EQ(s.smce_one_scale, 4);
  EXPECT_EQ(s.relu_slope, 0.125f);
  EXPECT_EQ(s.error_function, ErrorFunction::CrossEntropy);
  EXPECT_EQ(s.layers[1].activation, Activation::RectifiedLinear);
  EXPECT_EQ(s.layers[1].relu_slope, 0.5f);
  EXPECT_EQ(s.layers[2].activation, Activation::LeakyRectifiedLinear);
  EXPECT_EQ(s.layers[2].relu_slope, 0.125f);
  EXPECT_EQ(s.layers[3].activation, Activation::ExponentialLinear);
  EXPECT_EQ(s.layers[4].activation, Activation::ScaledExponentialLinear);
  EXPECT_EQ(s.layers[5].activation, Activation::ScaledExponentialLinear);
}

TEST(NetworkJson, LayersMayBeASingleObjectButANetworkNeedsAnOutput) {
  // One layer alone is an Input (position 0 wins), so it needs an Output elsewhere: DSSTNE's
  // single-object form is mostly used by hand-written fragments. Here the kinds are explicit.
  const auto message = test::error_of([] { parse(R"({"Layers": {"N": 3}})"); });
  EXPECT_CONTAINS(message, "net.json: Layers: the network has no Output layer");
}

TEST(NetworkJson, DimensionsFromIntegerOrArray) {
  const NetworkSpec s = parse(R"({"Layers": [
      {"N": [28, 28]}, {"N": [4, 3, 2]}, {"N": [5, 4, 3, 2]}, {"N": [9]}, {"N": 7.0}]})");
  EXPECT_EQ(s.layers[0].n, (std::array<uint32_t, 4>{28, 28, 1, 1}));
  EXPECT_EQ(s.layers[0].dimensions, 2);
  EXPECT_EQ(s.layers[1].n, (std::array<uint32_t, 4>{4, 3, 2, 1}));
  EXPECT_EQ(s.layers[1].dimensions, 3);
  EXPECT_EQ(s.layers[2].n, (std::array<uint32_t, 4>{5, 4, 3, 2}));
  EXPECT_EQ(s.layers[2].dimensions, 4);
  EXPECT_EQ(s.layers[2].units(), 120u);
  EXPECT_EQ(s.layers[3].n[0], 9u);
  EXPECT_EQ(s.layers[3].dimensions, 1);
  EXPECT_EQ(s.layers[4].n[0], 7u);  // an integral float is an integer
}

TEST(NetworkJson, AutoSizeOnInputAndOutput) {
  const NetworkSpec s = parse(R"({"Layers": [
      {"N": "auto", "DataSet": "input"}, {"N": 8}, {"N": "AUTO", "DataSet": "output"}]})");
  EXPECT_TRUE(s.layers[0].n_auto);
  EXPECT_EQ(s.layers[0].dataset, "input");
  EXPECT_FALSE(s.layers[1].n_auto);
  EXPECT_TRUE(s.layers[2].n_auto);
  EXPECT_EQ(s.layers[2].dataset, "output");
}

TEST(NetworkJson, SourcesAndSkipsAsStringsOrArrays) {
  const NetworkSpec s = parse(R"({"Layers": [
      {"Name": "a", "N": 4}, {"Name": "b", "Kind": "Input", "N": 4},
      {"Name": "h", "N": 4, "Source": ["a", "b"]},
      {"Name": "o", "N": 4, "Source": "h", "Skip": ["a", "b"]}]})");
  EXPECT_EQ(s.layers[1].kind, LayerKind::Input);
  EXPECT_EQ(s.layers[2].sources, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(s.layers[3].skips, (std::vector<std::string>{"a", "b"}));
}

TEST(NetworkJson, ConvolutionAndPoolingKeys) {
  const NetworkSpec s = parse(R"({"Layers": [
      {"Name": "img", "N": [28, 28], "DataSet": "input"},
      {"Name": "c1", "Type": "Convolutional", "N": 16, "Kernel": [5, 5], "KernelStride": 1,
       "Activation": "Relu"},
      {"Name": "p1", "Type": "Pooling", "Function": "Max", "Kernel": 2, "KernelStride": [2, 2]},
      {"Name": "l1", "Type": "Pooling", "Function": "LocalResponseNormalization"},
      {"Name": "c3", "Type": "Convolutional", "N": 8, "Kernel": [3, 3, 3],
       "KernelStride": [1, 2, 3]},
      {"Name": "out", "N": 10, "Activation": "SoftMax"}]})");
  const LayerSpec& c1 = s.layers[1];
  EXPECT_EQ(c1.type, LayerType::Convolutional);
  EXPECT_EQ(c1.kernel, (std::array<uint32_t, 3>{5, 5, 1}));
  EXPECT_EQ(c1.kernel_dimensions, 2);
  EXPECT_EQ(c1.kernel_stride, (std::array<uint32_t, 3>{1, 1, 1}));
  const LayerSpec& p1 = s.layers[2];
  EXPECT_EQ(p1.type, LayerType::Pooling);
  EXPECT_EQ(p1.pooling, PoolingFunction::Max);
  EXPECT_EQ(p1.kernel, (std::array<uint32_t, 3>{2, 1, 1}));
  EXPECT_EQ(p1.kernel_dimensions, 1);
  EXPECT_EQ(p1.kernel_stride, (std::array<uint32_t, 3>{2, 2, 1}));
  EXPECT_EQ(s.layers[3].pooling, PoolingFunction::LRN);
  EXPECT_EQ(s.layers[4].kernel, (std::array<uint32_t, 3>{3, 3, 3}));
  EXPECT_EQ(s.layers[4].kernel_dimensions, 3);
  EXPECT_EQ(s.layers[4].kernel_stride, (std::array<uint32_t, 3>{1, 2, 3}));
  EXPECT_EQ(s.layers[5].activation, Activation::SoftMax);
}

TEST(NetworkJson, DotProductPoolingGetsOneUnitPerExtraSource) {
  const NetworkSpec s = parse(R"({"Layers": [
      {"Name": "q", "N": 8}, {"Name": "d1", "Kind": "Input", "N": 8},
      {"Name": "d2", "Kind": "Input", "N": 8},
      {"Name": "dot", "Type": "Pooling", "Function": "DotProduct", "Source": ["q", "d1", "d2"]},
      {"Name": "cos", "Kind": "Output", "Type": "Pooling", "Function": "cosine",
       "Source": ["q", "d1"], "N": 99}]})");
  EXPECT_EQ(s.layers[3].n, (std::array<uint32_t, 4>{2, 1, 1, 1}));
  EXPECT_EQ(s.layers[3].dimensions, 1);
  EXPECT_EQ(s.layers[4].pooling, PoolingFunction::Cosine);
  EXPECT_EQ(s.layers[4].n[0], 1u);  // computed, as DSSTNE does, whatever N says
}

TEST(NetworkJson, SharedWeightsArrayAcrossAutoencoderHalves) {
  const NetworkSpec s = parse(R"({"Kind": "AutoEncoder", "Layers": [
      {"Name": "in", "N": 100},
      {"Name": "code", "N": 10},
      {"Name": "out", "N": 100, "SharedWeights": [
          {"SourceInputLayer": "in", "SourceOutputLayer": "code", "InputLayer": "code",
           "Transposed": true}]}]})");
  ASSERT_EQ(s.layers[2].shared_weights.size(), 1u);
  EXPECT_EQ(s.layers[2].shared_weights[0], (SharedWeightSpec{"in", "code", "code", true}));
}

TEST(NetworkJson, CommentsAndBooleanNumbersAreAccepted) {
  const NetworkSpec s = parse(R"({
    // DSSTNE's jsoncpp reader allowed comments
    "ShuffleIndices": 0, /* and 0/1 for booleans */
    "Layers": [{"N": 2, "Sparse": 1}, {"N": 2}]})");
  EXPECT_FALSE(s.shuffle_indices);
  EXPECT_TRUE(s.layers[0].sparse);
}

TEST(NetworkJson, WeightsDataIsAcceptedAndIgnored) {
  const NetworkSpec with = parse(R"({"WeightsData": "w.nc", "Layers": [{"N": 10}, {"N": 5}]})");
  EXPECT_TRUE(with == parse(kMinimal));
}

TEST(NetworkJson, LoadReadsTheFileAndNamesItAsSource) {
  test::ScratchDir dir;
  const std::string path = dir.write("net.json", kMinimal);
  const NetworkSpec s = load_network_json(path);
  EXPECT_EQ(s.source, path);
  EXPECT_EQ(s.layers.size(), 2u);
  EXPECT_EQ(s.layers[1].n[0], 5u);
}

// --- DSSTNE's test configurations (tst/test_data/validate_*.json), written from their shapes ---

TEST(NetworkJson, DsstneValidateL2_02) {
  const NetworkSpec s = parse(R"({
    "Version": 0.8, "Name": "L2 test", "Kind": "FeedForward", "ShuffleIndices": false,
    "ErrorFunction": "L2",
    "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Hidden", "Kind": "Hidden", "Type": "FullyConnected", "Source": "Input", "N": 4,
       "Activation": "Sigmoid", "Sparse": true},
      {"Name": "Output", "Kind": "Output", "Type": "FullyConnected", "DataSet": "output",
       "Source": "Input", "N": "auto", "Activation": "Linear", "Sparse": true}]})");
  EXPECT_EQ(s.error_function, ErrorFunction::L2);
  EXPECT_FALSE(s.shuffle_indices);
  ASSERT_EQ(s.layers.size(), 3u);
  EXPECT_EQ(s.layers[1].sources, std::vector<std::string>{"Input"});
  // The hidden layer dangles: the output reads the input directly.
  EXPECT_EQ(s.layers[2].sources, std::vector<std::string>{"Input"});
  EXPECT_EQ(s.layers[2].activation, Activation::Linear);
  EXPECT_TRUE(s.layers[2].n_auto);
}

TEST(NetworkJson, DsstneValidateL2LRelu) {
  for (float slope : {0.0f, 0.5f}) {
    const std::string text = R"({"Version": 0.8, "Kind": "FeedForward", "ShuffleIndices": false,
      "ErrorFunction": "L2", "Layers": [
        {"Name": "Input", "Kind": "Input", "N": 2, "DataSet": "input", "Sparse": true},
        {"Name": "Hidden", "Kind": "Hidden", "Source": "Input", "N": 2, "Activation": "LRelu",
         "Slope": )" + std::to_string(slope) +
                             R"(, "Sparse": true},
        {"Name": "Output", "Kind": "Output", "Source": "Input", "DataSet": "output", "N": 2,
         "Activation": "Linear", "Sparse": true}]})";
    const NetworkSpec s = parse(text);
    EXPECT_EQ(s.layers[1].activation, Activation::LeakyRectifiedLinear);
    EXPECT_EQ(s.layers[1].relu_slope, slope);
    EXPECT_FLOAT_EQ(s.layers[2].relu_slope, 0.01f);
  }
}

TEST(NetworkJson, DsstneValidateScaledMarginalCrossEntropy) {
  for (const char* loss : {"ScaledMarginalCrossEntropy", "DataScaledMarginalCrossEntropy"}) {
    const std::string text = std::string(R"({"Version": 0.8, "Kind": "FeedForward",
      "ShuffleIndices": false, "ErrorFunction": ")") +
                             loss + R"(",
      "ScaledMarginalCrossEntropy": {"oneTarget": 1.0, "zeroTarget": 0.0, "oneScale": 30.0,
                                     "zeroScale": 1.0},
      "Layers": [
        {"Name": "Input", "Kind": "Input", "N": 2, "DataSet": "input", "Sparse": true},
        {"Name": "Hidden", "Kind": "Hidden", "N": 2, "Activation": "Sigmoid", "Sparse": true},
        {"Name": "Output", "Kind": "Output", "DataSet": "output", "N": 2,
         "Activation": "Sigmoid", "Sparse": true}]})";
    const NetworkSpec s = parse(text);
    EXPECT_EQ(s.error_function, *enum_from_string<ErrorFunction>(loss));
    EXPECT_EQ(s.smce_one_target, 1.0f);
    EXPECT_EQ(s.smce_zero_target, 0.0f);
    EXPECT_EQ(s.smce_one_scale, 30.0f);
    EXPECT_EQ(s.smce_zero_scale, 1.0f);
    EXPECT_EQ(s.layers[2].sources, std::vector<std::string>{"Hidden"});
    EXPECT_TRUE(s.layers[1].sparse);
  }
}

TEST(NetworkJson, DsstneValidateL2_01) {
  const NetworkSpec s = parse(R"({"Version": 0.8, "ErrorFunction": "L2", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": 1, "DataSet": "input", "Sparse": true},
      {"Name": "Output", "Kind": "Output", "N": 1, "DataSet": "output", "Activation": "Linear",
       "Sparse": true}]})");
  EXPECT_EQ(s.layers[1].sources, std::vector<std::string>{"Input"});
  EXPECT_EQ(s.layers[1].units(), 1u);
}

}  // namespace
}  // namespace nn

namespace nn {
namespace {

// "Parallel" (ours): how a layer runs under several processes; case-insensitive, Auto by
// default, and written back by the JSON writer.
TEST(NetworkJson, ParallelKeyPerLayer) {
  const NetworkSpec s = parse_network_json(R"({"Layers": [{"N": 10},
      {"N": 7, "Parallel": "data"}, {"N": 5, "Parallel": "Model"}]})",
                                           "net.json");
  EXPECT_EQ(s.layers[0].parallel, ParallelMode::Auto);
  EXPECT_EQ(s.layers[1].parallel, ParallelMode::Data);
  EXPECT_EQ(s.layers[2].parallel, ParallelMode::Model);
  EXPECT_TRUE(parse_network_json(network_spec_to_json(s), "again.json") == s);
  const std::string m = test::error_of([] {
    parse_network_json(R"({"Layers": [{"N": 10}, {"N": 5, "Parallel": "Pipeline"}]})", "net.json");
  });
  EXPECT_NE(m.find("Parallel"), std::string::npos) << m;
  EXPECT_NE(m.find("\"Auto\", \"Data\" or \"Model\""), std::string::npos) << m;
}

}  // namespace
}  // namespace nn
