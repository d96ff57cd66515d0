// MaxOut, ReluMax and LinearMax through whole networks: forward values computed by hand from the
// weights, central-difference gradient checks (with sparse and dense inputs, batch normalisation,
// skips, dropout, MaxOut as the output layer), network-file round trips and configuration errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "config/network_spec.h"
#include "core/error.h"
#include "features_test_util.h"
#include "layers/fully_connected_layer.h"

namespace nn::test {
namespace {

constexpr uint32_t kRows = 8;

std::vector<ExampleSet> data(bool sparse_input, bool sparse_target, uint32_t in_w = 7,
                             uint32_t out_w = 6, uint64_t seed = 41) {
  auto in_rows = random_rows(seed, kRows, in_w, 3);
  std::vector<std::vector<float>> vals(kRows, std::vector<float>{0.5f, -1.0f, 2.0f});
  ExampleSet x = sparse_set("in", in_w, in_rows, vals);
  if (!sparse_input) x = densify(x);
  ExampleSet t = sparse_set("out", out_w, random_rows(seed + 1, kRows, out_w, 2));
  if (!sparse_target) t = densify(t);
  return {x, t};
}

std::string net(const std::string& layers, const std::string& top = "",
                const std::string& error = "CrossEntropy") {
  return R"({"Name": "act", "ErrorFunction": ")" + error + R"(", )" + top + R"( "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in", "Sparse": true}, )" +
         layers + R"(]})";
}

void check(const std::string& json, std::vector<ExampleSet> sets, int min_checked,
           uint64_t seed = 5) {
  Fixture f(json, std::move(sets), seed);
  EXPECT_GE(check_all_gradients(f, kRows), min_checked);
}

// The input of data(false, ...) as a dense [kRows][7] matrix.
std::vector<float> dense_input() {
  const ExampleSet s = sparse_set("in", 7, random_rows(41, kRows, 7, 3),
                                  std::vector<std::vector<float>>(kRows, {0.5f, -1.0f, 2.0f}));
  std::vector<float> out(size_t(kRows) * s.width, 0.0f);
  for (uint32_t r = 0; r < kRows; ++r)
    for (uint64_t e = s.sparse_start[r]; e < s.sparse_end[r]; ++e)
      out[size_t(r) * s.width + s.sparse_index[e]] += s.sparse_value[e];
  return out;
}

TEST(MaxOutLayer, EachUnitIsTheLargestOfItsKPieces) {
  // H has 3 units of k = 4 pieces: a [7][12] matrix and 12 biases; unit j's pieces are the
  // columns 4j..4j+3.
  Fixture f(net(R"({"Name": "H", "Kind": "Hidden", "N": 3, "Activation": "MaxOut",
                    "WeightInit": {"Scheme": "Gaussian", "Scale": 1.0, "Bias": 0.1}},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"})",
                R"("Maxout": {"k": 4},)"),
            data(false, true));
  auto& h = dynamic_cast<FullyConnectedLayer&>(f.net->layer("H"));
  ASSERT_EQ(h.pre_units(), 12u);
  const auto w = h.connections()[0]->weights.value.to_host();
  const auto b = h.connections()[0]->bias.value.to_host();
  ASSERT_EQ(w.size(), 7u * 12u);
  ASSERT_EQ(b.size(), 12u);
  const auto x = dense_input();
  const auto a = predict(f, "H", kRows);
  std::vector<double> want(size_t(kRows) * 3);
  int winners[4] = {0, 0, 0, 0};
  for (uint32_t r = 0; r < kRows; ++r)
    for (uint32_t j = 0; j < 3; ++j) {
      double best = -1e300;
      int arg = 0;
      for (uint32_t i = 0; i < 4; ++i) {
        double z = b[j * 4 + i];
        for (uint32_t c = 0; c < 7; ++c) z += double(x[r * 7 + c]) * w[c * 12 + j * 4 + i];
        if (z > best) best = z, arg = int(i);
      }
      want[r * 3 + j] = best;
      ++winners[arg];
    }
  EXPECT_TRUE(all_near_d(a, want, 1e-5));
  // Every piece position wins somewhere, so the check above is not about one column only.
  for (int i = 0; i < 4; ++i) EXPECT_GT(winners[i], 0) << i;
}

TEST(MaxOutLayer, GradientsHiddenWithSparseAndDenseInputs) {
  const std::string layers =
      R"({"Name": "H", "Kind": "Hidden", "N": 4, "Activation": "MaxOut"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"})";
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse input" : "dense input");
    check(net(layers, R"("Maxout": {"k": 3},)"), data(sparse, true), 7 * 12 + 12 + 4 * 6 + 6);
  }
}

TEST(MaxOutLayer, GradientsWithBatchNormSkipAndDropout) {
  // M is batch normalised over its 2 x 5 pieces, gets S's activations after the max, and drops
  // units in training.
  const std::string layers =
      R"({"Name": "S", "Kind": "Hidden", "N": 5, "Activation": "Tanh"},
      {"Name": "M", "Kind": "Hidden", "N": 5, "Activation": "MaxOut", "Source": "In",
       "Skip": "S", "BatchNormalization": true, "pDropout": 0.2},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": "M",
       "Activation": "Sigmoid"})";
  check(net(layers), data(true, true), 100);
}

