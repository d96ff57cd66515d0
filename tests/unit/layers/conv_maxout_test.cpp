// Activation MaxOut on Convolutional layers (channel maxout): forward values computed by hand from
// the filters, central-difference gradient checks (plain, batch normalised with a skip and
// dropout, conv -> MaxOut conv chains, a MaxOut convolutional output layer), SharedWeights
// between MaxOut and plain convolutions, WeightNorm per filter, network-file round trips and the
// errors that remain (MaxOut on Pooling layers, a file stored without the k-times channels).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "conv_test_util.h"
#include "core/error.h"
#include "features_test_util.h"
#include "layers/convolutional_layer.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

constexpr uint32_t kExamples = 4;
constexpr uint32_t kW = 5, kH = 4, kC = 2;  // input images: 5x4 with 2 channels

std::vector<ExampleSet> sets(uint64_t seed = 51) {
  return {image_set("in", kW, kH, kC, 3, random_values(kExamples * kW * kH * kC, seed, -1, 1)),
          dense_set("out", 4, random_targets(kExamples, 4, seed + 1))};
}

std::string net(const std::string& layers, int k = 2, const std::string& error = "CrossEntropy",
                const std::string& out_extra = "") {
  return R"({"Name": "convmax", "ErrorFunction": ")" + error + R"(", "Maxout": {"k": )" +
         std::to_string(k) + R"(}, "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"}, )" +
         layers + R"(,
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid")" +
         out_extra + "}]}";
}

// A MaxOut convolution of the input: N output channels, 3x3 kernel (stride 1, padding 1).
std::string maxout_conv(const std::string& name, uint32_t channels, const std::string& extra = "") {
  return R"({"Name": ")" + name + R"(", "Kind": "Hidden", "Type": "Convolutional", "N": )" +
         std::to_string(channels) + R"(, "Kernel": [3, 3], "Activation": "MaxOut")" + extra + "}";
}

ConvolutionalLayer& conv(Fixture& f, const std::string& name) {
  return dynamic_cast<ConvolutionalLayer&>(f.net->layer(name));
}

// Runs `run`, expecting an E whose message contains every one of `texts`.
template <class E, class F>
void expect_error(const F& run, std::initializer_list<const char*> texts) {
  try {
    run();
    ADD_FAILURE() << "expected an error containing: " << *texts.begin();
  } catch (const E& e) {
    for (const char* t : texts)
      EXPECT_NE(std::string(e.what()).find(t), std::string::npos) << e.what();
  }
}

// z of output channel `oc` at (x, y) of example r: bias + the 3x3 cross-correlation over every
// input channel, zero outside the image. w is [out channels][kC][3][3] (ky, kx).
double conv_at(const std::vector<float>& input, const std::vector<float>& w,
               const std::vector<float>& b, uint32_t r, uint32_t oc, int x, int y) {
  double z = b[oc];
  for (uint32_t ic = 0; ic < kC; ++ic)
    for (int ky = 0; ky < 3; ++ky)
      for (int kx = 0; kx < 3; ++kx) {
        const int ix = x + kx - 1, iy = y + ky - 1;
        if (ix < 0 || iy < 0 || ix >= int(kW) || iy >= int(kH)) continue;
        z += double(w[((oc * kC + ic) * 3 + ky) * 3 + kx]) *
             input[((r * kC + ic) * kH + iy) * kW + ix];
      }
  return z;
}

