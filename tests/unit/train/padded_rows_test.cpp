// Padded rows (Backend::row_alignment; docs/performance.md, "Padded rows"): which layers the
// Network pads, and that the padding is invisible: training a network whose output layer holds
// its rows padded gives the losses, weights, optimizer state and files of the same network
// unpadded, the padding stays 0, and the parameter counts and file forms leave it out. The CPU
// backend pads when told to (set_row_alignment), so all of it runs here; the CUDA backend pads
// by default (scripts/gpu-check.sh compares it with NN_CUDA_ROW_ALIGN=1).
//
// "The same" is within float rounding, not bit for bit: a product over rows of another length
// is cut into other tiles by the BLAS (OpenBLAS and cuBLAS alike), which adds its terms in
// another order (about 1e-7 relative per product; after three epochs the weights differ by
// ~1e-6). A wrong stride or a gradient leaking into the padding moves them by far more.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "model/model_test_util.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

std::unique_ptr<Backend> aligned_cpu(uint32_t floats) {
  auto be = make_backend("cpu", 2);
  be->set_row_alignment(floats);
  return be;
}

// 30 items: rows of 30 floats padded to 32 (alignment 8 or 16) or 40 (alignment 20).
constexpr uint32_t kItems = 30;

std::vector<ExampleSet> autoencoder_data(size_t examples = 90) {
  const auto rows = random_rows(3, examples, kItems, 4);
  return {sparse_set("input", kItems, rows), sparse_set("output", kItems, rows)};
}

struct Case {
  const char* name;
  const char* json;
  OptimizerKind optimizer;
  bool dense_targets;
};

// The recommender autoencoder (sparse input, Sigmoid + CrossEntropy, RMSProp with the input
// updated row by row); a SoftMax classifier of dense inputs under Adam with L1 and L2 decay and
// DeltaNorm; one sparse layer straight into a linear L2 output (its sparse products write the
// padded rows) with momentum and a weight norm.
const Case kCases[] = {
    {"autoencoder", kTwoHiddenAutoencoder, OptimizerKind::RMSProp, false},
    {"softmax", R"({"Name": "sm", "ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input"},
      {"Name": "H", "Kind": "Hidden", "N": 12, "Activation": "RectifiedLinear"},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
       "Activation": "SoftMax", "DeltaNorm": 0.5}]})",
     OptimizerKind::Adam, true},
    {"linear", R"({"Name": "lin", "ErrorFunction": "L2", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
       "Activation": "Linear", "WeightNorm": 0.8}]})",
     OptimizerKind::Momentum, false},
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.name;
}

std::vector<ExampleSet> case_data(const Case& c) {
  std::vector<ExampleSet> sets = autoencoder_data();
  if (c.dense_targets) {
    sets[0] = densify(sets[0]);
    sets[1] = densify(sets[1]);
  }
  return sets;
}

TrainOptions options(const Case& c) {
  TrainOptions o;
  o.epochs = 3;
  o.minibatch = 16;  // 90 examples: a short last batch
  o.optimizer.kind = c.optimizer;
  o.optimizer.alpha = 0.02f;
  o.optimizer.lambda = 1e-3f;
  o.optimizer.lambda1 = c.optimizer == OptimizerKind::Adam ? 1e-4f : 0.0f;
  o.seed = 5;
  o.progress_seconds = 0;
  return o;
}

// Whether a and b agree within abs + rel * |b| everywhere, the first difference in the message.
::testing::AssertionResult near(const std::vector<float>& a, const std::vector<float>& b,
                                double abs = 2e-5, double rel = 2e-5) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(double(a[i]) - b[i]) <= abs + rel * std::fabs(double(b[i]))))
      return ::testing::AssertionFailure() << "at " << i << ": " << a[i] << " and " << b[i];
  return ::testing::AssertionSuccess();
}
::testing::AssertionResult near(const std::vector<std::vector<float>>& a,
                                const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size())
    return ::testing::AssertionFailure() << a.size() << " and " << b.size() << " arrays";
  for (size_t k = 0; k < a.size(); ++k)
    if (auto r = near(a[k], b[k]); !r) return r << " (array " << k << ")";
  return ::testing::AssertionSuccess();
}

