// Convolutional and Pooling layers in networks: sizes derived from sources (DSSTNE's rules),
// re-derivation of specs read back from files, error messages, the weight file layout and a
// .nc round trip, the network's LRN settings, and learning from 8-bit images.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "config/layer_shapes.h"
#include "conv_test_util.h"
#include "core/error.h"
#include "io/network_file.h"
#include "layers/convolutional_layer.h"
#include "layers/pooling_layer.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

namespace fs = std::filesystem;

std::string cnn_json(const std::string& extra_hidden = "", const std::string& c1_extra = "") {
  return R"({"Name": "cnn", "ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "C1", "Kind": "Hidden", "Type": "Convolutional", "N": 4, "Kernel": [5, 5],
       "Activation": "Relu")" +
         c1_extra + R"(},
      {"Name": "P1", "Kind": "Hidden", "Type": "Pooling", "Function": "Max", "Kernel": [2, 2],
       "KernelStride": [2, 2]},
      {"Name": "C2", "Kind": "Hidden", "Type": "Convolutional", "N": 6, "Kernel": [3, 3],
       "KernelStride": [2, 2], "Activation": "Relu"},)" +
         extra_hidden + R"(
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "SoftMax"}]})";
}

std::vector<ExampleSet> images(uint32_t w, uint32_t h, uint32_t c, uint32_t n = 3) {
  return {image_set("in", w, h, c, c > 1 ? 3 : 2, random_values(n * w * h * c, 1, 0, 1)),
          dense_set("out", 3, random_targets(n, 3, 2))};
}

TEST(ConvLayers, SizesDerivedFromSources) {
  Fixture f(cnn_json(), images(16, 12, 3));
  const NetworkSpec& s = f.net->spec();
  auto size = [&](const char* name) { return s.find_layer(name)->n; };
  auto dims = [&](const char* name) { return s.find_layer(name)->dimensions; };
  EXPECT_EQ(size("C1"), (std::array<uint32_t, 4>{16, 12, 4, 1}));  // stride 1 keeps the size
  EXPECT_EQ(dims("C1"), 3);
  EXPECT_EQ(size("P1"), (std::array<uint32_t, 4>{8, 6, 4, 1}));  // pooling keeps channels
  EXPECT_EQ(dims("P1"), 3);
  EXPECT_EQ(size("C2"), (std::array<uint32_t, 4>{3, 2, 6, 1}));  // (8-3)/2+1, (6-3)/2+1
  EXPECT_EQ(f.net->layer("C2").units(), 36u);
  auto* c1 = dynamic_cast<ConvolutionalLayer*>(&f.net->layer("C1"));
  ASSERT_NE(c1, nullptr);
  const ConvGeometry& g = c1->connections()[0]->geometry;
  EXPECT_EQ(g.in_channels, 3u);
  EXPECT_EQ(g.out_channels, 4u);
  EXPECT_EQ(g.pad, (std::array<uint32_t, 3>{2, 2, 0}));
  auto* p1 = dynamic_cast<PoolingLayer*>(&f.net->layer("P1"));
  ASSERT_NE(p1, nullptr);
  EXPECT_EQ(p1->pool_params()[0].geometry.pad, (std::array<uint32_t, 3>{0, 0, 0}));
}

TEST(ConvLayers, DerivationIsIdempotentAndAcceptsFullSizes) {
  Fixture f(cnn_json(), images(16, 12, 3));
  NetworkSpec again = f.net->spec();
  derive_layer_dimensions(again);
  EXPECT_EQ(again, f.net->spec());
  // A hidden convolution may give its full size when it matches.
  NetworkSpec spec = parse_network_json(cnn_json(), "t.json");
  resolve_auto_sizes(spec, f.sets);
  for (auto& l : spec.layers)
    if (l.name == "C2") l.n = {3, 2, 6, 1}, l.dimensions = 3;
  derive_layer_dimensions(spec);
  EXPECT_EQ(spec.find_layer("C2")->n, (std::array<uint32_t, 4>{3, 2, 6, 1}));
  for (auto& l : spec.layers)
    if (l.name == "C2") l.n = {4, 2, 6, 1};
  try {
    derive_layer_dimensions(spec);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("t.json: layer 'C2': N is 4x2x6, but its source 'P1' "
                                         "gives 3x2x6"),
              std::string::npos)
        << e.what();
  }
}

