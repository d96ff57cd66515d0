// Pooling functions Maxout, DotProduct and Cosine through whole networks: derived sizes, forward
// values against naive loops over the inputs, central-difference gradient checks (Maxout after
// convolutions, DotProduct and Cosine over fully connected sources, Cosine as an output layer),
// the configuration errors, and a network-file round trip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include "config/layer_shapes.h"
#include "conv_test_util.h"
#include "core/error.h"
#include "features_test_util.h"
#include "io/network_file.h"
#include "layers/pooling_layer.h"

namespace nn::test {
namespace {

constexpr uint32_t kRows = 5;

// ---- Maxout --------------------------------------------------------------------------------

// Two 4x3 images with 6 channels ("in", "in2") and 3 dense targets.
std::vector<ExampleSet> image_pair() {
  return {image_set("in", 4, 3, 6, 3, random_values(kRows * 72, 51, -1, 1)),
          image_set("in2", 4, 3, 6, 3, random_values(kRows * 72, 52, -1, 1)),
          dense_set("out", 3, random_targets(kRows, 3, 53))};
}

std::string maxout_net(const std::string& sources, int k) {
  return R"({"Name": "mx", "Maxout": {"k": )" + std::to_string(k) + R"(}, "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "In2", "Kind": "Input", "N": "auto", "DataSet": "in2"},
      {"Name": "M", "Kind": "Hidden", "Type": "Pooling", "Function": "Maxout", "Source": )" +
         sources + R"(},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": "M"}]})";
}

// Maxout of one example: out[c][p] = max over i < k of x[(c*k + i)][p].
std::vector<double> naive_maxout(const float* x, uint32_t channels, uint32_t plane, uint32_t k) {
  std::vector<double> out(size_t(channels / k) * plane);
  for (uint32_t c = 0; c < channels / k; ++c)
    for (uint32_t p = 0; p < plane; ++p) {
      double m = -INFINITY;
      for (uint32_t i = 0; i < k; ++i) m = std::max(m, double(x[(c * k + i) * plane + p]));
      out[c * plane + p] = m;
    }
  return out;
}

TEST(MaxoutPooling, DividesTheChannelsAndKeepsTheLargestOfEachGroup) {
  const auto sets = image_pair();
  Fixture f(maxout_net(R"("In")", 3), sets);
  const LayerSpec& m = *f.net->spec().find_layer("M");
  EXPECT_EQ(m.n, (std::array<uint32_t, 4>{4, 3, 2, 1}));  // 6 channels / 3
  EXPECT_EQ(m.dimensions, 3);
  const auto got = predict(f, "M", kRows);
  std::vector<double> want;
  for (uint32_t r = 0; r < kRows; ++r) {
    const auto one = naive_maxout(sets[0].dense.data() + r * 72, 6, 12, 3);
    want.insert(want.end(), one.begin(), one.end());
  }
  EXPECT_TRUE(all_near_d(got, want, 0.0));
  // Not a plain copy of one input channel: every channel of a group wins somewhere.
  std::vector<int> wins(3, 0);
  for (uint32_t r = 0; r < kRows; ++r)
    for (uint32_t j = 0; j < 24; ++j)
      for (uint32_t i = 0; i < 3; ++i)
        if (sets[0].dense[r * 72 + ((j / 12) * 3 + i) * 12 + j % 12] == got[r * 24 + j]) ++wins[i];
  for (int i = 0; i < 3; ++i) EXPECT_GT(wins[i], 0) << i;
}

TEST(MaxoutPooling, SeveralSourcesAreSummed) {
  const auto sets = image_pair();
  Fixture f(maxout_net(R"(["In", "In2"])", 2), sets);
  EXPECT_EQ(f.net->spec().find_layer("M")->n, (std::array<uint32_t, 4>{4, 3, 3, 1}));
  const auto got = predict(f, "M", kRows);
  std::vector<double> want;
  for (uint32_t r = 0; r < kRows; ++r) {
    const auto a = naive_maxout(sets[0].dense.data() + r * 72, 6, 12, 2);
    const auto b = naive_maxout(sets[1].dense.data() + r * 72, 6, 12, 2);
    for (size_t i = 0; i < a.size(); ++i) want.push_back(a[i] + b[i]);
  }
  EXPECT_TRUE(all_near_d(got, want, 1e-6));
}

