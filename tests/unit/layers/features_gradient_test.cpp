// Central-difference gradient checks of the layer features through whole networks (training-mode
// forward): shared weights (plain, transposed, transposed from a sparse input), batch
// normalisation, the sparseness penalty (network-wide and per layer), dropout on dense inputs
// and hidden layers, WeightNorm/DeltaNorm when they do not clip, several inputs and outputs,
// and all of them together.
#include <gtest/gtest.h>

#include "features_test_util.h"

namespace nn::test {
namespace {

constexpr uint32_t kRows = 8;

// Analog input (sparse or densified) and indicator targets (sparse or densified).
std::vector<ExampleSet> data(bool sparse_input, bool sparse_target, uint32_t in_w = 7,
                             uint32_t out_w = 6, const std::string& in = "in",
                             const std::string& out = "out", uint64_t seed = 11) {
  auto in_rows = random_rows(seed, kRows, in_w, 3);
  std::vector<std::vector<float>> vals(kRows, std::vector<float>{0.5f, -1.0f, 2.0f});
  ExampleSet x = sparse_set(in, in_w, in_rows, vals);
  if (!sparse_input) x = densify(x);
  ExampleSet t = sparse_set(out, out_w, random_rows(seed + 1, kRows, out_w, 2));
  if (!sparse_target) t = densify(t);
  return {x, t};
}

std::string net(const std::string& layers, const std::string& top = "") {
  return R"({"Name": "features", "ErrorFunction": "CrossEntropy", )" + top + R"( "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in", "Sparse": true}, )" +
         layers + R"(]})";
}

void check(const std::string& json, std::vector<ExampleSet> sets, int min_checked = 40) {
  Fixture f(json, std::move(sets), 3);
  EXPECT_GE(check_all_gradients(f, kRows), min_checked);
}

TEST(FeaturesGradient, SharedWeightsSumTheGradientsOfEveryUse) {
  // B reuses A's matrix from In: the shared matrix's gradient is the sum over both uses.
  check(net(R"({"Name": "A", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
      {"Name": "B", "Kind": "Hidden", "N": 4, "Activation": "Sigmoid", "Source": "In",
       "SharedWeights": {"SourceInputLayer": "In", "SourceOutputLayer": "A", "InputLayer": "In"}},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": ["A", "B"],
       "Activation": "Sigmoid"})"),
        data(false, true));
}

TEST(FeaturesGradient, TiedAutoencoderTransposedSharingDenseAndSparseInput) {
  const std::string layers =
      R"({"Name": "H", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": "H",
       "Activation": "Sigmoid", "SharedWeights": [{"SourceInputLayer": "In",
       "SourceOutputLayer": "H", "InputLayer": "H", "Transposed": true}]})";
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse input" : "dense input");
    check(net(layers), data(sparse, true, 7, 7), 35);  // 28 + 4 + 7 entries
  }
}

TEST(FeaturesGradient, TransposedSharingFromASparseInput) {
  // G uses H->R's [5][7] matrix transposed from the 7-wide sparse input.
  const std::string layers =
      R"({"Name": "H", "Kind": "Hidden", "N": 5, "Activation": "Tanh", "Source": "In"},
      {"Name": "R", "Kind": "Hidden", "N": 7, "Activation": "Sigmoid", "Source": "H"},
      {"Name": "G", "Kind": "Hidden", "N": 5, "Activation": "Tanh", "Source": "In",
       "SharedWeights": {"SourceInputLayer": "H", "SourceOutputLayer": "R", "InputLayer": "In",
                         "Transposed": true}},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": ["R", "G"],
       "Activation": "Sigmoid"})";
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse input" : "dense input");
    check(net(layers), data(sparse, true, 7, 6));
  }
}

TEST(FeaturesGradient, BatchNormalizationOnHiddenLayers) {
  const std::string layers =
      R"({"Name": "H1", "Kind": "Hidden", "N": 5, "Activation": "Tanh",
          "BatchNormalization": true},
      {"Name": "H2", "Kind": "Hidden", "N": 4, "Activation": "Sigmoid", "BatchNormalization": true},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"})";
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse input" : "dense input");
    check(net(layers), data(sparse, false));
  }
}