TEST(ConvMaxOut, EachChannelIsTheLargestOfItsKFilteredChannels) {
  // 3 channels of k = 3 pieces: 9 filters of 2 x 3 x 3 and 9 biases.
  const std::vector<ExampleSet> data = sets();
  Fixture f(net(maxout_conv("C", 3, R"(, "WeightInit": {"Scheme": "Gaussian", "Scale": 0.5,
                                        "Bias": 0.1})"),
                3),
            data);
  ConvolutionalLayer& c = conv(f, "C");
  ASSERT_EQ(c.units(), 3u * kW * kH);
  const auto w = c.connections()[0]->weights.value.to_host();
  const auto b = c.connections()[0]->bias.value.to_host();
  ASSERT_EQ(w.size(), 9u * kC * 9);
  ASSERT_EQ(b.size(), 9u);
  const auto a = predict(f, "C", kExamples);
  std::vector<double> want(a.size());
  int winners[3] = {0, 0, 0};
  for (uint32_t r = 0; r < kExamples; ++r)
    for (uint32_t ch = 0; ch < 3; ++ch)
      for (uint32_t y = 0; y < kH; ++y)
        for (uint32_t x = 0; x < kW; ++x) {
          double best = -1e300;
          int arg = 0;
          for (uint32_t i = 0; i < 3; ++i) {
            const double z = conv_at(data[0].dense, w, b, r, ch * 3 + i, int(x), int(y));
            if (z > best) best = z, arg = int(i);
          }
          want[((r * 3 + ch) * kH + y) * kW + x] = best;
          ++winners[arg];
        }
  EXPECT_TRUE(all_near_d(a, want, 1e-5));
  // Every piece wins somewhere, so the check is not about one filter per channel only.
  for (int i = 0; i < 3; ++i) EXPECT_GT(winners[i], 0) << i;
}

TEST(ConvMaxOut, Gradients) {
  Fixture f(net(maxout_conv("C", 2)), sets(), 5);
  EXPECT_GE(check_all_gradients(f, kExamples), (4 * kC * 9 + 4) + (2 * kW * kH * 4 + 4));
}

TEST(ConvMaxOut, GradientsWithBatchNormSkipAndDropout) {
  // M (2 channels x 3 pieces) is batch normalised over its 6 channels, gets S's activations after
  // the max, and drops units in training.
  const std::string layers =
      R"({"Name": "S", "Kind": "Hidden", "Type": "Convolutional", "N": 2, "Kernel": [1, 1],
          "Activation": "Tanh", "Source": "In"}, )" +
      maxout_conv("M", 2,
                  R"(, "Source": "In", "Skip": "S", "BatchNormalization": true,
                     "pDropout": 0.2)");
  Fixture f(net(layers, 3, "CrossEntropy", R"(, "Source": "M")"), sets(), 6);
  const int m = 6 * kC * 9 + 6 + 2 * 6;  // 6 filters, 6 biases, BN scale and bias per piece
  const int s = 2 * kC + 2, out = 2 * kW * kH * 4 + 4;
  EXPECT_GE(check_all_gradients(f, kExamples), m + s + out);
}

TEST(ConvMaxOut, GradientsThroughAChainIntoAHiddenConvolution) {
  // A MaxOut convolution reading another: its backward-data runs from the winning pieces. (At a
  // tie between two pieces the loss has a kink; the seed gives none within the step.)
  const std::string layers =
      maxout_conv("A", 2, R"(, "Source": "In")") + ", " +
      R"({"Name": "B", "Kind": "Hidden", "Type": "Convolutional", "N": 2, "Kernel": [2, 2],
          "KernelStride": [2, 2], "Activation": "MaxOut", "Source": "A"})";
  Fixture f(net(layers), sets(), 11);
  EXPECT_GT(check_all_gradients(f, kExamples), 100);
}

TEST(ConvMaxOut, GradientsAsAConvolutionalOutputLayer) {
  // Image in, image out (5x4, 2 channels), L2: the loss sees the max itself.
  const std::string json = R"({"Name": "convmax", "ErrorFunction": "L2", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "Out", "Kind": "Output", "Type": "Convolutional", "N": "auto", "DataSet": "out",
       "Kernel": [3, 3], "Activation": "MaxOut"}]})";
  Fixture f(json,
            {image_set("in", kW, kH, kC, 3, random_values(kExamples * 40, 8, -1, 1)),
             image_set("out", kW, kH, 2, 3, random_values(kExamples * 40, 9, -1, 1))},
            9);
  EXPECT_EQ(conv(f, "Out").connections()[0]->bias.size(), 4u);  // 2 channels x 2 pieces
  EXPECT_GE(check_all_gradients(f, kExamples), 4 * kC * 9 + 4);
}