// Input images 5x4 with 2 channels (4 examples) -> layers -> sigmoid output of 4 units.
std::string conv_net(const std::string& hidden, int k) {
  return R"({"Name": "gc", "Maxout": {"k": )" + std::to_string(k) + R"(}, "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"}, )" +
         hidden + R"(,
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"}]})";
}

std::vector<ExampleSet> conv_data() {
  return {image_set("in", 5, 4, 2, 3, random_values(4 * 40, 88, -1, 1)),
          dense_set("out", 4, random_targets(4, 4, 62))};
}

// The smallest gap between the largest and the second largest piece of any Maxout group of
// `source` in the pooling layer "M". A central difference straddles a kink of the max when a
// weight change of eps moves two pieces past each other, so gradient checks need gaps well
// above eps (the data seed was picked for that).
float smallest_winning_gap(const std::string& json, const std::string& source) {
  Fixture f(json, conv_data(), 3);
  const MaxoutShape s = maxout_shape(f.net->layer(source).spec(), f.net->spec().maxout_k);
  const auto x = predict(f, source, 4);
  float gap = INFINITY;
  for (uint32_t r = 0; r < 4; ++r)
    for (uint32_t c = 0; c < s.out_channels(); ++c)
      for (uint64_t p = 0; p < s.plane; ++p) {
        std::vector<float> v;
        for (uint32_t i = 0; i < s.k; ++i)
          v.push_back(x[(size_t(r) * s.in_channels + c * s.k + i) * s.plane + p]);
        std::sort(v.rbegin(), v.rend());
        gap = std::min(gap, v[0] - v[1]);
      }
  return gap;
}

int check_conv(const std::string& hidden, int k) {
  return check_network_gradients(conv_net(hidden, k), conv_data());
}

TEST(MaxoutPooling, GradientsAfterAConvolution) {
  // C: 2 -> 6 channels, 3x3; M: 6 -> 2 channels (k = 3); Out reads M's 5x4x2.
  const std::string hidden = R"({"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 6,
                                 "Kernel": [3, 3], "Activation": "Tanh"},
                                {"Name": "M", "Kind": "Hidden", "Type": "Pooling",
                                 "Function": "Maxout"})";
  EXPECT_GT(smallest_winning_gap(conv_net(hidden, 3), "C"), 4e-3f);
  EXPECT_GT(check_conv(hidden, 3), 2 * 6 * 9 + 6 + 40 * 4 + 4 - 1);
}

TEST(MaxoutPooling, GradientsWithTwoConvolutionSourcesAndASkip) {
  // M = maxout(A) + maxout(B) + S, k = 2; the gradient reaches both convolutions and S.
  EXPECT_GT(check_conv(R"({"Name": "A", "Kind": "Hidden", "Type": "Convolutional", "N": 4,
                           "Kernel": [3, 3], "Activation": "Tanh", "Source": "In"},
                          {"Name": "B", "Kind": "Hidden", "Type": "Convolutional", "N": 4,
                           "Kernel": [1, 1], "Activation": "Sigmoid", "Source": "In"},
                          {"Name": "S", "Kind": "Hidden", "Type": "Convolutional", "N": 2,
                           "Kernel": [3, 3], "Activation": "Tanh", "Source": "In"},
                          {"Name": "M", "Kind": "Hidden", "Type": "Pooling", "Function": "Maxout",
                           "Source": ["A", "B"], "Skip": "S"})",
                       2),
            2 * 4 * 9 + 4 + 2 * 4 + 4 + 2 * 2 * 9 + 2 + 40 * 4 + 4 - 1);
}

TEST(MaxoutPooling, GradientsOverAFullyConnectedLayer) {
  // A 1-D source: its units are the channels (12 / k = 4 outputs).
  const std::string json = R"({"Name": "fc", "Maxout": {"k": 3}, "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "H", "Kind": "Hidden", "N": 12, "Activation": "Tanh"},
      {"Name": "M", "Kind": "Hidden", "Type": "Pooling", "Function": "Maxout"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"}]})";
  Fixture f(json, {dense_set("in", 6, random_values(kRows * 6, 63, -1, 1)),
                   dense_set("out", 3, random_targets(kRows, 3, 64))});
  EXPECT_EQ(f.net->layer("M").units(), 4u);
  EXPECT_GT(check_all_gradients(f, kRows, false), 6 * 12 + 12 + 4 * 3 + 3 - 1);
}

// ---- DotProduct and Cosine -----------------------------------------------------------------

