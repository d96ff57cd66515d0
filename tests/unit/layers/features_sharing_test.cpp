// SharedWeights: one parameter per shared matrix, one update per step with the summed gradient,
// errors that name the layers, and network-file round trips (shared weights store their bias
// only; a file and a network that disagree about sharing are rejected).
#include <gtest/gtest.h>

#include "core/error.h"
#include "features_test_util.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

constexpr uint32_t kExamples = 12;

std::vector<ExampleSet> sets(uint32_t in_w = 7, uint32_t out_w = 7) {
  auto rows = random_rows(5, kExamples, in_w, 3);
  return {sparse_set("in", in_w, rows),
          sparse_set("out", out_w, random_rows(6, kExamples, out_w, 2))};
}

// A (In -> A) owns a matrix that B uses from In and Out uses transposed from A.
const char* kShared = R"({"Name": "shared", "ErrorFunction": "CrossEntropy", "Layers": [
    {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
    {"Name": "A", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
    {"Name": "B", "Kind": "Hidden", "N": 4, "Activation": "Sigmoid", "Source": "In",
     "SharedWeights": {"SourceInputLayer": "In", "SourceOutputLayer": "A", "InputLayer": "In"}},
    {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": ["A", "B"],
     "Activation": "Sigmoid", "SharedWeights": [{"SourceInputLayer": "In",
     "SourceOutputLayer": "A", "InputLayer": "A", "Transposed": true}]}]})";

// The same topology without sharing.
const char* kUnshared = R"({"Name": "shared", "ErrorFunction": "CrossEntropy", "Layers": [
    {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
    {"Name": "A", "Kind": "Hidden", "N": 4, "Activation": "Tanh", "Source": "In"},
    {"Name": "B", "Kind": "Hidden", "N": 4, "Activation": "Sigmoid", "Source": "In"},
    {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": ["A", "B"],
     "Activation": "Sigmoid"}]})";