// The held values of every parameter, its padding included.
std::vector<std::vector<float>> held(Network& net) {
  std::vector<std::vector<float>> out;
  for (Parameter* p : net.parameters()) {
    out.push_back(p->value.to_host());
    for (const auto& s : p->state) out.push_back(s.to_host());
  }
  return out;
}

TEST(PaddedRows, OnlyTheOutputLayerIsPaddedAndOnlyWhenItsWidthIsNotAMultiple) {
  const Case& c = kCases[0];
  for (uint32_t align : {8u, 16u, 20u}) {
    Fixture f(c.json, autoencoder_data(), 7, aligned_cpu(align));
    const uint32_t stride = (kItems + align - 1) / align * align;
    EXPECT_TRUE(f.net->layer("Output").padded()) << align;
    EXPECT_EQ(f.net->layer("Output").stride(), stride);
    EXPECT_FALSE(f.net->layer("H1").padded());  // Hidden layers never are
    EXPECT_FALSE(f.net->layer("Input").padded());
    ASSERT_EQ(f.net->padding_notes().size(), 1u);
    EXPECT_NE(f.net->padding_notes()[0].find("'Output' holds its 30 units in rows of " +
                                             std::to_string(stride)),
              std::string::npos)
        << f.net->padding_notes()[0];
  }
  // Alignment 1 (the CPU's default), and a width that is a multiple already.
  Fixture plain(c.json, autoencoder_data(), 7, aligned_cpu(1));
  EXPECT_FALSE(plain.net->layer("Output").padded());
  EXPECT_TRUE(plain.net->padding_notes().empty());
  Fixture multiple(c.json, autoencoder_data(), 7, aligned_cpu(10));
  EXPECT_FALSE(multiple.net->layer("Output").padded());
  EXPECT_EQ(multiple.net->layer("Output").stride(), kItems);
}

TEST(PaddedRows, OutputLayersOthersUseOrThatCannotBePaddedAreNot) {
  const char* head = R"({"Name": "x", "ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "H", "Kind": "Hidden", "N": 30, "Activation": "Sigmoid"},)";
  const std::string out = R"({"Name": "Output", "Kind": "Output", "N": "auto",
      "DataSet": "output", "Activation": "Sigmoid")";
  const std::vector<std::pair<std::string, std::string>> unpadded = {
      {"skip", out + R"(, "Skip": ["H"]}]})"},
      {"MaxOut", R"({"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
        "Activation": "MaxOut"}], "Maxout": {"k": 2}})"},
      {"sampled", out + R"(, "Sampling": {"Negatives": 4}}]})"},
      {"shares", out + R"(, "SharedWeights": {"SourceInputLayer": "Input",
        "SourceOutputLayer": "H", "InputLayer": "H", "Transposed": true}}]})"},
  };
  for (const auto& [what, layers] : unpadded) {
    Fixture f(head + layers, autoencoder_data(), 7, aligned_cpu(8));
    EXPECT_FALSE(f.net->layer("Output").padded()) << what;
  }
  // An Output layer another layer reads (here a second output) keeps its rows as they are; the
  // one nothing reads is padded.
  const std::string chained = std::string(head) + out + R"(},
      {"Name": "Out2", "Kind": "Output", "N": "auto", "DataSet": "output", "Source": ["Output"],
       "Activation": "Sigmoid"}]})";
  Fixture f(chained, autoencoder_data(), 7, aligned_cpu(8));
  EXPECT_FALSE(f.net->layer("Output").padded());
  EXPECT_TRUE(f.net->layer("Out2").padded());
  std::string why;
  EXPECT_FALSE(f.net->layer("H").can_pad_rows(&why));
  EXPECT_EQ(why, "only Output layers pad their rows");
}

class PaddedTraining : public ::testing::TestWithParam<Case> {};