std::vector<ExampleSet> query_docs() {
  return {dense_set("q", 5, random_values(kRows * 5, 71, -1, 1)),
          dense_set("d1", 5, random_values(kRows * 5, 72, -1, 1)),
          dense_set("d2", 5, random_values(kRows * 5, 73, -1, 1)),
          dense_set("out", 3, random_targets(kRows, 3, 74))};
}

double dot(const float* a, const float* b, uint32_t n) {
  double s = 0;
  for (uint32_t i = 0; i < n; ++i) s += double(a[i]) * b[i];
  return s;
}

TEST(SimilarityPooling, OneScorePerSourceAfterTheFirst) {
  const auto sets = query_docs();
  Fixture f(R"({"Name": "sim", "Layers": [
      {"Name": "Q", "Kind": "Input", "N": "auto", "DataSet": "q"},
      {"Name": "D1", "Kind": "Input", "N": "auto", "DataSet": "d1"},
      {"Name": "D2", "Kind": "Input", "N": "auto", "DataSet": "d2"},
      {"Name": "Dot", "Kind": "Hidden", "Type": "Pooling", "Function": "DotProduct",
       "Source": ["Q", "D1", "D2"]},
      {"Name": "Cos", "Kind": "Hidden", "Type": "Pooling", "Function": "Cosine",
       "Source": ["D2", "Q", "D1"]},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": ["Dot", "Cos"]}]})",
            sets);
  EXPECT_EQ(f.net->layer("Dot").units(), 2u);
  EXPECT_EQ(f.net->layer("Cos").units(), 2u);
  const float* q = sets[0].dense.data();
  const float* d1 = sets[1].dense.data();
  const float* d2 = sets[2].dense.data();
  std::vector<double> want_dot, want_cos;
  auto cosine = [](const float* a, const float* b) {
    return dot(a, b, 5) / std::sqrt(dot(a, a, 5) * dot(b, b, 5));
  };
  for (uint32_t r = 0; r < kRows; ++r) {
    want_dot.push_back(dot(q + r * 5, d1 + r * 5, 5));
    want_dot.push_back(dot(q + r * 5, d2 + r * 5, 5));
    // Cos scores Q and D1 against its first source, D2.
    want_cos.push_back(cosine(d2 + r * 5, q + r * 5));
    want_cos.push_back(cosine(d2 + r * 5, d1 + r * 5));
  }
  EXPECT_TRUE(all_near_d(predict(f, "Dot", kRows), want_dot, 1e-5));
  EXPECT_TRUE(all_near_d(predict(f, "Cos", kRows), want_cos, 1e-6));
}

std::string similarity_net(const char* function, const std::string& extra = "") {
  return std::string(R"({"Name": "sim", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "A", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
      {"Name": "B", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
      {"Name": "C", "Kind": "Hidden", "N": 4, "Activation": "Sigmoid", "Source": "In"},
      {"Name": "S", "Kind": "Hidden", "Type": "Pooling", "Function": ")") +
         function + R"(", "Source": ["A", "B", "C"])" + extra + R"(},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": "S",
       "Activation": "Sigmoid"}]})";
}

std::vector<ExampleSet> fc_data() {
  return {dense_set("in", 6, random_values(kRows * 6, 81, -1, 1)),
          dense_set("out", 3, random_targets(kRows, 3, 82))};
}

TEST(SimilarityPooling, DotProductGradientsOverThreeFullyConnectedSources) {
  Fixture f(similarity_net("DotProduct"), fc_data());
  EXPECT_EQ(f.net->layer("S").units(), 2u);
  EXPECT_GE(check_all_gradients(f, kRows, false), 3 * (6 * 4 + 4) + 2 * 3 + 3);
}

TEST(SimilarityPooling, CosineGradientsOverThreeFullyConnectedSources) {
  Fixture f(similarity_net("Cosine"), fc_data());
  EXPECT_GE(check_all_gradients(f, kRows, false), 3 * (6 * 4 + 4) + 2 * 3 + 3);
}

TEST(SimilarityPooling, CosineGradientsWithDropoutInTraining) {
  // Dropout on the pooling layer's output (training mode: the same mask for every evaluation).
  Fixture f(similarity_net("Cosine", R"(, "pDropout": 0.3)"), fc_data());
  EXPECT_GE(check_all_gradients(f, kRows, true), 3 * (6 * 4 + 4) + 2 * 3 + 3);
}