std::string config_error(const std::string& json, std::vector<ExampleSet> data) {
  try {
    Fixture f(json, std::move(data));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(FeaturesSharing, SharedMatrixIsOneParameter) {
  Fixture shared(kShared, sets()), unshared(kUnshared, sets());
  // In->A 7x4 (+4 biases), In->B biases, A->Out biases (transposed In->A), B->Out 4x7 (+7).
  EXPECT_EQ(shared.net->parameter_count(), 28u + 4 + 4 + 7 + 28 + 7);
  EXPECT_EQ(unshared.net->parameter_count(), 4 * (28u) + 4 + 4 + 7 + 7);
  int weights = 0;
  for (Parameter* p : shared.net->parameters()) weights += contains(p->name, ":weights");
  EXPECT_EQ(weights, 2);
}

TEST(FeaturesSharing, OneUpdatePerStepWithTheSummedGradient) {
  Fixture f(kShared, sets());
  Parameter* w = f.net->parameters().front();
  ASSERT_EQ(w->name, "A<-In:weights");
  const std::vector<float> before = w->value.to_host();
  TrainingLoop t(*f.net, f.bound, sgd_options(1, 0.5f, kExamples), null_log());  // one step
  t.run();
  expect_one_sgd_step(before, *w, 0.5f);
}

TEST(FeaturesSharing, ShapeMismatchNamesBothWeights) {
  auto data = sets();
  data.push_back(dense_set("in2", 5, std::vector<float>(5 * kExamples, 0.5f)));
  const std::string e = config_error(R"({"Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "In2", "Kind": "Input", "N": "auto", "DataSet": "in2"},
      {"Name": "A", "Kind": "Hidden", "N": 4, "Source": "In"},
      {"Name": "B", "Kind": "Hidden", "N": 4, "Source": "In2",
       "SharedWeights": {"SourceInputLayer": "In", "SourceOutputLayer": "A", "InputLayer": "In2"}},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": ["A", "B"]}]})",
                                     data);
  EXPECT_TRUE(contains(e, "test.json: layer 'B': SharedWeights[0]")) << e;
  EXPECT_TRUE(contains(e, "'In' -> 'A' is 7 x 4")) << e;
  EXPECT_TRUE(contains(e, "'In2' -> 'B' needs 5 x 4")) << e;
}

TEST(FeaturesSharing, TransposedShapeMismatchIsReported) {
  // In->A is 7x4; Out (7 units) may use it transposed from A (4), but not untransposed.
  std::string json = kShared;
  json.replace(json.find("\"Transposed\": true"), 18, "\"Transposed\": false");
  const std::string e = config_error(json, sets());
  EXPECT_TRUE(contains(e, "layer 'Out': SharedWeights[0]")) << e;
  EXPECT_TRUE(contains(e, "'A' -> 'Out' needs 4 x 7")) << e;
}

TEST(FeaturesSharing, SharingASharedWeightIsRejected) {
  const std::string e = config_error(R"({"Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
      {"Name": "A", "Kind": "Hidden", "N": 4, "Source": "In"},
      {"Name": "B", "Kind": "Hidden", "N": 4, "Source": "In",
       "SharedWeights": {"SourceInputLayer": "In", "SourceOutputLayer": "A", "InputLayer": "In"}},
      {"Name": "C", "Kind": "Hidden", "N": 4, "Source": "In",
       "SharedWeights": {"SourceInputLayer": "In", "SourceOutputLayer": "B", "InputLayer": "In"}},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Source": ["B", "C"]}]})",
                                     sets());
  EXPECT_TRUE(contains(e, "layer 'C'")) << e;
  EXPECT_TRUE(contains(e, "'In' -> 'B' is itself shared")) << e;
}

TEST(FeaturesSharing, FileRoundTripRebuildsTheSameNetwork) {
  Fixture f(kShared, sets());
  NetworkFile file = f.net->to_file();
  ASSERT_EQ(file.weights.size(), 4u);  // In->A, In->B, A->Out, B->Out
  const WeightArrays& b = file.weights[1];
  EXPECT_EQ(b.input_layer, "In");
  EXPECT_EQ(b.output_layer, "B");
  EXPECT_TRUE(b.shared);
  EXPECT_FALSE(b.transposed);
  EXPECT_TRUE(b.weights.empty());
  EXPECT_EQ(b.bias.size(), 4u);
  EXPECT_EQ(b.source_input_layer, "In");
  EXPECT_EQ(b.source_output_layer, "A");
  const WeightArrays& out_a = file.weights[2];
  EXPECT_TRUE(out_a.shared);
  EXPECT_TRUE(out_a.transposed);
  EXPECT_EQ(out_a.width, 7u);
  EXPECT_EQ(out_a.height, 4u);

  NetworkFile back = file_round_trip(*f.net, "nn_features_shared");
  // The file alone describes the network: build from its spec, load its arrays.
  Network rebuilt(*f.backend, back.spec, f.bound.sparse_inputs());
  rebuilt.load_arrays(back);
  EXPECT_EQ(parameter_values(rebuilt), parameter_values(*f.net));
  // And a network built from the JSON with another seed takes the file's values.
  Fixture g(kShared, sets(), /*seed=*/99);
  EXPECT_NE(parameter_values(*g.net), parameter_values(*f.net));
  g.net->load_arrays(back);
  EXPECT_EQ(parameter_values(*g.net), parameter_values(*f.net));
  EXPECT_EQ(predict(g, "Out", kExamples), predict(f, "Out", kExamples));
}

TEST(FeaturesSharing, FileAndNetworkMustAgreeOnSharing) {
  Fixture shared(kShared, sets()), unshared(kUnshared, sets());
  try {
    unshared.net->load_arrays(shared.net->to_file());
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_TRUE(contains(e.what(), "'In' -> 'B': stored as shared with 'In' -> 'A'")) << e.what();
  }
  try {
    shared.net->load_arrays(unshared.net->to_file());
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_TRUE(contains(e.what(),
                         "'In' -> 'B': stored with its own matrix, but layer 'B' "
                         "shares 'In' -> 'A'"))
        << e.what();
  }
}

}  // namespace
}  // namespace nn::test
