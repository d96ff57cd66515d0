// Finite-difference gradient checks through whole networks with Convolutional and Pooling
// layers: 2-D and 3-D convolutions with strides 1 and 2 (padded and not), a kernel larger than
// its input, conv -> conv chains (backward data into a hidden layer), several sources and skips,
// max and average pooling, LRN, batch normalisation, and a convolutional output layer.
#include <gtest/gtest.h>

#include "conv_test_util.h"

namespace nn::test {
namespace {

// Input images 7x6 with 2 channels (4 examples) -> layers -> sigmoid output of 4 units.
int check(const std::string& hidden_layers, const std::string& extra_json = "",
          bool training = false, uint32_t w = 7, uint32_t h = 6, uint32_t c = 2, int dims = 3) {
  const std::string json = R"({"Name": "gc", "ErrorFunction": "CrossEntropy", )" + extra_json +
                           R"("Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"}, )" +
                           hidden_layers + R"(,
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"}]})";
  const uint32_t n = 4;
  return check_network_gradients(
      json,
      {image_set("in", w, h, c, dims, random_values(n * w * h * c, 17, -1, 1)),
       dense_set("out", 4, random_targets(n, 4, 18))},
      training);
}

TEST(ConvGradientCheck, Conv2DStride1SamePaddingThenMaxPool) {
  EXPECT_GT(check(R"({"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 3,
                      "Kernel": [3, 3], "Activation": "Tanh"},
                     {"Name": "P", "Kind": "Hidden", "Type": "Pooling", "Function": "Max",
                      "Kernel": [2, 2], "KernelStride": [2, 2]})"),
            100);
}

TEST(ConvGradientCheck, Conv2DStride2NoPaddingThenAveragePool) {
  EXPECT_GT(check(R"({"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 3,
                      "Kernel": [3, 3], "KernelStride": [2, 2], "Activation": "Sigmoid"},
                     {"Name": "P", "Kind": "Hidden", "Type": "Pooling", "Function": "Average",
                      "Kernel": [2, 2], "KernelStride": [1, 1]})"),
            50);
}

TEST(ConvGradientCheck, ConvChainEvenKernelAndKernelLargerThanInput) {
  // C1 keeps 7x6 (even kernel, DSSTNE's stride-1 rule); C2's 9x9 kernel exceeds its input.
  EXPECT_GT(check(R"({"Name": "C1", "Kind": "Hidden", "Type": "Convolutional", "N": 2,
                      "Kernel": [2, 2], "Activation": "Tanh"},
                     {"Name": "C2", "Kind": "Hidden", "Type": "Convolutional", "N": 3,
                      "Kernel": [9, 9], "Activation": "Tanh"})"),
            100);
}

TEST(ConvGradientCheck, Conv3DStride1And2) {
  // 5x4x4 volumes with 1 channel (dims 3, the 3-D kernel uses all three axes).
  EXPECT_GT(check(R"({"Name": "C1", "Kind": "Hidden", "Type": "Convolutional", "N": 2,
                      "Kernel": [3, 3, 3], "Activation": "Tanh"},
                     {"Name": "C2", "Kind": "Hidden", "Type": "Convolutional", "N": 2,
                      "Kernel": [3, 2, 3], "KernelStride": [2, 2, 2], "Activation": "Tanh"},
                     {"Name": "P", "Kind": "Hidden", "Type": "Pooling", "Function": "Max",
                      "Kernel": [2, 1, 1], "KernelStride": [2, 1, 1]})",
                  "", false, 5, 4, 4, 3),
            100);
}

TEST(ConvGradientCheck, Conv1D) {
  EXPECT_GT(check(R"({"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 3,
                      "Kernel": 3, "KernelStride": 2, "Activation": "Tanh"})",
                  "", false, 9, 1, 1, 1),
            30);
}

TEST(ConvGradientCheck, TwoSourcesAndSkip) {
  EXPECT_GT(check(R"({"Name": "A", "Kind": "Hidden", "Type": "Convolutional", "N": 2,
                      "Kernel": [3, 3], "Activation": "Tanh", "Source": "In"},
                     {"Name": "B", "Kind": "Hidden", "Type": "Convolutional", "N": 2,
                      "Kernel": [1, 1], "Activation": "Sigmoid", "Source": "In"},
                     {"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 2,
                      "Kernel": [3, 3], "Activation": "Tanh", "Source": ["A", "B"], "Skip": "A"},
                     {"Name": "P", "Kind": "Hidden", "Type": "Pooling", "Function": "Average",
                      "Kernel": [2, 2], "KernelStride": [2, 2], "Source": ["A", "C"]})"),
            100);
}

TEST(ConvGradientCheck, LocalResponseNormalization) {
  // Large alpha so the normalisation is far from the identity.
  EXPECT_GT(check(R"({"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 5,
                      "Kernel": [3, 3], "Activation": "Tanh"},
                     {"Name": "L", "Kind": "Hidden", "Type": "Pooling", "Function": "LRN"})",
                  R"("LRN": {"k": 1.5, "n": 3, "alpha": 2.0, "beta": 0.75}, )"),
            100);
}

TEST(ConvGradientCheck, BatchNormalizationSpatial) {
  EXPECT_GT(check(R"({"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 3,
                      "Kernel": [3, 3], "Activation": "Tanh", "BatchNormalization": true})",
                  "", /*training=*/true),
            100);
}

TEST(ConvGradientCheck, ConvolutionalOutputLayer) {
  // Image in, image out (same 6x5 size, 2 channels): an Output conv layer keeps its given N.
  const std::string json = R"({"Name": "gc", "ErrorFunction": "L2", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 3, "Kernel": [3, 3],
       "Activation": "Tanh"},
      {"Name": "Out", "Kind": "Output", "Type": "Convolutional", "N": "auto", "DataSet": "out",
       "Kernel": [3, 3], "Activation": "Linear"}]})";
  EXPECT_GT(check_network_gradients(
                json, {image_set("in", 6, 5, 1, 2, random_values(3 * 30, 5, -1, 1)),
                       image_set("out", 6, 5, 2, 3, random_values(3 * 60, 6, -1, 1))}),
            80);
}

}  // namespace
}  // namespace nn::test