TEST(SimilarityPooling, CosineAsTheOutputLayerWithL2) {
  // Pooling layers apply no activation; the loss sees them as Linear whatever Activation says
  // (here the default, Sigmoid, which would give wrong deltas if it were used).
  Fixture f(R"({"Name": "sim", "ErrorFunction": "L2", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "A", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
      {"Name": "B", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
      {"Name": "C", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
      {"Name": "Out", "Kind": "Output", "Type": "Pooling", "Function": "Cosine",
       "Source": ["A", "B", "C"], "DataSet": "out"}]})",
            {dense_set("in", 6, random_values(kRows * 6, 83, -1, 1)),
             dense_set("out", 2, random_values(kRows * 2, 84, -1, 1))});
  EXPECT_EQ(f.net->layer("Out").units(), 2u);
  EXPECT_GE(check_all_gradients(f, kRows, false), 3 * (6 * 4 + 4));
}

TEST(SimilarityPooling, CrossEntropyOnAPoolingOutputIsRejected) {
  try {
    Fixture f(R"({"Name": "sim", "ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "A", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
      {"Name": "B", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
      {"Name": "Out", "Kind": "Output", "Type": "Pooling", "Function": "DotProduct",
       "Source": ["A", "B"], "DataSet": "out", "Activation": "Sigmoid"}]})",
              {dense_set("in", 6, random_values(kRows * 6, 83, -1, 1)),
               dense_set("out", 1, random_values(kRows, 84, 0, 1))});
    OutputLosses losses(*f.net, f.bound);
    ADD_FAILURE() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'Out': ErrorFunction CrossEntropy needs outputs "
                                         "in (0,1), but a Pooling layer applies no activation "
                                         "function; use L1 or L2"),
              std::string::npos)
        << e.what();
  }
}

// ---- errors --------------------------------------------------------------------------------

std::string error_text(const std::function<void()>& build) {
  try {
    build();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(PoolingFunctionErrors, MaxoutKMustDivideTheChannels) {
  const std::string json = R"({"Name": "mx", "Maxout": {"k": 4}, "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 6, "Kernel": [3, 3]},
      {"Name": "M", "Kind": "Hidden", "Type": "Pooling", "Function": "Maxout"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out"}]})";
  EXPECT_EQ(error_text([&] {
              Fixture f(json, {image_set("in", 5, 4, 2, 3, random_values(2 * 40, 1, 0, 1)),
                               dense_set("out", 2, {1, 0, 0, 1})});
            }),
            "test.json: layer 'M': Maxout pooling with Maxout.k = 4 needs a channel count "
            "divisible by 4, but source 'C' has 6 channels (the last dimension of its size "
            "5x4x6)");
}

TEST(PoolingFunctionErrors, SimilarityNeedsTwoSourcesOfEqualSize) {
  // The parser reports a single source with its JSON path...
  EXPECT_EQ(error_text([] {
              parse_network_json(R"({"Layers": [{"Name": "In", "N": 4},
                  {"Name": "D", "Type": "Pooling", "Function": "Cosine"}, {"N": 1}]})",
                                 "test.json");
            }),
            "test.json: Layers[1].Source: a Cosine pooling layer needs at least 2 sources, got 1");
  // ...and size derivation reports it for specs that did not come from JSON (network files).
  NetworkSpec spec = parse_network_json(similarity_net("DotProduct"), "t.json");
  resolve_auto_sizes(spec, fc_data());
  NetworkSpec one = spec;
  for (auto& l : one.layers)
    if (l.name == "S") l.sources = {"A"};
  EXPECT_EQ(error_text([&] { derive_layer_dimensions(one); }),
            "t.json: layer 'S': a DotProduct pooling layer needs at least 2 sources, got 1");
  NetworkSpec uneven = spec;
  for (auto& l : uneven.layers)
    if (l.name == "B") l.n = {5, 1, 1, 1};
  EXPECT_EQ(error_text([&] { derive_layer_dimensions(uneven); }),
            "t.json: layer 'S': its sources differ in size: 'A' has 4 units, 'B' has 5; "
            "DotProduct pooling compares sources of equal size");
  // An output layer keeps its N, which must be one score per source after the first.
  const std::string out_json = R"({"Name": "sim", "ErrorFunction": "L2", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "A", "Kind": "Hidden", "N": 4, "Source": "In"},
      {"Name": "B", "Kind": "Hidden", "N": 4, "Source": "In"},
      {"Name": "Out", "Kind": "Output", "Type": "Pooling", "Function": "DotProduct",
       "Source": ["A", "B"], "N": "auto", "DataSet": "out"}]})";
  EXPECT_EQ(error_text([&] {
              Fixture f(out_json, {dense_set("in", 6, random_values(12, 1, 0, 1)),
                                   dense_set("out", 3, {1, 0, 0, 0, 1, 0})});
            }),
            "test.json: layer 'Out': N is 3, but DotProduct pooling over 2 sources gives 1 "
            "scores (one per source after the first)");
}

