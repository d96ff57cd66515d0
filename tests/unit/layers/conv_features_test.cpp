// Layer features on Convolutional layers: WeightNorm (every filter, a row of the bank, capped
// after each update), the sparseness penalty on Convolutional and Pooling Hidden layers (value
// and gradient), and SharedWeights between convolutions (forward, summed gradients, network
// file round trip, and the errors for transposed sharing, mixed layer types and mismatched
// geometries).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "conv_test_util.h"
#include "core/error.h"
#include "features_test_util.h"
#include "layers/convolutional_layer.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

constexpr uint32_t kExamples = 6;

// Images 6x5 with 2 channels ("in"), optionally 4x4 with 2 channels ("in2"), 4 dense targets.
std::vector<ExampleSet> sets(bool second_input = false) {
  std::vector<ExampleSet> v = {
      image_set("in", 6, 5, 2, 3, random_values(kExamples * 60, 31, -1, 1)),
      dense_set("out", 4, random_targets(kExamples, 4, 32))};
  if (second_input)
    v.push_back(image_set("in2", 4, 4, 2, 3, random_values(kExamples * 32, 33, -1, 1)));
  return v;
}

std::string net(const std::string& layers, const std::string& top = "",
                const std::string& out_sources = "") {
  return R"({"Name": "convfeat", "ErrorFunction": "CrossEntropy", )" + top + R"( "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"}, )" +
         layers + R"(,
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid")" +
         (out_sources.empty() ? "" : ", \"Source\": " + out_sources) + "}]}";
}

const char* kInput2 = R"({"Name": "In2", "Kind": "Input", "N": "auto", "DataSet": "in2"}, )";

std::string shares(const std::string& input, const std::string& source_input,
                   const std::string& source_output, bool transposed = false) {
  return R"(, "SharedWeights": {"SourceInputLayer": ")" + source_input +
         R"(", "SourceOutputLayer": ")" + source_output + R"(", "InputLayer": ")" + input + "\"" +
         (transposed ? R"(, "Transposed": true)" : "") + "}";
}

std::vector<float> activations(Fixture& f, const std::string& layer, uint32_t rows) {
  std::vector<float> a(size_t(rows) * f.net->layer(layer).units());
  f.net->backend().download(a.data(), f.net->layer(layer).activations(), a.size() * sizeof(float));
  return a;
}

std::vector<double> row_norms(const std::vector<float>& w, uint32_t rows) {
  const size_t cols = w.size() / rows;
  std::vector<double> n(rows, 0.0);
  for (uint32_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) n[r] += double(w[r * cols + c]) * w[r * cols + c];
  for (auto& v : n) v = std::sqrt(v);
  return n;
}

// A JSON number for `v`, and v rounded to what that text says.
std::string json_number(double& v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6f", v);
  v = std::stod(buf);
  return buf;
}

// ---- WeightNorm ----------------------------------------------------------------------------

std::string weight_norm_net(const std::string& extra) {
  return net(R"({"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 5, "Kernel": [3, 3],
                 "Activation": "Tanh")" +
             extra + "}");
}

TEST(ConvFeatures, WeightNormCapsEveryFilterAfterEachUpdate) {
  // One large SGD step without the norm, to pick a cap that clips some filters but not all.
  Fixture plain(weight_norm_net(""), sets());
  TrainingLoop tp(*plain.net, plain.bound, sgd_options(1, 4.0f, kExamples), null_log());
  tp.run();
  Parameter* w_plain_p = plain.net->parameters()[0];
  ASSERT_EQ(w_plain_p->name, "C<-In:weights");
  const auto w_plain = w_plain_p->value.to_host();  // [5 filters][2 channels x 3 x 3]
  ASSERT_EQ(w_plain.size(), 5u * 18);
  const auto norms = row_norms(w_plain, 5);
  auto sorted = norms;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_GT(sorted[2] - sorted[1], 1e-3);
  double cap = 0.5 * (sorted[1] + sorted[2]);  // 3 filters are longer
  Fixture capped(weight_norm_net(", \"WeightNorm\": " + json_number(cap)), sets());
  Parameter* w = capped.net->parameters()[0];
  EXPECT_EQ(w->max_column_norm, float(cap));
  EXPECT_TRUE(w->norm_over_rows);
  EXPECT_EQ(w->norm_rows, 5u);
  TrainingLoop tc(*capped.net, capped.bound, sgd_options(1, 4.0f, kExamples), null_log());
  tc.run();
  // Longer filters scaled down to the cap as a whole; shorter ones exactly as without the norm.
  std::vector<double> want(w_plain.begin(), w_plain.end());
  int clipped = 0;
  for (uint32_t r = 0; r < 5; ++r) {
    if (norms[r] <= cap) continue;
    ++clipped;
    for (uint32_t k = 0; k < 18; ++k) want[r * 18 + k] *= cap / norms[r];
  }
  EXPECT_EQ(clipped, 3);
  EXPECT_TRUE(all_near_d(w->value.to_host(), want, 1e-6));

  // Later updates stay within the cap; the file records it as the weight's norm; the biases
  // and the fully connected output layer are not constrained.
  TrainingLoop more(*capped.net, capped.bound, sgd_options(4, 4.0f, kExamples), null_log());
  more.run();
  for (double n : row_norms(w->value.to_host(), 5)) EXPECT_LE(n, cap * (1 + 1e-6));
  EXPECT_FLOAT_EQ(capped.net->to_file().weights[0].norm, float(cap));
  EXPECT_EQ(capped.net->parameters()[1]->max_column_norm, 0.0f);
  EXPECT_EQ(capped.net->parameters()[2]->max_column_norm, 0.0f);
}

