// BatchNormalization on fully connected hidden layers: batch statistics in training, running
// averages (momentum 0.1, unbiased variance) used in prediction, scale/bias trained by the
// optimizer without regularisation, arrays and optimizer state saved and loaded, gradients in
// inference mode; and the BatchNorm component in spatial mode (as convolutional layers use it).
#include <gtest/gtest.h>

#include "core/error.h"
#include "features_test_util.h"
#include "layers/batch_norm.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

constexpr uint32_t kExamples = 16, kIn = 6, kUnits = 5;

// Dense analog inputs with unit-dependent offsets (so z has non-zero means), indicator targets.
std::vector<ExampleSet> sets() {
  Rng rng(8);
  std::vector<float> x(kExamples * kIn);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(rng.uniform() * 2.0 + double(i % kIn));
  return {dense_set("in", kIn, x), sparse_set("out", 4, random_rows(9, kExamples, 4, 1))};
}

const char* kNet = R"({"ErrorFunction": "CrossEntropy", "Layers": [
    {"Name": "In", "Kind": "Input", "N": "auto", "DataSet": "in"},
    {"Name": "H", "Kind": "Hidden", "N": 5, "Activation": "Linear", "BatchNormalization": true},
    {"Name": "Out", "Kind": "Output", "N": "auto", "DataSet": "out", "Activation": "Sigmoid"}]})";

// z = x W + b of layer H for examples [first, first + rows), on the host in double.
std::vector<double> pre_activations(Fixture& f, uint32_t first, uint32_t rows) {
  auto& h = dynamic_cast<FullyConnectedLayer&>(f.net->layer("H"));
  const auto w = h.connections()[0]->weights.value.to_host();
  const auto b = h.connections()[0]->bias.value.to_host();
  const auto& x = f.sets[0].dense;
  std::vector<double> z(size_t(rows) * kUnits);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t o = 0; o < kUnits; ++o) {
      double s = b[o];
      for (uint32_t i = 0; i < kIn; ++i) s += double(x[(first + r) * kIn + i]) * w[i * kUnits + o];
      z[r * kUnits + o] = s;
    }
  return z;
}

void forward_examples(Fixture& f, uint32_t first, uint32_t rows, bool training) {
  f.net->set_max_batch(kExamples);
  BatchLoader loader(f.bound, {}, 1);
  std::vector<uint32_t> ids(rows);
  std::iota(ids.begin(), ids.end(), first);
  HostBatch hb;
  loader.assemble(ids.data(), rows, 1, false, hb);
  load_inputs(*f.net, f.bound, hb);
  LayerContext ctx{f.net->backend(), rows, training, 1, 1};
  f.net->forward(ctx);
}

std::vector<float> activations(Fixture& f, const std::string& layer, uint32_t rows) {
  std::vector<float> a(size_t(rows) * f.net->layer(layer).units());
  f.net->backend().download(a.data(), f.net->layer(layer).activations(), a.size() * sizeof(float));
  return a;
}

TEST(FeaturesBatchNorm, TrainingNormalisesEachUnitOverTheBatch) {
  Fixture f(kNet, sets());
  forward_examples(f, 0, 8, true);
  const auto a = activations(f, "H", 8);  // Linear activation: a = normalised z
  for (uint32_t o = 0; o < kUnits; ++o) {
    double mean = 0.0, sq = 0.0;
    for (uint32_t r = 0; r < 8; ++r) mean += a[r * kUnits + o] / 8.0;
    for (uint32_t r = 0; r < 8; ++r) sq += (a[r * kUnits + o] - mean) * (a[r * kUnits + o] - mean);
    EXPECT_NEAR(mean, 0.0, 1e-5) << o;
    EXPECT_NEAR(sq / 8.0, 1.0, 1e-3) << o;  // biased variance, eps = 1e-5 against var ~0.3
  }
}