TEST(ConvLayers, KernelLargerThanInputGivesOne) {
  Fixture f(cnn_json(R"({"Name": "C3", "Kind": "Hidden", "Type": "Convolutional", "N": 2,
                          "Kernel": [5, 5], "Activation": "Relu"},)"),
            images(16, 12, 1));
  EXPECT_EQ(f.net->spec().find_layer("C3")->n, (std::array<uint32_t, 4>{1, 1, 2, 1}));
  auto* c3 = dynamic_cast<ConvolutionalLayer*>(&f.net->layer("C3"));
  // (5 - 3 + 1) / 2 and (5 - 2 + 1) / 2.
  EXPECT_EQ(c3->connections()[0]->geometry.pad, (std::array<uint32_t, 3>{1, 2, 0}));
}

void expect_config_error(const std::string& json, std::vector<ExampleSet> data,
                         const std::string& text) {
  try {
    Fixture f(json, std::move(data));
    ADD_FAILURE() << "expected ConfigError containing: " << text;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(ConvLayers, MaxoutPoolingDividesTheChannels) {
  // Once rejected; now C2's 6 channels pool into 3 with the default Maxout.k of 2 (details in
  // pooling_functions_test.cpp).
  Fixture f(
      cnn_json(R"({"Name": "M", "Kind": "Hidden", "Type": "Pooling", "Function": "Maxout"},)"),
      images(16, 12, 1));
  EXPECT_EQ(f.net->spec().find_layer("M")->n, (std::array<uint32_t, 4>{3, 2, 3, 1}));
}

TEST(ConvLayers, ErrorsNameTheLayerAndTheProblem) {
  expect_config_error(
      R"({"Maxout": {"k": 4}, )" +
          cnn_json(R"({"Name": "M", "Kind": "Hidden", "Type": "Pooling", "Function": "Maxout"},)")
              .substr(1),
      images(16, 12, 1),
      "test.json: layer 'M': Maxout pooling with Maxout.k = 4 needs a channel count divisible "
      "by 4, but source 'C2' has 6 channels");
  expect_config_error(
      cnn_json(R"({"Name": "X", "Kind": "Hidden", "Type": "Pooling", "Function": "Max",
                   "Kernel": [2, 2], "Source": ["C1", "C2"]},)"),
      images(16, 12, 1),
      "test.json: layer 'X': its sources give different sizes: 'C1' gives 16x12x4, 'C2' gives "
      "3x1x6");
  expect_config_error(
      cnn_json(R"({"Name": "Y", "Kind": "Hidden", "Type": "Convolutional", "N": [2, 3],
                   "Kernel": [3, 3]},)"),
      images(16, 12, 1), "test.json: layer 'Y': N is 2x3; a Convolutional layer with a 2-D Kernel");
  // Output layers keep their N: a size that does not fit is reported.
  expect_config_error(R"({"Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "out", "Kind": "Output", "Type": "Pooling", "Function": "Max", "Kernel": [2, 2],
       "KernelStride": [2, 2], "N": "auto", "DataSet": "out"}]})",
                      {image_set("in", 8, 6, 1, 2, random_values(48, 1, 0, 1)),
                       image_set("out", 4, 4, 1, 2, random_values(16, 1, 0, 1))},
                      "layer 'out': N is 4x4, but its source 'In' gives 4x3; Output layers keep");
  // Sparse inputs are not densified for convolutions.
  ExampleSet sparse = sparse_set("in", 64, {{1, 2}, {3}});
  sparse.width = 8;
  sparse.height = 8;
  sparse.dimensions = 2;
  expect_config_error(cnn_json(), {sparse, dense_set("out", 3, {1, 0, 0, 0, 1, 0})},
                      "layer 'C1': source 'In' is a sparse input; Convolutional layers need "
                      "dense sources");
}