TEST(FeaturesGradient, SparsenessPenaltyNetworkWideAndPerLayer) {
  // S1 uses the network's values, S2 its own; P (not Sparse) has no penalty.
  const std::string layers =
      R"({"Name": "S1", "Kind": "Hidden", "N": 5, "Activation": "Sigmoid", "Sparse": true},
      {"Name": "S2", "Kind": "Hidden", "N": 4, "Activation": "Sigmoid", "Sparse": true,
       "SparsenessPenalty": {"p": 0.3, "beta": 2.0}},
      {"Name": "P", "Kind": "Hidden", "N": 4, "Activation": "Sigmoid"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"})";
  const std::string top = R"("SparsenessPenalty": {"p": 0.1, "beta": 0.5},)";
  Fixture f(net(layers, top), data(false, true), 3);
  f.net->set_max_batch(kRows);
  FixedBatch batch(f.bound, kRows);
  OutputLosses losses(*f.net, f.bound);
  objective(*f.net, f.bound, losses, batch.hb);
  // The check below would pass without the penalty.
  EXPECT_GT(f.net->penalties(LayerContext{f.net->backend(), kRows, true, 1, 1}), 0.0);
  EXPECT_GE(check_all_gradients(f, kRows), 40);
}

TEST(FeaturesGradient, DropoutOnDenseInputAndHiddenLayersInTraining) {
  const std::string json =
      R"({"ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in", "pDropout": 0.3},
      {"Name": "H", "Kind": "Hidden", "N": 6, "Activation": "Tanh", "pDropout": 0.25},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"}]})";
  check(json, data(false, true));
}

TEST(FeaturesGradient, WeightNormAndDeltaNormThatDoNotClipLeaveGradientsAlone) {
  const std::string layers =
      R"({"Name": "H", "Kind": "Hidden", "N": 5, "Activation": "Tanh", "WeightNorm": 100,
          "DeltaNorm": 1000},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid",
       "DeltaNorm": 1000})";
  check(net(layers), data(true, true));
}

TEST(FeaturesGradient, TwoInputsAndTwoOutputs) {
  std::vector<ExampleSet> sets = data(true, true, 7, 6, "in", "out1", 21);
  std::vector<ExampleSet> more = data(false, false, 5, 3, "in2", "out2", 31);
  sets.insert(sets.end(), more.begin(), more.end());
  check(R"({"ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "In1", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "In2", "Kind": "Input", "N": "auto", "DataSet": "in2"},
      {"Name": "H", "Kind": "Hidden", "N": 5, "Activation": "Tanh", "Source": ["In1", "In2"]},
      {"Name": "Out1", "Kind": "Output", "N": "auto", "DataSet": "out1", "Source": "H",
       "Activation": "Sigmoid"},
      {"Name": "Out2", "Kind": "Output", "N": "auto", "DataSet": "out2", "Source": ["H", "In2"],
       "Activation": "Sigmoid"}]})",
        sets);
}

TEST(FeaturesGradient, AllFeaturesTogether) {
  const std::string layers =
      R"({"Name": "H", "Kind": "Hidden", "N": 5, "Activation": "Sigmoid", "Sparse": true,
          "BatchNormalization": true, "pDropout": 0.2},
      {"Name": "K", "Kind": "Hidden", "N": 5, "Activation": "Tanh", "Source": "In",
       "SharedWeights": {"SourceInputLayer": "In", "SourceOutputLayer": "H", "InputLayer": "In"}},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": ["H", "K"],
       "Activation": "Sigmoid", "SharedWeights": {"SourceInputLayer": "In",
       "SourceOutputLayer": "H", "InputLayer": "H", "Transposed": true}})";
  check(net(layers, R"("SparsenessPenalty": {"p": 0.2, "beta": 0.3},)"), data(true, true, 7, 7));
}

}  // namespace
}  // namespace nn::test
