// Several input and output layers bound to datasets by name (losses summed over the outputs,
// training and file round trips), dropout on a dense input layer, and denoising of sparse inputs.
#include <gtest/gtest.h>

#include "features_test_util.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

constexpr uint32_t kExamples = 24;

// Sparse "clicks" (16 wide) and dense "profile" (3 wide) in; sparse "next" (16) and dense
// "rating" (2) out. Dataset order differs from layer order on purpose: binding is by name.
std::vector<ExampleSet> sets() {
  auto clicks = random_rows(31, kExamples, 16, 3);
  Rng rng(32);
  std::vector<float> profile(kExamples * 3), rating(kExamples * 2);
  for (auto& v : profile) v = float(rng.uniform());
  for (uint32_t e = 0; e < kExamples; ++e) {
    rating[e * 2] = profile[e * 3] > 0.5f ? 1.0f : 0.0f;
    rating[e * 2 + 1] = clicks[e][0] < 8 ? 1.0f : 0.0f;
  }
  return {dense_set("rating", 2, rating), sparse_set("next", 16, clicks),
          dense_set("profile", 3, profile), sparse_set("clicks", 16, clicks)};
}

const char* kNet = R"({"ErrorFunction": "CrossEntropy", "Layers": [
    {"Name": "Clicks", "Kind": "Input", "N": "auto", "DataSet": "clicks"},
    {"Name": "Profile", "Kind": "Input", "N": "auto", "DataSet": "profile"},
    {"Name": "H", "Kind": "Hidden", "N": 8, "Activation": "Tanh", "Source": ["Clicks", "Profile"]},
    {"Name": "Next", "Kind": "Output", "N": "auto", "DataSet": "next", "Source": "H",
     "Activation": "Sigmoid"},
    {"Name": "Rating", "Kind": "Output", "N": "auto", "DataSet": "rating", "Source": ["H", "Profile"],
     "Activation": "Sigmoid"}]})";

double cross_entropy(const std::vector<float>& a, const std::vector<float>& t) {
  double e = 0.0;
  for (size_t i = 0; i < a.size(); ++i)
    e += -t[i] * std::log(std::max(1e-12, double(a[i]))) -
         (1 - t[i]) * std::log(std::max(1e-12, 1.0 - a[i]));
  return e;
}

TEST(FeaturesIo, TwoInputsAndTwoOutputsBindByNameAndSumTheirLosses) {
  Fixture f(kNet, sets());
  ASSERT_EQ(f.bound.inputs.size(), 2u);
  ASSERT_EQ(f.bound.outputs.size(), 2u);
  f.net->set_max_batch(kExamples);
  FixedBatch batch(f.bound, kExamples);
  OutputLosses losses(*f.net, f.bound);
  const double total = objective(*f.net, f.bound, losses, batch.hb, false) * kExamples;
  std::vector<float> next(kExamples * 16), rating(kExamples * 2);
  // (Through download_activations: rows padded where NN_CPU_ROW_ALIGN asks.)
  f.net->layer("Next").download_activations(*f.backend, kExamples, 16, next.data());
  f.net->layer("Rating").download_activations(*f.backend, kExamples, 2, rating.data());
  const double e_next = cross_entropy(next, densify(f.sets[1]).dense);
  const double e_rating = cross_entropy(rating, f.sets[0].dense);
  EXPECT_GT(e_next, 1.0);
  EXPECT_GT(e_rating, 1.0);
  EXPECT_NEAR(total, e_next + e_rating, 1e-5 * total);
}

TEST(FeaturesIo, TwoInputsAndTwoOutputsTrainAndRoundTrip) {
  Fixture f(kNet, sets());
  TrainOptions o;
  o.epochs = 30;
  o.minibatch = 8;
  o.optimizer.kind = OptimizerKind::Adam;
  o.optimizer.alpha = 0.02f;
  o.progress_seconds = 0;
  TrainingLoop t(*f.net, f.bound, o, null_log());
  const auto reports = t.run();
  EXPECT_LT(reports.back().loss, 0.7 * reports.front().loss);

  NetworkFile back = file_round_trip(*f.net, "nn_features_io");
  Fixture g(kNet, sets(), /*seed=*/77);
  g.net->load_arrays(back);
  EXPECT_EQ(predict(g, "Next", kExamples), predict(f, "Next", kExamples));
  EXPECT_EQ(predict(g, "Rating", kExamples), predict(f, "Rating", kExamples));
}

TEST(FeaturesIo, DropoutOnADenseInputLayerOnlyInTraining) {
  const uint32_t width = 100, examples = 20;
  const char* json = R"({"ErrorFunction": "L2", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in", "pDropout": 0.4},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Linear"}]})";
  Fixture f(json, {dense_set("in", width, std::vector<float>(width * examples, 2.0f)),
                   dense_set("out", 1, std::vector<float>(examples, 0.0f))});
  f.net->set_max_batch(examples);
  FixedBatch batch(f.bound, examples);
  auto input_after = [&](bool training, uint64_t step) {
    load_inputs(*f.net, f.bound, batch.hb);
    LayerContext ctx{*f.backend, examples, training, 5, step};
    f.net->forward(ctx);
    std::vector<float> a(width * examples);
    f.backend->download(a.data(), f.net->layer("In").activations(), a.size() * 4);
    return a;
  };
  const auto a1 = input_after(true, 1), a2 = input_after(true, 2);
  size_t dropped = 0;
  for (float v : a1) {
    EXPECT_TRUE(v == 0.0f || std::fabs(v - 2.0f / 0.6f) < 1e-6f) << v;  // inverted dropout
    dropped += v == 0.0f;
  }
  EXPECT_NEAR(double(dropped) / a1.size(), 0.4, 0.05);
  EXPECT_NE(a1, a2);                                         // a new mask every step
  EXPECT_EQ(a1, input_after(true, 1));                       // the same mask for the same step
  for (float v : input_after(false, 1)) EXPECT_EQ(v, 2.0f);  // prediction: untouched
}

TEST(FeaturesIo, DenoisingDropsStoredEntriesOfSparseInputsInTraining) {
  auto rows = random_rows(41, 200, 50, 10);
  std::vector<ExampleSet> data{sparse_set("in", 50, rows), sparse_set("out", 50, rows)};
  Fixture f(R"({"ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in", "Sparse": true},
      {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out"}]})",
            data);
  BatchLoader loader(f.bound, {DenoiseSetting{0.3f, 0}}, 9);
  std::vector<uint32_t> ids(200);
  std::iota(ids.begin(), ids.end(), 0u);
  HostBatch train, other_step, eval;
  loader.assemble(ids.data(), 200, 1, true, train);
  loader.assemble(ids.data(), 200, 2, true, other_step);
  loader.assemble(ids.data(), 200, 1, false, eval);
  EXPECT_EQ(eval.sparse[0].index.size(), 2000u);
  const double kept = double(train.sparse[0].index.size()) / 2000.0;
  EXPECT_NEAR(kept, 0.7, 0.04);
  for (float v : train.sparse[0].value) EXPECT_FLOAT_EQ(v, 1.0f / 0.7f);  // survivors rescaled
  EXPECT_NE(train.sparse[0].index, other_step.sparse[0].index);
  // Targets are never denoised.
  EXPECT_EQ(train.sparse[1].index.size(), 2000u);
}

}  // namespace
}  // namespace nn::test