TEST(ConvLayers, WeightLayoutAndNetworkFileRoundTrip) {
  auto data = images(10, 8, 2, 5);
  Fixture f(cnn_json("", R"(, "BatchNormalization": true)"), data, 11);
  // Batch statistics different from the initial ones, so that loading them matters.
  f.net->set_max_batch(5);
  {
    BatchLoader loader(f.bound, {}, 1);
    HostBatch hb;
    std::vector<uint32_t> ids{0, 1, 2, 3, 4};
    loader.assemble(ids.data(), 5, 1, true, hb);
    load_inputs(*f.net, f.bound, hb);
    f.net->forward({*f.backend, 5, true, 1, 1});
  }
  NetworkFile file = f.net->to_file();
  ASSERT_EQ(file.layers.size(), 1u);
  EXPECT_EQ(file.layers[0].layer, "C1");
  EXPECT_EQ(file.layers[0].bn_scale.size(), 4u);  // one per output channel
  EXPECT_NE(file.layers[0].bn_running_mean, std::vector<float>(4, 0.0f));
  ASSERT_EQ(file.weights.size(), 3u);  // C1, C2, Out (pooling has none)
  const WeightArrays& w1 = file.weights[0];
  EXPECT_EQ(w1.input_layer, "In");
  EXPECT_EQ(w1.output_layer, "C1");
  // [out channels][in channels][ky][kx]
  EXPECT_EQ((std::array<uint64_t, 5>{w1.width, w1.height, w1.length, w1.depth, w1.breadth}),
            (std::array<uint64_t, 5>{4, 2, 5, 5, 1}));
  EXPECT_EQ(w1.weights.size(), 4u * 2 * 25);
  EXPECT_EQ(w1.bias.size(), 4u);
  // The Xavier range uses fan-in = 2*25 and fan-out = 4 (not the image-sized layer strides).
  float wmax = 0;
  for (float v : w1.weights) wmax = std::max(wmax, std::fabs(v));
  EXPECT_LE(wmax, 0.5 * std::sqrt(6.0 / 54.0) + 1e-6);
  EXPECT_GT(wmax, 0.4 * std::sqrt(6.0 / 54.0));

  const fs::path path =
      fs::temp_directory_path() / ("nn_conv_rt_" + std::to_string(::getpid()) + ".nc");
  write_network_file(path.string(), file);
  NetworkFile back = read_network_file(path.string());
  fs::remove(path);
  EXPECT_EQ(back.spec.find_layer("C2")->n, (std::array<uint32_t, 4>{2, 1, 6, 1}));

  // A network built from the file's spec predicts what the original predicts.
  BoundData bound = bind_datasets(back.spec, f.sets, true, "data");
  Network g(*f.backend, back.spec, bound.sparse_inputs());
  g.load_arrays(back);
  auto outputs = [&](Network& net) {
    net.set_max_batch(5);
    BatchLoader loader(f.bound, {}, 1);
    HostBatch hb;
    std::vector<uint32_t> ids{0, 1, 2, 3, 4};
    loader.assemble(ids.data(), 5, 1, false, hb);
    load_inputs(net, f.bound, hb);
    net.forward({*f.backend, 5, false, 1, 1});
    Layer& out = net.layer("Out");
    std::vector<float> v(5 * out.units());
    f.backend->download(v.data(), out.activations(), v.size() * sizeof(float));
    return v;
  };
  EXPECT_EQ(outputs(*f.net), outputs(g));

  // Wrong kernel shape in a file: named.
  NetworkFile bad = back;
  bad.weights[0].length = 1;
  bad.weights[0].depth = 25;
  try {
    g.load_arrays(bad);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("weight 'In' -> 'C1': width x height x length x depth x "
                                         "breadth is 4x2x1x25x1, expected 4x2x5x5x1"),
              std::string::npos)
        << e.what();
  }
}

