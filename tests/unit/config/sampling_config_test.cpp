// The "Sampling" key (sampled output training, docs/wide-outputs.md) in network JSON and in a
// CDL's TrainingParameters: what it reads, the errors that name its path, and its round trip
// through the JSON writer.
#include <gtest/gtest.h>

#include "config/cdl_spec.h"
#include "config/parse.h"
#include "core/test_util.h"

namespace nn {
namespace {

using test::error_of;

std::string net_with(const std::string& output_keys, const std::string& hidden_keys = "") {
  return R"({"Layers": [{"Name": "In", "Kind": "Input", "N": 8},
      {"Name": "H", "Kind": "Hidden", "N": 4)" +
         hidden_keys + R"(},
      {"Name": "Out", "Kind": "Output", "N": 100, "Activation": "SoftMax")" +
         output_keys + "}]}";
}

std::string error_for(const std::string& text) {
  return error_of([&] { parse_network_json(text, "net.json"); });
}

TEST(SamplingConfig, OutputLayersReadNegativesAndDistribution) {
  NetworkSpec s = parse_network_json(
      net_with(R"(, "Sampling": {"Negatives": 2048, "Distribution": "popularity"})"), "net.json");
  EXPECT_EQ(s.layers[2].sampling.negatives, 2048u);
  EXPECT_EQ(s.layers[2].sampling.distribution, SamplingDistribution::Popularity);
  EXPECT_TRUE(s.layers[2].sampling.enabled());
  EXPECT_FALSE(s.layers[1].sampling.enabled());
  s = parse_network_json(net_with(R"(, "Sampling": {"Negatives": 5})"), "net.json");
  EXPECT_EQ(s.layers[2].sampling.distribution, SamplingDistribution::Uniform);
  // The writer keeps it: parse(write(s)) == s.
  const NetworkSpec again = parse_network_json(network_spec_to_json(s), "again.json");
  EXPECT_EQ(again.layers[2].sampling, s.layers[2].sampling);
  EXPECT_TRUE(again == s);
}

TEST(SamplingConfig, ErrorsNameThePath) {
  EXPECT_CONTAINS(error_for(net_with(R"(, "Sampling": {"Negatives": 0})")),
                  "net.json: Layers[2].Sampling.Negatives:");
  EXPECT_CONTAINS(error_for(net_with(R"(, "Sampling": {"Negatives": -3})")),
                  "Layers[2].Sampling.Negatives");
  EXPECT_CONTAINS(
      error_for(net_with(R"(, "Sampling": {"Negatives": 8, "Distribution": "Zipf"})")),
      "net.json: Layers[2].Sampling.Distribution: expected \"Uniform\" or \"Popularity\", not "
      "\"Zipf\"");
  EXPECT_CONTAINS(error_for(net_with(R"(, "Sampling": {"Distribution": "Uniform"})")),
                  "net.json: Layers[2].Sampling: \"Negatives\" is required");
  EXPECT_CONTAINS(error_for(net_with(R"(, "Sampling": {"Negativs": 8})")),
                  "Layers[2].Sampling.Negativs: unknown key; expected one of Negatives, "
                  "Distribution");
  EXPECT_CONTAINS(error_for(net_with("", R"(, "Sampling": {"Negatives": 8})")),
                  "net.json: Layers[1].Sampling: not valid on a Hidden layer; only on Output");
}

TEST(SamplingConfig, CdlTrainingParameters) {
  const char* cdl = R"({"Network": "net.json", "Command": "Train", "Data": "data.nc",
      "TrainingParameters": {"Epochs": 2, "Sampling": {"Negatives": 64}}})";
  const CdlSpec c = parse_cdl(cdl, "run.cdl");
  ASSERT_TRUE(c.training.sampling.has_value());
  EXPECT_EQ(c.training.sampling->negatives, 64u);
  EXPECT_EQ(c.training.sampling->distribution, SamplingDistribution::Uniform);
  EXPECT_FALSE(parse_cdl(R"({"Network": "n.json", "Command": "Train", "Data": "d.nc",
      "TrainingParameters": {"Epochs": 2}})",
                         "run.cdl")
                   .training.sampling.has_value());
  EXPECT_CONTAINS(error_of([] {
                    parse_cdl(R"({"Network": "n.json", "Command": "Train", "Data": "d.nc",
      "TrainingParameters": {"Epochs": 2, "Sampling": {"Negatives": 1.5}}})",
                              "run.cdl");
                  }),
                  "run.cdl: TrainingParameters.Sampling.Negatives");
}

}  // namespace
}  // namespace nn