// ---- SharedWeights and WeightNorm ------------------------------------------------------------

std::string shares(const std::string& owner) {
  return R"(, "Source": "In", "SharedWeights": {"SourceInputLayer": "In", "SourceOutputLayer": ")" +
         owner + R"(", "InputLayer": "In"})";
}

TEST(ConvMaxOut, SharesTheFiltersOfAPlainConvolutionWithKTimesTheChannels) {
  // A: a Linear convolution with 6 channels. M: 3 channels x 2 pieces using A's filters, so with
  // A's biases M's channel c is the larger of A's channels 2c and 2c+1.
  const std::string layers =
      R"({"Name": "A", "Kind": "Hidden", "Type": "Convolutional", "N": 6, "Kernel": [3, 3],
          "Activation": "Linear", "Source": "In"}, )" +
      maxout_conv("M", 3, shares("A"));
  Fixture f(net(layers, 2, "CrossEntropy", R"(, "Source": ["A", "M"])"), sets());
  auto& a_layer = conv(f, "A");
  auto& m = conv(f, "M");
  ASSERT_TRUE(m.connections()[0]->shared != nullptr);
  EXPECT_EQ(a_layer.connections()[0]->users, 2u);
  const std::vector<float> bias = random_values(6, 3, -0.5f, 0.5f);
  a_layer.connections()[0]->bias.value.upload(bias);
  m.connections()[0]->bias.value.upload(bias);
  const auto a = predict(f, "A", kExamples);
  std::vector<float> mv(size_t(kExamples) * m.units());
  f.net->backend().download(mv.data(), m.activations(), mv.size() * sizeof(float));
  const size_t plane = kW * kH;
  for (uint32_t r = 0; r < kExamples; ++r)
    for (uint32_t c = 0; c < 3; ++c)
      for (size_t p = 0; p < plane; ++p) {
        const float lo = a[(r * 6 + 2 * c) * plane + p], hi = a[(r * 6 + 2 * c + 1) * plane + p];
        EXPECT_NEAR(mv[(r * 3 + c) * plane + p], std::max(lo, hi), 1e-5) << r << " " << c;
      }
  // The shared bank sums the gradients of both uses.
  EXPECT_GT(check_all_gradients(f, kExamples), 6 * kC * 9);
}

TEST(ConvMaxOut, SharingNeedsTheSameNumberOfFilters) {
  // M needs 3 x 2 = 6 filters; A has 3.
  const std::string layers =
      R"({"Name": "A", "Kind": "Hidden", "Type": "Convolutional", "N": 3, "Kernel": [3, 3],
          "Activation": "Linear", "Source": "In"}, )" +
      maxout_conv("M", 3, shares("A"));
  expect_error<ConfigError>(
      [&] { Fixture f(net(layers, 2, "CrossEntropy", R"(, "Source": ["A", "M"])"), sets()); },
      {"SharedWeights[0]: the filters 'In' -> 'A' are 2 -> 3 channels",
       "but 'In' -> 'M' needs 2 -> 6 channels"});
}