// ---- sparseness penalty ----------------------------------------------------------------------

// Host KL penalty rows * beta * sum_j KL(p || mean_r a[r][j]).
double penalty(const std::vector<float>& a, uint32_t rows, double p, double beta) {
  const size_t cols = a.size() / rows;
  double total = 0.0;
  for (size_t c = 0; c < cols; ++c) {
    double rho = 0.0;
    for (uint32_t r = 0; r < rows; ++r) rho += a[r * cols + c] / double(rows);
    total += p * std::log(p / rho) + (1 - p) * std::log((1 - p) / (1 - rho));
  }
  return rows * beta * total;
}

// C (conv, network p/beta) -> P (average pooling, its own p/beta) -> Out; C2 not Sparse.
std::string penalty_net(bool sparse = true) {
  const std::string s = sparse ? R"(, "Sparse": true)" : "";
  return net(R"({"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 3, "Kernel": [3, 3],
                 "Activation": "Sigmoid")" +
                 s + R"(},
             {"Name": "P", "Kind": "Hidden", "Type": "Pooling", "Function": "Average",
              "Kernel": [2, 2], "KernelStride": [2, 2],
              "SparsenessPenalty": {"p": 0.2, "beta": 1.5})" +
                 s + R"(},
             {"Name": "C2", "Kind": "Hidden", "Type": "Convolutional", "N": 2, "Kernel": [2, 2],
              "Activation": "Sigmoid", "Source": "P"})",
             R"("SparsenessPenalty": {"p": 0.1, "beta": 0.5},)");
}

TEST(ConvFeatures, SparsenessPenaltySumsOverConvolutionalAndPoolingLayers) {
  Fixture f(penalty_net(), sets());
  f.net->set_max_batch(kExamples);
  FixedBatch batch(f.bound, kExamples);
  OutputLosses losses(*f.net, f.bound);
  objective(*f.net, f.bound, losses, batch.hb);
  EXPECT_TRUE(f.net->layer("C").has_sparseness_penalty());
  EXPECT_TRUE(f.net->layer("P").has_sparseness_penalty());
  EXPECT_FALSE(f.net->layer("C2").has_sparseness_penalty());
  const double c = penalty(activations(f, "C", kExamples), kExamples, float(0.1), float(0.5));
  const double p = penalty(activations(f, "P", kExamples), kExamples, float(0.2), float(1.5));
  EXPECT_GT(c, 0.0);
  EXPECT_GT(p, 0.0);
  const LayerContext ctx{f.net->backend(), kExamples, true, 1, 1};
  const double got = f.net->penalties(ctx);
  EXPECT_NEAR(got, c + p, 1e-5 * (c + p));
  EXPECT_NEAR(f.net->layer("C").sparseness_penalty(f.net->backend(), kExamples), c, 1e-5 * c);

  Fixture off(penalty_net(false), sets());
  off.net->set_max_batch(kExamples);
  OutputLosses off_losses(*off.net, off.bound);
  objective(*off.net, off.bound, off_losses, batch.hb);
  EXPECT_EQ(off.net->penalties(LayerContext{off.net->backend(), kExamples, true, 1, 1}), 0.0);
}