TEST(FeaturesBatchNorm, RunningStatisticsAreMovingAveragesUsedInPrediction) {
  Fixture f(kNet, sets());
  std::vector<double> rm(kUnits, 0.0), rv(kUnits, 1.0);
  for (uint32_t first : {0u, 8u}) {  // two different minibatches
    forward_examples(f, first, 8, true);
    const auto z = pre_activations(f, first, 8);
    for (uint32_t o = 0; o < kUnits; ++o) {
      double mean = 0.0, sq = 0.0;
      for (uint32_t r = 0; r < 8; ++r) mean += z[r * kUnits + o] / 8.0;
      for (uint32_t r = 0; r < 8; ++r)
        sq += (z[r * kUnits + o] - mean) * (z[r * kUnits + o] - mean);
      rm[o] = 0.9 * rm[o] + 0.1 * mean;
      rv[o] = 0.9 * rv[o] + 0.1 * sq / 7.0;
    }
  }
  BatchNorm* bn = dynamic_cast<FullyConnectedLayer&>(f.net->layer("H")).batch_norm();
  ASSERT_NE(bn, nullptr);
  EXPECT_TRUE(all_near_d(bn->running_mean().to_host(), rm, 1e-5));
  EXPECT_TRUE(all_near_d(bn->running_variance().to_host(), rv, 1e-5));

  // Prediction: (z - running mean) / sqrt(running var + eps), scale 1, bias 0, all examples.
  forward_examples(f, 0, kExamples, false);
  const auto a = activations(f, "H", kExamples);
  const auto z = pre_activations(f, 0, kExamples);
  for (size_t i = 0; i < a.size(); ++i) {
    const uint32_t o = i % kUnits;
    EXPECT_NEAR(a[i], (z[i] - rm[o]) / std::sqrt(rv[o] + 1e-5), 1e-4) << i;
  }
}

TrainOptions adam(uint32_t epochs) {
  TrainOptions o;
  o.epochs = epochs;
  o.minibatch = 8;
  o.optimizer.kind = OptimizerKind::Adam;
  o.optimizer.alpha = 0.05f;
  o.optimizer.lambda = 0.1f;  // large: regularising the scale would show
  o.progress_seconds = 0;
  return o;
}

TEST(FeaturesBatchNorm, ScaleAndBiasAreTrainedButNotRegularised) {
  Fixture f(kNet, sets());
  std::vector<Parameter*> bn;
  for (Parameter* p : f.net->parameters())
    if (p->name.find("BN") != std::string::npos) bn.push_back(p);
  ASSERT_EQ(bn.size(), 2u);
  EXPECT_EQ(bn[0]->name, "H:scaleBN");
  EXPECT_EQ(bn[1]->name, "H:biasBN");
  EXPECT_FALSE(bn[0]->regularize);
  EXPECT_FALSE(bn[1]->regularize);
  TrainingLoop t(*f.net, f.bound, adam(3), null_log());
  t.run();
  for (Parameter* p : bn) {
    const auto v = p->value.to_host();
    const float start = p == bn[0] ? 1.0f : 0.0f;
    double moved = 0.0;
    for (float x : v) moved += std::fabs(x - start);
    EXPECT_GT(moved, 1e-3) << p->name;
    EXPECT_EQ(p->state.size(), 2u);  // Adam's moments
  }
}

TEST(FeaturesBatchNorm, ArraysAndOptimizerStateRoundTripThroughAFile) {
  Fixture f(kNet, sets());
  TrainingLoop t(*f.net, f.bound, adam(2), null_log());
  t.run();
  NetworkFile file = f.net->to_file();
  ASSERT_EQ(file.layers.size(), 1u);
  const LayerArrays& a = file.layers[0];
  EXPECT_EQ(a.layer, "H");
  EXPECT_EQ(a.bn_scale.size(), kUnits);
  EXPECT_EQ(a.bn_running_variance.size(), kUnits);
  EXPECT_EQ(a.bn_scale_state.size(), 2u);
  EXPECT_EQ(a.bn_bias_state.size(), 2u);

  NetworkFile back = file_round_trip(*f.net, "nn_features_bn");
  Fixture g(kNet, sets(), /*seed=*/1234);
  g.net->load_arrays(back);
  EXPECT_EQ(parameter_values(*g.net), parameter_values(*f.net));
  auto* bf = dynamic_cast<FullyConnectedLayer&>(f.net->layer("H")).batch_norm();
  auto* bg = dynamic_cast<FullyConnectedLayer&>(g.net->layer("H")).batch_norm();
  EXPECT_EQ(bg->running_mean().to_host(), bf->running_mean().to_host());
  EXPECT_EQ(bg->running_variance().to_host(), bf->running_variance().to_host());
  EXPECT_EQ(bg->scale().state[1].to_host(), bf->scale().state[1].to_host());
  EXPECT_EQ(predict(g, "Out", kExamples), predict(f, "Out", kExamples));
}