TEST(ConvLayers, LrnUsesTheNetworksSettings) {
  const std::string json = R"({"LRN": {"k": 1.0, "n": 3, "alpha": 3.0, "beta": 0.5},
    "ErrorFunction": "L2", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "L", "Kind": "Hidden", "Type": "Pooling", "Function": "LRN"},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Linear"}]})";
  // One 2x1 image with 3 channels: x = [c0: 1, 2][c1: 0, 1][c2: 2, 0].
  const std::vector<float> x{1, 2, 0, 1, 2, 0};
  Fixture f(json, {image_set("in", 2, 1, 3, 3, x), dense_set("out", 1, {0})});
  auto* lrn = dynamic_cast<PoolingLayer*>(&f.net->layer("L"));
  ASSERT_NE(lrn, nullptr);
  EXPECT_EQ(lrn->lrn_params().channels, 3u);
  EXPECT_EQ(lrn->lrn_params().plane, 2u);
  f.net->set_max_batch(1);
  auto* in = f.net->inputs()[0];
  in->load_dense(*f.backend, x.data(), 1);
  f.net->forward({*f.backend, 1, false, 1, 1});
  std::vector<float> y(6);
  f.backend->download(y.data(), lrn->activations(), 6 * sizeof(float));
  // Window of channel c: c-1..c+1. s = 1 + 3/3 * sum of squares; y = x / sqrt(s).
  const double s00 = 1 + (1 + 0), s10 = 1 + (1 + 0 + 4), s20 = 1 + (0 + 4);
  EXPECT_NEAR(y[0], 1 / std::sqrt(s00), 1e-6);
  EXPECT_NEAR(y[2], 0 / std::sqrt(s10), 1e-6);
  EXPECT_NEAR(y[4], 2 / std::sqrt(s20), 1e-6);
  const double s01 = 1 + (4 + 1), s11 = 1 + (4 + 1 + 0);
  EXPECT_NEAR(y[1], 2 / std::sqrt(s01), 1e-6);
  EXPECT_NEAR(y[3], 1 / std::sqrt(s11), 1e-6);
}

// 8-bit 8x8 images of a horizontal or a vertical bar at a random place: a small CNN learns to
// tell them apart (through the dense UChar input path: x / 256 - 0.5).
TEST(ConvLayers, LearnsFromEightBitImages) {
  const uint32_t n = 96, side = 8;
  Rng rng(3);
  ExampleSet in;
  in.name = "in";
  in.type = DataType::UChar;
  in.kind = DataKind::Image;
  in.width = in.height = side;
  in.dimensions = 2;
  in.examples = in.unique_examples = n;
  std::vector<float> labels(n * 2, 0.0f);
  for (uint32_t e = 0; e < n; ++e) {
    const bool vertical = e % 2;
    const uint32_t at = uint32_t(rng.below(side));
    for (uint32_t y = 0; y < side; ++y)
      for (uint32_t x = 0; x < side; ++x)
        in.dense.push_back(float((vertical ? x : y) == at ? 255 : rng.below(40)));
    labels[e * 2 + (vertical ? 1 : 0)] = 1.0f;
  }
  const std::string json = R"({"ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 4, "Kernel": [3, 3],
       "Activation": "Relu", "pDropout": 0.1},
      {"Name": "P", "Kind": "Hidden", "Type": "Pooling", "Function": "Max", "Kernel": [2, 2],
       "KernelStride": [2, 2]},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "SoftMax"}]})";
  Fixture f(json, {in, dense_set("out", 2, labels)});
  TrainOptions o;
  o.epochs = 30;
  o.minibatch = 16;
  o.optimizer.kind = OptimizerKind::Adam;
  o.optimizer.alpha = 0.01f;
  o.optimizer.mu = 0.9f;
  o.optimizer.mu1 = 0.999f;
  o.progress_seconds = 0;
  TrainingLoop t(*f.net, f.bound, o, null_log());
  const auto reports = t.run();
  EXPECT_LT(reports.back().data_loss, 0.2 * reports.front().data_loss);
  // Every training image classified correctly.
  f.net->set_max_batch(n);
  BatchLoader loader(f.bound, {}, 1);
  HostBatch hb;
  std::vector<uint32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0u);
  loader.assemble(ids.data(), n, 1, false, hb);
  load_inputs(*f.net, f.bound, hb);
  f.net->forward({*f.backend, n, false, 1, 1});
  std::vector<float> out(n * 2);
  f.net->layer("Out").download_activations(*f.backend, n, 2, out.data());  // rows maybe padded
  int correct = 0;
  for (uint32_t e = 0; e < n; ++e) correct += (out[e * 2 + 1] > out[e * 2]) == bool(e % 2);
  EXPECT_EQ(correct, int(n));
}

}  // namespace
}  // namespace nn::test