TEST(ConvFeatures, SparsenessPenaltyGradientThroughConvolutionAndPooling) {
  Fixture f(penalty_net(), sets(), 3);
  EXPECT_GT(check_all_gradients(f, kExamples), 100);
  // The check is meaningful: the penalty moves the conv filters' gradient well beyond the
  // tolerance (without its derivative the check above would fail).
  Fixture off(penalty_net(false), sets(), 3);
  off.net->set_max_batch(kExamples);
  FixedBatch batch(off.bound, kExamples);
  OutputLosses losses(*off.net, off.bound);
  analytic_gradients(*off.net, off.bound, losses, batch.hb);
  const auto with = f.net->parameters()[0]->grad.to_host();
  const auto without = off.net->parameters()[0]->grad.to_host();
  double largest = 0.0;
  for (size_t i = 0; i < with.size(); ++i)
    largest = std::max(largest, double(std::fabs(with[i] - without[i])));
  EXPECT_GT(largest, 0.05);
}

// ---- SharedWeights ---------------------------------------------------------------------------

// A (In -> A, 2 -> 3 channels, 3x3) owns the filters; B uses them from In. Linear activations:
// B = A + B's bias.
std::string shared_net(bool shared = true) {
  return net(R"({"Name": "A", "Kind": "Hidden", "Type": "Convolutional", "N": 3, "Kernel": [3, 3],
                 "Activation": "Linear", "Source": "In"},
             {"Name": "B", "Kind": "Hidden", "Type": "Convolutional", "N": 3, "Kernel": [3, 3],
              "Activation": "Linear", "Source": "In")" +
                 (shared ? shares("In", "In", "A") : "") + "}",
             "", R"(["A", "B"])");
}

TEST(ConvFeatures, SharedFiltersGiveTheOwnersResult) {
  Fixture f(shared_net(), sets());
  auto& b = dynamic_cast<ConvolutionalLayer&>(f.net->layer("B"));
  ASSERT_EQ(b.connections().size(), 1u);
  EXPECT_TRUE(b.connections()[0]->shared != nullptr);
  // Give A new filters after construction and B a bias of its own: B must see A's filters.
  Parameter* filters = f.net->parameters()[0];
  ASSERT_EQ(filters->name, "A<-In:weights");
  filters->value.upload(random_values(filters->size(), 41, -0.5f, 0.5f));
  b.connections()[0]->bias.value.upload(std::vector<float>{0.25f, -0.5f, 1.0f});
  const auto a_out = predict(f, "A", kExamples);
  const auto b_out = activations(f, "B", kExamples);
  ASSERT_EQ(a_out.size(), b_out.size());
  const size_t plane = 30;  // 6x5 positions per channel
  double spread = 0.0;
  for (size_t i = 0; i < a_out.size(); ++i) {
    const float bias = std::vector<float>{0.25f, -0.5f, 1.0f}[(i / plane) % 3];
    EXPECT_NEAR(b_out[i], a_out[i] + bias, 1e-5) << i;
    spread += std::fabs(a_out[i]);
  }
  EXPECT_GT(spread, 1.0);  // the filters are not zero
}

TEST(ConvFeatures, SharedFilterBankIsOneParameterUpdatedOncePerStep) {
  Fixture shared(shared_net(), sets()), unshared(shared_net(false), sets());
  // Conv filters 3 x 2 x 9 and 3 biases per connection; Out: 90 x 4 and 4 biases per source.
  EXPECT_EQ(unshared.net->parameter_count(), 2 * (54u + 3) + 2 * (90 * 4 + 4));
  EXPECT_EQ(shared.net->parameter_count(), 54u + 3 + 3 + 2 * (90 * 4 + 4));
  Parameter* w = shared.net->parameters().front();
  const std::vector<float> before = w->value.to_host();
  TrainingLoop t(*shared.net, shared.bound, sgd_options(1, 0.5f, kExamples), null_log());
  t.run();
  expect_one_sgd_step(before, *w, 0.5f);
}