// The same training with the output layer's rows padded (alignment 8 and 20) and unpadded:
// equal losses in every epoch, equal weights, biases and optimizer state in the file form, and
// the padding of every padded array still 0.
TEST_P(PaddedTraining, GivesTheLossesWeightsAndFileOfTheUnpaddedNetwork) {
  const Case& c = GetParam();
  Fixture plain(c.json, case_data(c), 7, aligned_cpu(1));
  ASSERT_FALSE(plain.net->layer("Output").padded());
  TrainingLoop lp(*plain.net, plain.bound, options(c), null_log());
  const std::vector<EpochReport> rp = lp.run();
  const NetworkFile fp = plain.net->to_file();
  for (uint32_t align : {8u, 20u}) {
    SCOPED_TRACE("alignment " + std::to_string(align));
    Fixture padded(c.json, case_data(c), 7, aligned_cpu(align));
    ASSERT_TRUE(padded.net->layer("Output").padded());
    EXPECT_EQ(padded.net->parameter_count(), plain.net->parameter_count());
    TrainingLoop lq(*padded.net, padded.bound, options(c), null_log());
    const std::vector<EpochReport> rq = lq.run();
    ASSERT_EQ(rq.size(), rp.size());
    for (size_t e = 0; e < rp.size(); ++e) {
      EXPECT_NEAR(rq[e].data_loss, rp[e].data_loss, 1e-5 * rp[e].data_loss) << "epoch " << e + 1;
      EXPECT_NEAR(rq[e].reg_loss, rp[e].reg_loss, 1e-5 * rp[e].reg_loss) << "epoch " << e + 1;
    }
    const NetworkFile fq = padded.net->to_file();
    ASSERT_EQ(fq.weights.size(), fp.weights.size());
    for (size_t w = 0; w < fp.weights.size(); ++w) {
      SCOPED_TRACE(fp.weights[w].input_layer + " -> " + fp.weights[w].output_layer);
      EXPECT_EQ(fq.weights[w].width, fp.weights[w].width);
      EXPECT_EQ(fq.weights[w].height, fp.weights[w].height);
      EXPECT_TRUE(near(fq.weights[w].weights, fp.weights[w].weights));
      EXPECT_TRUE(near(fq.weights[w].bias, fp.weights[w].bias));
      EXPECT_TRUE(near(fq.weights[w].weight_state, fp.weights[w].weight_state));
      EXPECT_TRUE(near(fq.weights[w].bias_state, fp.weights[w].bias_state));
    }
    for (Parameter* p : padded.net->parameters()) {
      if (!p->padding.on()) continue;
      for (const DeviceArray<float>* a : {&p->value, &p->grad}) {
        const std::vector<float> v = a->to_host();
        for (size_t i = 0; i < v.size(); ++i)
          if (i % p->padding.stride >= p->padding.width) ASSERT_EQ(v[i], 0.0f) << p->name << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Networks, PaddedTraining, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

// A file written by a padded network loads into an unpadded one and back, optimizer state
// included, and a run resumed from it continues as the unpadded run does.
TEST(PaddedRows, FilesMoveBetweenPaddedAndUnpaddedNetworks) {
  const Case& c = kCases[0];
  Fixture padded(c.json, case_data(c), 7, aligned_cpu(8));
  TrainOptions two = options(c);
  two.epochs = 2;
  TrainingLoop(*padded.net, padded.bound, two, null_log()).run();
  const NetworkFile file = padded.net->to_file();
  ASSERT_FALSE(file.weights.back().weight_state.empty());
  EXPECT_EQ(file.weights.back().weights.size(), size_t(12) * kItems);

  Fixture plain(c.json, case_data(c), 9, aligned_cpu(1));
  plain.net->load_arrays(file);
  Fixture again(c.json, case_data(c), 9, aligned_cpu(8));
  again.net->load_arrays(plain.net->to_file());
  EXPECT_EQ(held(*again.net), held(*padded.net));  // the padding came back as 0

  TrainOptions one = options(c);
  one.epochs = 1;
  const auto ra = TrainingLoop(*plain.net, plain.bound, one, null_log()).run();
  const auto rb = TrainingLoop(*again.net, again.bound, one, null_log()).run();
  EXPECT_NEAR(ra.back().data_loss, rb.back().data_loss, 1e-5 * ra.back().data_loss);
  EXPECT_TRUE(near(plain.net->to_file().weights.back().weights,
                   again.net->to_file().weights.back().weights));
}

// A file whose output weights have the wrong size is refused with the sizes files count.
TEST(PaddedRows, AWrongSizeInAFileNamesTheUnpaddedSizes) {
  const Case& c = kCases[0];
  Fixture padded(c.json, case_data(c), 7, aligned_cpu(8));
  NetworkFile file = padded.net->to_file();
  file.weights.back().bias.pop_back();
  try {
    padded.net->load_arrays(file);
    FAIL() << "loaded";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("expected 360 and 30"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nn::test
