// Validation during training: the metric that fits the network (recall@K for a recommender, with
// the example's input items left out of the ranking; top-1 accuracy for a classifier), the
// evaluation interval, early stopping with patience, keeping the best network, and the model
// summary printed at the start of training.
#include "train/validation.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/memory_budget.h"
#include "core/random.h"
#include "model/model_summary.h"
#include "model/model_test_util.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

const char* kAutoencoder = R"({
  "Name": "ae", "ErrorFunction": "CrossEntropy",
  "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
    {"Name": "Hidden", "Kind": "Hidden", "N": 16, "Activation": "Sigmoid"},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid"}
  ]})";

// Users of 4 tastes (items taste*8 .. taste*8+7): `in` gets items 0..3 of the taste, `out` items
// 4..7 (the held-out part); with `other_taste`, `out` holds items of the next taste instead.
void taste_split(size_t n, uint64_t seed, bool other_taste, std::vector<std::vector<uint32_t>>& in,
                 std::vector<std::vector<uint32_t>>& out) {
  Rng rng(seed);
  in.assign(n, {});
  out.assign(n, {});
  for (size_t e = 0; e < n; ++e) {
    const uint32_t taste = uint32_t(rng.below(4));
    const uint32_t target = other_taste ? (taste + 1) % 4 : taste;
    for (uint32_t j = 0; j < 4; ++j) in[e].push_back(taste * 8 + j);
    for (uint32_t j = 4; j < 8; ++j) out[e].push_back(target * 8 + j);
  }
}

std::vector<std::vector<uint32_t>> full_rows(const std::vector<std::vector<uint32_t>>& a,
                                             const std::vector<std::vector<uint32_t>>& b) {
  auto rows = a;
  for (size_t e = 0; e < rows.size(); ++e) rows[e].insert(rows[e].end(), b[e].begin(), b[e].end());
  return rows;
}

TrainOptions options(uint32_t epochs) {
  TrainOptions o;
  o.epochs = epochs;
  o.minibatch = 32;
  o.optimizer.kind = OptimizerKind::Adam;
  o.optimizer.alpha = 0.02f;
  o.optimizer.mu = 0.9f;
  o.optimizer.mu1 = 0.999f;
  o.seed = 5;
  o.progress_seconds = 0;
  o.validation_k = 4;
  return o;
}

struct Validation {
  std::vector<ExampleSet> sets;
  BoundData bound;
  Validation(const Fixture& f, std::vector<ExampleSet> data) : sets(std::move(data)) {
    bound = bind_datasets(f.spec, sets, true, "validation");
  }
};

TEST(Validation, RecommenderReportsRecallOfHeldOutItems) {
  std::vector<std::vector<uint32_t>> in, out;
  taste_split(128, 1, false, in, out);
  const auto rows = full_rows(in, out);
  Fixture f(kAutoencoder, {sparse_set("input", 32, rows), sparse_set("output", 32, rows)});
  taste_split(64, 2, false, in, out);
  Validation v(f, {sparse_set("input", 32, in), sparse_set("output", 32, out)});

  TrainingLoop t(*f.net, f.bound, options(12), null_log());
  t.set_validation(v.bound);
  const auto reports = t.run();
  ASSERT_EQ(reports.size(), 12u);
  const ValidationResult& last = reports.back().validation;
  ASSERT_TRUE(reports.back().validated);
  EXPECT_EQ(last.metric, "recall@4");
  EXPECT_TRUE(last.higher_is_better);
  EXPECT_EQ(last.examples, 64u);
  ASSERT_GE(last.values.size(), 3u);
  EXPECT_EQ(last.values[0].first, "recall@4");
  EXPECT_EQ(last.values[1].first, "ndcg@4");
  // The four held-out items of the user's taste are the four best once the input's own four
  // are left out of the ranking.
  EXPECT_GT(last.value, 0.9);
}