TEST(ConvFeatures, SharedFilterBankGradientSumsEveryUse) {
  // One 2 -> 2 channel 3x3 bank used four times: by its owner A, by B from the same input, by
  // C on A's output (so backward-data runs through it into a hidden layer) and by D on a
  // smaller image (different padding and output size, same filters).
  const std::string layers =
      std::string(kInput2) +
      R"({"Name": "A", "Kind": "Hidden", "Type": "Convolutional", "N": 2, "Kernel": [3, 3],
          "Activation": "Tanh", "Source": "In"},
         {"Name": "B", "Kind": "Hidden", "Type": "Convolutional", "N": 2, "Kernel": [3, 3],
          "Activation": "Sigmoid", "Source": "In")" +
      shares("In", "In", "A") + R"(},
         {"Name": "C", "Kind": "Hidden", "Type": "Convolutional", "N": 2, "Kernel": [3, 3],
          "Activation": "Tanh", "Source": "A")" +
      shares("A", "In", "A") + R"(},
         {"Name": "D", "Kind": "Hidden", "Type": "Convolutional", "N": 2, "Kernel": [3, 3],
          "Activation": "Tanh", "Source": "In2")" +
      shares("In2", "In", "A") + "}";
  Fixture f(net(layers, "", R"(["B", "C", "D"])"), sets(true), 3);
  int filters = 0;
  for (Parameter* p : f.net->parameters()) filters += p->name.find(":weights") != std::string::npos;
  EXPECT_EQ(filters, 4);  // the bank and Out's three matrices
  EXPECT_EQ(dynamic_cast<ConvolutionalLayer&>(f.net->layer("A")).connections()[0]->users, 4u);
  EXPECT_GT(check_all_gradients(f, kExamples), 36 + 8 + (60 + 60 + 32) * 4 + 4 - 1);
}

TEST(ConvFeatures, SharedFiltersRoundTripThroughTheNetworkFile) {
  Fixture f(shared_net(), sets());
  auto& b = dynamic_cast<ConvolutionalLayer&>(f.net->layer("B"));
  b.connections()[0]->bias.value.upload(std::vector<float>{0.5f, 0.25f, -1.0f});
  NetworkFile file = f.net->to_file();
  ASSERT_EQ(file.weights.size(), 4u);  // In->A, In->B, A->Out, B->Out
  const WeightArrays& wb = file.weights[1];
  EXPECT_EQ(wb.input_layer, "In");
  EXPECT_EQ(wb.output_layer, "B");
  EXPECT_TRUE(wb.shared);
  EXPECT_FALSE(wb.transposed);
  EXPECT_TRUE(wb.weights.empty());
  EXPECT_EQ(wb.bias, (std::vector<float>{0.5f, 0.25f, -1.0f}));
  EXPECT_EQ(wb.source_input_layer, "In");
  EXPECT_EQ(wb.source_output_layer, "A");
  // The same dimensions as the owner's (out channels, in channels, ky, kx, 1).
  for (const WeightArrays* wa : {&std::as_const(file.weights[0]), &wb}) {
    EXPECT_EQ(wa->width, 3u);
    EXPECT_EQ(wa->height, 2u);
    EXPECT_EQ(wa->length, 3u);
    EXPECT_EQ(wa->depth, 3u);
    EXPECT_EQ(wa->breadth, 1u);
  }

  NetworkFile back = file_round_trip(*f.net, "nn_conv_shared");
  // The file alone describes the network: build from its spec, load its arrays.
  Network rebuilt(*f.backend, back.spec, f.bound.sparse_inputs());
  rebuilt.load_arrays(back);
  EXPECT_EQ(parameter_values(rebuilt), parameter_values(*f.net));
  // A network built from the JSON with another seed takes the file's values.
  Fixture g(shared_net(), sets(), /*seed=*/99);
  EXPECT_NE(parameter_values(*g.net), parameter_values(*f.net));
  g.net->load_arrays(back);
  EXPECT_EQ(parameter_values(*g.net), parameter_values(*f.net));
  EXPECT_EQ(predict(g, "Out", kExamples), predict(f, "Out", kExamples));
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ConvFeatures, FileAndNetworkMustAgreeOnConvSharing) {
  Fixture shared(shared_net(), sets()), unshared(shared_net(false), sets());
  try {
    unshared.net->load_arrays(shared.net->to_file());
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_TRUE(contains(e.what(),
                         "'In' -> 'B': stored as shared with 'In' -> 'A', but layer 'B' has no "
                         "SharedWeights entry"))
        << e.what();
  }
  try {
    shared.net->load_arrays(unshared.net->to_file());
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_TRUE(contains(e.what(),
                         "'In' -> 'B': stored with its own filters, but layer 'B' shares 'In' -> "
                         "'A'"))
        << e.what();
  }
}