TEST(PoolingFunctionErrors, OtherFunctionsFromFilesAreStillRejected) {
  // Stochastic, LCN and GlobalTemporal do not parse; a network file may still carry their codes.
  NetworkSpec spec = parse_network_json(similarity_net("DotProduct"), "t.json");
  resolve_auto_sizes(spec, fc_data());
  for (PoolingFunction f :
       {PoolingFunction::Stochastic, PoolingFunction::LCN, PoolingFunction::GlobalTemporal}) {
    NetworkSpec s = spec;
    for (auto& l : s.layers)
      if (l.name == "S") l.pooling = f;
    EXPECT_EQ(error_text([&] { derive_layer_dimensions(s); }),
              std::string("t.json: layer 'S': Pooling Function ") + to_string(f) +
                  " is not supported; supported: Max, Average, LRN, Maxout, DotProduct, Cosine");
  }
}

// ---- network file --------------------------------------------------------------------------

TEST(PoolingFunctions, RoundTripThroughTheNetworkFile) {
  const std::string json = R"({"Name": "rt", "Maxout": {"k": 2}, "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "A", "Kind": "Hidden", "N": 8, "Activation": "Tanh", "Source": "In"},
      {"Name": "B", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
      {"Name": "C", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
      {"Name": "M", "Kind": "Hidden", "Type": "Pooling", "Function": "Maxout", "Source": "A"},
      {"Name": "Dot", "Kind": "Hidden", "Type": "Pooling", "Function": "DotProduct",
       "Source": ["M", "B", "C"]},
      {"Name": "Cos", "Kind": "Hidden", "Type": "Pooling", "Function": "Cosine",
       "Source": ["M", "B", "C"]},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": ["Dot", "Cos"],
       "Activation": "Sigmoid"}]})";
  Fixture f(json, fc_data());
  const NetworkFile back = file_round_trip(*f.net, "pooling_functions");
  EXPECT_EQ(back.spec.maxout_k, 2);
  const LayerSpec* m = back.spec.find_layer("M");
  const LayerSpec* d = back.spec.find_layer("Dot");
  const LayerSpec* c = back.spec.find_layer("Cos");
  ASSERT_TRUE(m && d && c);
  EXPECT_EQ(m->pooling, PoolingFunction::Maxout);
  EXPECT_EQ(m->n, (std::array<uint32_t, 4>{4, 1, 1, 1}));
  EXPECT_EQ(d->pooling, PoolingFunction::DotProduct);
  EXPECT_EQ(c->pooling, PoolingFunction::Cosine);
  EXPECT_EQ(c->sources, (std::vector<std::string>{"M", "B", "C"}));
  EXPECT_EQ(c->n, (std::array<uint32_t, 4>{2, 1, 1, 1}));
  ASSERT_EQ(back.weights.size(), 5u);  // A, B, C and Out's two sources; pooling has none
  // A network built from the file's spec predicts what the original predicts.
  BoundData bound = bind_datasets(back.spec, f.sets, true, "data");
  Network rebuilt(*f.backend, back.spec, bound.sparse_inputs());
  rebuilt.load_arrays(back);
  auto outputs = [&](Network& net) {
    net.set_max_batch(kRows);
    FixedBatch batch(bound, kRows);
    load_inputs(net, bound, batch.hb);
    net.forward({*f.backend, kRows, false, 1, 1});
    std::vector<float> v(kRows * net.layer("Out").units());
    f.backend->download(v.data(), net.layer("Out").activations(), v.size() * sizeof(float));
    return v;
  };
  const auto original = outputs(*f.net);
  EXPECT_EQ(original, outputs(rebuilt));
  // The scores reach the output: a different set of weights changes them.
  Fixture other(json, fc_data(), 99);
  EXPECT_NE(original, outputs(*other.net));
}

}  // namespace
}  // namespace nn::test