TEST(ConvMaxOut, WeightNormCapsEveryPieceFilter) {
  // Large initial filters: without the cap each of the 6 filters (3 channels x 2 pieces, 2 x 3 x 3
  // weights each) would stay far longer than 0.5 after one small step; with it, every one is 0.5.
  Fixture f(net(maxout_conv("C", 3, R"(, "WeightNorm": 0.5,
                                        "WeightInit": {"Scheme": "Gaussian", "Scale": 2})")),
            sets());
  TrainingLoop t(*f.net, f.bound, sgd_options(1, 0.1f, kExamples), null_log());
  t.run();
  const auto w = conv(f, "C").connections()[0]->weights.value.to_host();
  ASSERT_EQ(w.size(), 6u * kC * 9);
  for (uint32_t filter = 0; filter < 6; ++filter) {
    double norm = 0.0;
    for (uint32_t j = 0; j < kC * 9; ++j)
      norm += double(w[filter * kC * 9 + j]) * w[filter * kC * 9 + j];
    EXPECT_NEAR(std::sqrt(norm), 0.5, 1e-4) << filter;
  }
}

// ---- network files ---------------------------------------------------------------------------

TEST(ConvMaxOut, RoundTripsThroughTheNetworkFile) {
  const std::string json =
      net(maxout_conv("C", 3, R"(, "BatchNormalization": true)"), 2, "CrossEntropy");
  Fixture f(json, sets());
  // A training epoch moves the weights and the running statistics away from their start.
  TrainingLoop t(*f.net, f.bound, sgd_options(1, 0.5f, kExamples), null_log());
  t.run();
  const NetworkFile back = file_round_trip(*f.net, "conv_maxout");
  EXPECT_EQ(back.spec.maxout_k, 2);
  EXPECT_EQ(back.spec.layers[1].activation, Activation::MaxOut);
  const WeightArrays& w = back.weights[0];
  // width = 3 channels x 2 pieces, height = input channels, then ky, kx.
  EXPECT_EQ((std::array<uint64_t, 5>{w.width, w.height, w.length, w.depth, w.breadth}),
            (std::array<uint64_t, 5>{6, kC, 3, 3, 1}));
  EXPECT_EQ(w.bias.size(), 6u);
  ASSERT_EQ(back.layers.size(), 1u);
  EXPECT_EQ(back.layers[0].bn_scale.size(), 6u);
  // Loaded into a fresh network, it predicts what the original predicts.
  Fixture g(json, sets(), 99);
  EXPECT_NE(predict(f, "Out", kExamples), predict(g, "Out", kExamples));
  g.net->load_arrays(back);
  EXPECT_EQ(predict(f, "Out", kExamples), predict(g, "Out", kExamples));
}

TEST(ConvMaxOut, AFileWithoutThePiecesIsRejected) {
  // The same layer without MaxOut stores 3 filters; the MaxOut layer needs 3 x 2.
  Fixture plain(net(R"({"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 3,
                        "Kernel": [3, 3], "Activation": "Tanh"})"),
                sets());
  Fixture f(net(maxout_conv("C", 3)), sets());
  expect_error<DataError>([&] { f.net->load_arrays(plain.net->to_file()); },
                          {"network file weight 'In' -> 'C': width x height x length x depth x "
                           "breadth is 3x2x3x3x1, expected 6x2x3x3x1"});
}

// ---- what remains an error -------------------------------------------------------------------

TEST(ConvMaxOut, MaxOutOnAPoolingLayerIsAConfigurationError) {
  const std::string layers =
      R"({"Name": "P", "Kind": "Hidden", "Type": "Pooling", "Function": "Max", "Kernel": [2, 2],
          "KernelStride": [2, 2], "Activation": "MaxOut"})";
  expect_error<ConfigError>([&] { Fixture f(net(layers), sets()); },
                            {"layer 'P': Activation MaxOut is not supported on Pooling layers "
                             "(they have no activation function)"});
  // Any other activation on a Pooling layer is ignored: Tanh pooling equals plain max pooling.
  const std::string tanh_pool =
      R"({"Name": "P", "Kind": "Hidden", "Type": "Pooling", "Function": "Max", "Kernel": [2, 2],
          "KernelStride": [2, 2], "Activation": "Tanh"})";
  const std::string plain_pool =
      R"({"Name": "P", "Kind": "Hidden", "Type": "Pooling", "Function": "Max", "Kernel": [2, 2],
          "KernelStride": [2, 2]})";
  Fixture t(net(tanh_pool), sets()), p(net(plain_pool), sets());
  const auto pooled = predict(t, "P", kExamples);
  EXPECT_EQ(pooled, predict(p, "P", kExamples));
  EXPECT_GT(*std::max_element(pooled.begin(), pooled.end()), 0.8f);  // not squashed by tanh
}

}  // namespace
}  // namespace nn::test