TEST(MaxOutLayer, GradientsAsAnOutputLayerWithL2) {
  const std::string layers =
      R"({"Name": "H", "Kind": "Hidden", "N": 5, "Activation": "Tanh"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "MaxOut"})";
  check(net(layers, R"("Maxout": {"k": 2},)", "L2"), data(true, false), 80);
}

TEST(MaxOutLayer, RoundTripsThroughTheNetworkFile) {
  Fixture f(net(R"({"Name": "H", "Kind": "Hidden", "N": 3, "Activation": "MaxOut"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"})",
                R"("Maxout": {"k": 3},)"),
            data(true, true));
  const NetworkFile back = file_round_trip(*f.net, "maxout");
  EXPECT_EQ(back.spec.maxout_k, 3);
  EXPECT_EQ(back.spec.layers[1].activation, Activation::MaxOut);
  EXPECT_EQ(back.weights[0].width, 9u);  // 3 units x 3 pieces
  EXPECT_EQ(back.weights[0].height, 7u);
  // Loaded into a fresh network, it predicts what the original predicts.
  Fixture g(net(R"({"Name": "H", "Kind": "Hidden", "N": 3, "Activation": "MaxOut"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"})",
                R"("Maxout": {"k": 3},)"),
            data(true, true), 99);
  g.net->load_arrays(back);
  EXPECT_EQ(predict(f, "Out", kRows), predict(g, "Out", kRows));
}

TEST(BoundedActivations, StayWithinTheirBoundsInAWholeNetwork) {
  // Large weights push many units past the bounds: ReluMax into [0, 0.5], LinearMax into
  // [-0.8, 0.8] (the network default).
  Fixture f(net(R"({"Name": "R", "Kind": "Hidden", "N": 6, "Activation": "RELUMax",
                    "ActivationMax": 0.5, "WeightInit": {"Scheme": "Gaussian", "Scale": 3}},
      {"Name": "L", "Kind": "Hidden", "N": 6, "Activation": "LinearMax", "Source": "In",
       "WeightInit": {"Scheme": "Gaussian", "Scale": 3}},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": ["R", "L"],
       "Activation": "Sigmoid"})",
                R"("ActivationMax": 0.8,)"),
            data(false, true));
  const auto r = predict(f, "R", kRows), l = predict(f, "L", kRows);
  EXPECT_EQ(*std::min_element(r.begin(), r.end()), 0.0f);
  EXPECT_EQ(*std::max_element(r.begin(), r.end()), 0.5f);
  EXPECT_EQ(*std::min_element(l.begin(), l.end()), -0.8f);
  EXPECT_EQ(*std::max_element(l.begin(), l.end()), 0.8f);
  // Some units are strictly inside, so the layers are not just saturated everywhere.
  EXPECT_TRUE(std::any_of(l.begin(), l.end(), [](float v) { return v > -0.8f && v < 0.8f; }));
}

TEST(BoundedActivations, GradientsThroughReluMaxAndLinearMax) {
  const std::string layers =
      R"({"Name": "R", "Kind": "Hidden", "N": 5, "Activation": "ReluMax", "ActivationMax": 0.6},
      {"Name": "L", "Kind": "Hidden", "N": 4, "Activation": "LinearMax"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "LinearMax",
       "ActivationMax": 2.0})";
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse input" : "dense input");
    check(net(layers, R"("ActivationMax": 0.7,)", "L2"), data(sparse, false), 60, 6);
  }
}

TEST(BoundedActivations, BoundsRoundTripThroughFilesAndJson) {
  Fixture f(net(R"({"Name": "R", "Kind": "Hidden", "N": 3, "Activation": "ReluMax",
                    "ActivationMax": 6},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"})",
                R"("ActivationMax": 0.25,)"),
            data(true, true));
  EXPECT_EQ(f.spec.activation_max, 0.25f);
  EXPECT_EQ(f.spec.layers[1].activation_max, 6.0f);
  EXPECT_EQ(f.spec.layers[2].activation_max, 0.25f);  // the network default
  const NetworkFile back = file_round_trip(*f.net, "bounded");
  EXPECT_EQ(back.spec.activation_max, 0.25f);
  EXPECT_EQ(back.spec.layers[1].activation_max, 6.0f);
  EXPECT_EQ(back.spec.layers[2].activation_max, 0.25f);
  const NetworkSpec again = parse_network_json(network_spec_to_json(f.spec), "again.json");
  EXPECT_EQ(again.layers[1].activation_max, 6.0f);
  EXPECT_EQ(again.layers[2].activation_max, 0.25f);
}

TEST(BoundedActivations, ActivationMaxMustBePositive) {
  for (const char* bad : {"0", "-1"}) {
    try {
      parse_network_json(net(R"({"Name": "R", "Kind": "Hidden", "N": 3, "Activation": "ReluMax",
                                 "ActivationMax": )" +
                             std::string(bad) + R"(},
          {"Name": "Out", "Kind": "Output", "N": 2, "DataSet": "out"})"),
                         "bad.json");
      ADD_FAILURE() << "expected ConfigError for " << bad;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("Layers[1].ActivationMax"), std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("> 0"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace nn::test