TEST(FeaturesBatchNorm, MissingArraysInitialiseAndWrongSizesAreNamed) {
  Fixture f(kNet, sets());
  TrainingLoop t(*f.net, f.bound, adam(1), null_log());
  t.run();
  NetworkFile file = f.net->to_file();
  auto* bn = dynamic_cast<FullyConnectedLayer&>(f.net->layer("H")).batch_norm();

  NetworkFile none = file;
  none.layers.clear();  // e.g. a DSSTNE file without the arrays
  f.net->load_arrays(none);
  EXPECT_EQ(bn->scale().value.to_host(), std::vector<float>(kUnits, 1.0f));
  EXPECT_EQ(bn->bias().value.to_host(), std::vector<float>(kUnits, 0.0f));
  EXPECT_EQ(bn->running_mean().to_host(), std::vector<float>(kUnits, 0.0f));
  EXPECT_EQ(bn->running_variance().to_host(), std::vector<float>(kUnits, 1.0f));

  NetworkFile bad = file;
  bad.layers[0].bn_running_mean.pop_back();
  try {
    f.net->load_arrays(bad);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'H': batch normalisation array runningMeanBN "
                                         "has 4 values, expected 5"),
              std::string::npos)
        << e.what();
  }
}

TEST(FeaturesBatchNorm, GradientsInInferenceModeUseTheRunningStatistics) {
  // As a DSSTNE-style Validate checks: forward and backward without batch statistics.
  Fixture f(kNet, sets(), 4);
  forward_examples(f, 0, 8, true);  // non-trivial running statistics
  forward_examples(f, 8, 8, true);
  const auto rm =
      dynamic_cast<FullyConnectedLayer&>(f.net->layer("H")).batch_norm()->running_mean().to_host();
  EXPECT_GE(check_all_gradients(f, 8, /*training=*/false), 50);
  // The check's forwards did not touch the running statistics.
  EXPECT_EQ(
      dynamic_cast<FullyConnectedLayer&>(f.net->layer("H")).batch_norm()->running_mean().to_host(),
      rm);
}

TEST(FeaturesBatchNorm, ComponentInSpatialMode) {
  // 3 channels of 4 values per example: statistics per channel over rows x 4 values.
  auto be = make_backend("cpu", 2);
  BatchNorm bn(*be, "conv", 3, 4, 0.25f);
  EXPECT_EQ(bn.momentum(), 0.25f);
  bn.initialize();
  const uint32_t rows = 5;
  Rng rng(3);
  std::vector<float> x(rows * 12);
  for (auto& v : x) v = float(rng.uniform() * 4 - 1);
  DeviceArray<float> dx(*be, x.size()), dy(*be, x.size()), dev_x(*be, x.size());
  dev_x.upload(x);
  bn.forward(rows, true, dev_x.data(), dy.data());
  const auto y = dy.to_host();
  for (uint32_t c = 0; c < 3; ++c) {
    double mean = 0.0, sq = 0.0, xm = 0.0;
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t i = 0; i < 4; ++i) {
        mean += y[r * 12 + c * 4 + i] / 20.0;
        xm += x[r * 12 + c * 4 + i] / 20.0;
      }
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t i = 0; i < 4; ++i) sq += std::pow(y[r * 12 + c * 4 + i] - mean, 2) / 20.0;
    EXPECT_NEAR(mean, 0.0, 1e-5);
    EXPECT_NEAR(sq, 1.0, 1e-3);
    EXPECT_NEAR(bn.running_mean().to_host()[c], 0.25 * xm, 1e-6);
  }
  // Backward: parameter gradients are batch means (sums / rows).
  std::vector<float> g(x.size(), 1.0f);
  dy.upload(g);
  bn.backward(rows, dev_x.data(), dy.data(), dx.data());
  for (float v : bn.bias().grad.to_host()) EXPECT_NEAR(v, 20.0 / rows, 1e-6);
  for (float v : dx.to_host()) EXPECT_NEAR(v, 0.0f, 1e-5f);  // a constant dy moves nothing

  LayerArrays saved = bn.save();
  EXPECT_EQ(saved.layer, "conv");
  BatchNorm other(*be, "conv", 3, 4);
  other.load(saved);
  EXPECT_EQ(other.running_mean().to_host(), bn.running_mean().to_host());
  BatchNorm wrong(*be, "conv", 4, 3);
  EXPECT_THROW(wrong.load(saved), DataError);
}

}  // namespace
}  // namespace nn::test
