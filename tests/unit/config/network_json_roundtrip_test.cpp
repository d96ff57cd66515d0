// network_spec_to_json writes canonical JSON that parses back to an equal spec.
#include <gtest/gtest.h>

#include "config/parse.h"
#include "core/test_util.h"

namespace nn {
namespace {

NetworkSpec parse(const std::string& text) {
  return parse_network_json(text, "net.json");
}

void expect_round_trip(const NetworkSpec& spec) {
  const std::string text = network_spec_to_json(spec);
  const NetworkSpec again = parse_network_json(text, "written.json");
  EXPECT_TRUE(again == spec) << text;
  // Writing is deterministic: a second trip gives the same text.
  EXPECT_EQ(network_spec_to_json(again), text);
}

TEST(NetworkJsonRoundTrip, MinimalNetwork) {
  expect_round_trip(parse(R"({"Layers": [{"N": 10}, {"N": 5}]})"));
}

TEST(NetworkJsonRoundTrip, EveryNetworkLevelValue) {
  expect_round_trip(parse(R"({
    "Version": 0.8, "Name": "all \"quoted\" values", "Kind": "AutoEncoder",
    "ErrorFunction": "DataScaledMarginalCrossEntropy", "ShuffleIndices": false,
    "RELUSlope": 0.1, "ELUAlpha": 0.3, "SELULambda": 1.0507009873554805, "Decay": 0.001,
    "LRN": {"k": 1.5, "n": 3, "alpha": 2e-5, "beta": 0.6}, "Maxout": {"k": 3},
    "SparsenessPenalty": {"p": 0.05, "beta": 1.5}, "Denoising": {"p": 0.1},
    "DeltaBoost": {"one": 0.7, "zero": 1.3},
    "ScaledMarginalCrossEntropy": {"oneTarget": 0.95, "zeroTarget": 0.05, "oneScale": 30,
                                   "zeroScale": 0.3},
    "Layers": [{"N": 3, "Sparse": true, "DataSet": "input"}, {"N": 3, "DataSet": "output"}]})"));
}

TEST(NetworkJsonRoundTrip, EveryLayerFeature) {
  expect_round_trip(parse(R"({"RELUSlope": 0.2, "Layers": [
      {"Name": "img", "N": [8, 8, 3], "DataSet": "images", "pDropout": 0.2},
      {"Name": "side", "Kind": "Input", "N": "auto", "DataSet": "side", "Sparse": true},
      {"Name": "c1", "Type": "Convolutional", "N": 4, "Source": "img", "Kernel": [3, 3],
       "KernelStride": [2, 2], "Activation": "relu", "WeightInit": {"Scheme": "CaffeXavier",
       "Scale": 0.5, "Bias": 0.01}},
      {"Name": "p1", "Type": "Pooling", "Function": "Max", "Kernel": 2, "KernelStride": 2},
      {"Name": "c3", "Type": "Convolutional", "N": 2, "Kernel": [3, 3, 3],
       "KernelStride": [1, 1, 2]},
      {"Name": "h", "N": 16, "Source": ["c3", "side"], "Activation": "lrelu", "Slope": 0.05,
       "ELUAlpha": 0.9, "SELULambda": 1.2, "WeightNorm": 2.5, "DeltaNorm": 1.25,
       "BatchNormalization": true, "SparsenessPenalty": {"p": 0.1, "beta": 0.5}},
      {"Name": "code", "N": 4, "Activation": "SELU", "WeightInit": {"Scheme": "SELU"}},
      {"Name": "dot", "Type": "Pooling", "Function": "Cosine", "Source": ["code", "h", "h2"]},
      {"Name": "h2", "N": 16, "Source": "code", "Activation": "Tanh",
       "SharedWeights": {"SourceInputLayer": "h", "SourceOutputLayer": "code",
                         "InputLayer": "code", "Transposed": true}},
      {"Name": "t", "Kind": "Target", "N": 2, "Source": "h2"},
      {"Name": "out", "Kind": "Output", "N": "auto", "DataSet": "labels", "Source": "h2",
       "Skip": ["h"], "Activation": "SoftMax", "pDropout": 0.5}]})"));
}

TEST(NetworkJsonRoundTrip, MultVaeKeys) {
  // Ours: SoftMaxTargets, an Input's Normalize, a Variational layer and its KL weight.
  const NetworkSpec s = parse(R"({"SoftMaxTargets": "Raw", "Layers": [
      {"Name": "in", "N": "auto", "DataSet": "input", "Sparse": true, "Normalize": "L2"},
      {"Name": "z", "Type": "Variational", "N": 4, "KL": {"Beta": 0.2, "AnnealSteps": 1000}},
      {"Name": "z1", "Type": "Variational", "N": 3},
      {"Name": "out", "Kind": "Output", "N": "auto", "DataSet": "output",
       "Activation": "SoftMax"}]})");
  EXPECT_EQ(s.softmax_targets, SoftMaxTargets::Raw);
  EXPECT_EQ(s.layers[0].normalize, RowNormalization::L2);
  EXPECT_EQ(s.layers[1].type, LayerType::Variational);
  EXPECT_EQ(s.layers[1].activation, Activation::Linear);
  EXPECT_FLOAT_EQ(s.layers[1].kl_beta, 0.2f);
  EXPECT_EQ(s.layers[1].kl_anneal_steps, 1000u);
  EXPECT_EQ(s.layers[2].kl_beta, 1.0f);  // the default: the plain ELBO
  EXPECT_EQ(s.layers[2].kl_anneal_steps, 0u);
  expect_round_trip(s);
  const NetworkSpec plain = parse(R"({"Layers": [{"N": 10}, {"N": 5}]})");
  EXPECT_EQ(plain.softmax_targets, SoftMaxTargets::Normalized);
  EXPECT_EQ(plain.layers[0].normalize, RowNormalization::None);
}

TEST(NetworkJsonRoundTrip, AwkwardFloatsSurviveBitForBit) {
  NetworkSpec s = parse(R"({"Layers": [{"N": 2}, {"N": 2}]})");
  s.layers[1].weight_init_scale = 0.1f;
  s.layers[1].bias_init = 1.0f / 3.0f;
  s.layers[1].weight_norm = 3.4028235e38f;
  s.layers[1].delta_norm = 1e-45f;  // smallest denormal
  s.decay = 16777217.0f;            // rounds to 16777216
  s.smce_one_scale = -0.0f;
  const std::string text = network_spec_to_json(s);
  EXPECT_CONTAINS(text, "\"Scale\": 0.1,");  // short, not 0.10000000149011612
  expect_round_trip(s);
}

TEST(NetworkJsonRoundTrip, WrittenTextUsesCanonicalNames) {
  const std::string text = network_spec_to_json(parse(R"({"errorfunction": "cross entropy",
      "layers": [{"n": 2}, {"n": 2, "activation": "relu"}]})"));
  EXPECT_CONTAINS(text, "\"ErrorFunction\": \"CrossEntropy\"");
  EXPECT_CONTAINS(text, "\"Activation\": \"RectifiedLinear\"");
  EXPECT_CONTAINS(text, "\"Name\": \"Output1\"");
  EXPECT_CONTAINS(text, "\"Source\": \"Input0\"");
  EXPECT_CONTAINS(text, "\"Layers\": [");
}

}  // namespace
}  // namespace nn