std::string config_error(const std::string& json, std::vector<ExampleSet> data) {
  try {
    Fixture f(json, std::move(data));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

// A owns In -> A (2 -> 3 channels, 3x3, stride 1); B's description and sharing entry vary.
std::string sharing_net(const std::string& b, const std::string& extra_layers = "") {
  return net(R"({"Name": "A", "Kind": "Hidden", "Type": "Convolutional", "N": 3, "Kernel": [3, 3],
                 "Source": "In"}, )" +
                 extra_layers + b,
             "", R"(["A", "B"])");
}

TEST(ConvFeatures, TransposedConvSharingIsRejected) {
  const std::string e =
      config_error(sharing_net(R"({"Name": "B", "Kind": "Hidden", "Type": "Convolutional", "N": 3,
                      "Kernel": [3, 3], "Source": "In")" +
                               shares("In", "In", "A", true) + "}"),
                   sets());
  EXPECT_TRUE(contains(e,
                       "test.json: layer 'B': SharedWeights[0]: Transposed is not supported "
                       "on Convolutional layers"))
      << e;
  EXPECT_TRUE(contains(e, "DSSTNE cannot transpose 3-D weights either")) << e;
}

TEST(ConvFeatures, SharingBetweenConvolutionalAndFullyConnectedIsRejected) {
  // A convolution naming a fully connected matrix.
  std::string e =
      config_error(sharing_net(R"({"Name": "B", "Kind": "Hidden", "Type": "Convolutional", "N": 3,
                      "Kernel": [3, 3], "Source": "In")" +
                                   shares("In", "In", "F") + "}",
                               R"({"Name": "F", "Kind": "Hidden", "N": 4, "Source": "In"}, )"),
                   sets());
  EXPECT_TRUE(contains(e,
                       "layer 'B': SharedWeights[0]: SourceOutputLayer 'F' is a "
                       "FullyConnected layer; a Convolutional layer can only share another "
                       "Convolutional layer's filters"))
      << e;
  // A fully connected layer naming a filter bank.
  e = config_error(sharing_net(R"({"Name": "B", "Kind": "Hidden", "N": 4, "Source": "In")" +
                               shares("In", "In", "A") + "}"),
                   sets());
  EXPECT_TRUE(contains(e,
                       "layer 'B': SharedWeights[0]: the weight 'In' -> 'A' is a convolution "
                       "filter bank; a fully connected layer can only share another fully "
                       "connected layer's matrix"))
      << e;
}

TEST(ConvFeatures, SharedFiltersMustHaveTheSameGeometry) {
  struct Case {
    std::string b, needs;
  } cases[] = {
      {R"("N": 4, "Kernel": [3, 3])", "2 -> 4 channels, kernel 3x3, stride 1x1 (2-D)"},
      {R"("N": 3, "Kernel": [3, 2])", "2 -> 3 channels, kernel 3x2, stride 1x1 (2-D)"},
      {R"("N": 3, "Kernel": [3, 3], "KernelStride": [2, 2])",
       "2 -> 3 channels, kernel 3x3, stride 2x2 (2-D)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.b);
    const std::string e = config_error(
        sharing_net(R"({"Name": "B", "Kind": "Hidden", "Type": "Convolutional", "Source": "In", )" +
                    c.b + shares("In", "In", "A") + "}"),
        sets());
    EXPECT_TRUE(contains(e,
                         "layer 'B': SharedWeights[0]: the filters 'In' -> 'A' are 2 -> 3 "
                         "channels, kernel 3x3, stride 1x1 (2-D), but 'In' -> 'B' needs " +
                             c.needs))
        << e;
  }
}

TEST(ConvFeatures, SharingASharedFilterBankIsRejected) {
  const std::string e =
      config_error(sharing_net(R"({"Name": "B", "Kind": "Hidden", "Type": "Convolutional", "N": 3,
                      "Kernel": [3, 3], "Source": "In")" +
                                   shares("In", "In", "S") + "}",
                               R"({"Name": "S", "Kind": "Hidden", "Type": "Convolutional", "N": 3,
                      "Kernel": [3, 3], "Source": "In")" +
                                   shares("In", "In", "A") + "}, "),
                   sets());
  EXPECT_TRUE(contains(e, "layer 'B': SharedWeights[0]: the weight 'In' -> 'S' is itself shared"))
      << e;
}

}  // namespace
}  // namespace nn::test