TEST(Validation, InputItemsAreNotRanked) {
  // Validation targets equal to the inputs: with the inputs left out, no target can be ranked.
  std::vector<std::vector<uint32_t>> in, out;
  taste_split(64, 3, false, in, out);
  Fixture f(kAutoencoder, {sparse_set("input", 32, in), sparse_set("output", 32, in)});
  Validation v(f, {sparse_set("input", 32, in), sparse_set("output", 32, in)});
  f.net->set_max_batch(16);
  Validator validator(*f.net, v.bound, 4, *f.bound.outputs[0].dataset);
  const ValidationResult r = validator.evaluate();
  EXPECT_EQ(r.metric, "recall@4");
  EXPECT_EQ(r.value, 0.0);
  EXPECT_EQ(f.net->max_batch(), 16u) << "the minibatch allocation is restored";
}

TEST(Validation, ClassifierReportsAccuracy) {
  // Two classes: x0 > x1 or not.
  Rng rng(4);
  auto make = [&](size_t n, std::vector<float>& x, std::vector<std::vector<uint32_t>>& y) {
    for (size_t e = 0; e < n; ++e) {
      const float a = float(rng.uniform()), b = float(rng.uniform());
      x.push_back(a);
      x.push_back(b);
      y.push_back({a > b ? 0u : 1u});
    }
  };
  std::vector<float> x, vx;
  std::vector<std::vector<uint32_t>> y, vy;
  make(256, x, y);
  make(64, vx, vy);
  Fixture f(R"({"Name": "cls", "ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input"},
      {"Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Tanh"},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "SoftMax"}]})",
            {dense_set("input", 2, x), sparse_set("output", 2, y)});
  Validation v(f, {dense_set("input", 2, vx), sparse_set("output", 2, vy)});
  TrainingLoop t(*f.net, f.bound, options(20), null_log());
  t.set_validation(v.bound);
  const auto reports = t.run();
  const ValidationResult& last = reports.back().validation;
  EXPECT_EQ(last.metric, "accuracy");
  EXPECT_GT(last.value, 0.9);
}

TEST(Validation, EvaluatesEveryIntervalAndAfterTheLastEpoch) {
  std::vector<std::vector<uint32_t>> in, out;
  taste_split(64, 5, false, in, out);
  Fixture f(kAutoencoder, {sparse_set("input", 32, in), sparse_set("output", 32, out)});
  Validation v(f, {sparse_set("input", 32, in), sparse_set("output", 32, out)});
  TrainOptions o = options(7);
  o.validation_interval = 3;
  TrainingLoop t(*f.net, f.bound, o, null_log());
  t.set_validation(v.bound);
  const auto reports = t.run();
  std::vector<uint64_t> validated;
  for (const auto& r : reports)
    if (r.validated) validated.push_back(r.epoch);
  EXPECT_EQ(validated, (std::vector<uint64_t>{3, 6, 7}));
}

TEST(Validation, EarlyStoppingKeepsTheBestNetwork) {
  // Validation targets from another taste than the input: learning the training data makes
  // them less likely, so the metric stops improving and training stops early.
  std::vector<std::vector<uint32_t>> in, out, vin, vout;
  taste_split(256, 6, false, in, out);
  const auto rows = full_rows(in, out);
  Fixture f(kAutoencoder, {sparse_set("input", 32, rows), sparse_set("output", 32, rows)});
  taste_split(64, 7, true, vin, vout);
  Validation v(f, {sparse_set("input", 32, vin), sparse_set("output", 32, vout)});
  TrainOptions o = options(40);
  o.patience = 2;
  TrainingLoop t(*f.net, f.bound, o, null_log());
  t.set_validation(v.bound);
  std::vector<std::vector<std::vector<float>>> weights;  // per epoch
  t.on_epoch = [&](const EpochReport&) {
    std::vector<std::vector<float>> w;
    for (Parameter* p : f.net->parameters()) w.push_back(p->value.to_host());
    weights.push_back(w);
  };
  const auto reports = t.run();
  ASSERT_LT(reports.size(), 40u) << "training should have stopped early";
  EXPECT_NE(t.stop_reason().find("did not improve in 2 evaluations"), std::string::npos)
      << t.stop_reason();
  // The best epoch (first of equals) is the one whose weights the network holds now.
  size_t best = 0;
  for (size_t i = 1; i < reports.size(); ++i)
    if (reports[i].validation.value > reports[best].validation.value) best = i;
  ASSERT_EQ(reports.size(), best + 1 + 2) << "stops after 2 evaluations without improvement";
  EXPECT_EQ(t.restored_epoch(), best + 1);
  std::vector<std::vector<float>> now;
  for (Parameter* p : f.net->parameters()) now.push_back(p->value.to_host());
  EXPECT_EQ(now, weights[best]);
  EXPECT_NE(now, weights.back());
}

TEST(TrainerProgress, LinesCarryExamplesPerSecondAndEta) {
  std::vector<std::vector<uint32_t>> in, out;
  taste_split(64, 9, false, in, out);
  Fixture f(kAutoencoder, {sparse_set("input", 32, in), sparse_set("output", 32, out)});
  TrainOptions o = options(2);
  o.progress_seconds = 1e-9;  // a progress line after every batch
  std::vector<std::string> lines;
  TrainingLoop t(*f.net, f.bound, o, [&](const std::string& l) { lines.push_back(l); });
  const auto reports = t.run();
  auto find = [&](const std::string& prefix) -> std::string {
    for (const auto& l : lines)
      if (l.rfind(prefix, 0) == 0) return l;
    return "";
  };
  const std::string progress = find("epoch 1: batch 1/2 (50%), loss so far ");
  EXPECT_NE(progress.find(" examples/s, "), std::string::npos) << progress;
  EXPECT_NE(progress.find(", epoch ETA "), std::string::npos) << progress;
  const std::string first = find("epoch 1/2: loss ");
  EXPECT_NE(first.find(" examples/s, "), std::string::npos) << first;
  EXPECT_NE(first.find(", ETA "), std::string::npos) << first;
  const std::string last = find("epoch 2/2: loss ");
  ASSERT_FALSE(last.empty());
  EXPECT_EQ(last.find("ETA"), std::string::npos) << "no ETA after the last epoch: " << last;
  EXPECT_GT(reports[0].examples_per_second, 0.0);
  EXPECT_FLOAT_EQ(float(reports[0].alpha), 0.02f);
}

TEST(ModelSummary, CountsParametersPerLayer) {
  std::vector<std::vector<uint32_t>> in, out;
  taste_split(16, 8, false, in, out);
  Fixture f(kAutoencoder, {sparse_set("input", 32, in), sparse_set("output", 32, out)});
  f.net->set_max_batch(4);
  const ModelSummary s = summarize(*f.net);
  ASSERT_EQ(s.layers.size(), 3u);
  EXPECT_EQ(s.layers[0].name, "Input");
  EXPECT_EQ(s.layers[0].parameters, 0u);
  EXPECT_EQ(s.layers[1].parameters, 32u * 16 + 16);
  EXPECT_EQ(s.layers[2].parameters, 16u * 32 + 32);
  EXPECT_EQ(s.layers[1].shape, "16");
  EXPECT_EQ(s.layers[1].kind, "Hidden FullyConnected Sigmoid");
  EXPECT_EQ(s.parameters, f.net->parameter_count());
  // Activations + deltas of Hidden and Output at 4 rows.
  EXPECT_EQ(s.activation_bytes, 4u * (16 + 32) * 4 * 2);
  const auto lines = format_summary(s, 4);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_NE(lines[2].find("Hidden"), std::string::npos);
  EXPECT_NE(lines[2].find("528"), std::string::npos) << lines[2];
  EXPECT_NE(lines[4].find("total"), std::string::npos);
  EXPECT_NE(lines[4].find("1072"), std::string::npos) << lines[4];
  EXPECT_EQ(format_bytes(3 * 1024 * 1024 / 2), "1.5 MiB");
}

}  // namespace
}  // namespace nn::test
