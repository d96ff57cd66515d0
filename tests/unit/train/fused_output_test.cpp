// The training step's fused output activation (Backend::activate_loss_accumulate): which output
// layers take it (those whose activations nothing reads between the forward pass and the loss),
// and that the trainer then calls it once per such layer and batch, with the reports of the
// unfused composition.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "../backend/counting_backend.h"
#include "model/model_test_util.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

std::vector<std::vector<uint32_t>> rows_of(size_t n) {
  std::vector<std::vector<uint32_t>> rows(n);
  for (size_t i = 0; i < n; ++i) rows[i] = {uint32_t(i % 8), uint32_t(8 + i % 5), 20};
  return rows;
}

TrainOptions two_epochs() {
  TrainOptions o;
  o.epochs = 2;
  o.minibatch = 8;
  o.optimizer.kind = OptimizerKind::SGD;
  o.optimizer.alpha = 0.1f;
  o.seed = 5;
  o.progress_seconds = 0;
  return o;
}

TEST(FusedOutputActivation, OnlyOutputsNothingElseReadsAreDeferrable) {
  const auto rows = rows_of(32);
  // Mid is an output that Output reads: its activations are needed during the forward pass.
  const char* json = R"({"ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Hidden", "Kind": "Hidden", "N": 6, "Activation": "Tanh", "pDropout": 0.1},
      {"Name": "Mid", "Kind": "Output", "N": "auto", "Source": "Hidden", "DataSet": "mid",
       "Activation": "Sigmoid"},
      {"Name": "Output", "Kind": "Output", "N": "auto", "Source": "Mid", "DataSet": "output",
       "Activation": "SoftMax"}]})";
  auto counting = std::make_unique<CountingBackend>();
  CountingBackend* be = counting.get();
  Fixture f(
      json,
      {sparse_set("input", 24, rows), sparse_set("mid", 24, rows), sparse_set("output", 24, rows)},
      7, std::move(counting));
  EXPECT_FALSE(f.net->layer("Hidden").activation_deferrable());
  EXPECT_FALSE(f.net->layer("Mid").activation_deferrable());
  EXPECT_TRUE(f.net->layer("Output").activation_deferrable());

  Fixture plain(
      json,
      {sparse_set("input", 24, rows), sparse_set("mid", 24, rows), sparse_set("output", 24, rows)},
      7);
  TrainingLoop t(*f.net, f.bound, two_epochs(), [](const std::string&) {});
  TrainingLoop tp(*plain.net, plain.bound, two_epochs(), [](const std::string&) {});
  be->clear();
  const auto r = t.run();
  EXPECT_EQ(be->fused_losses, 2u * 32u / 8u) << "one fused call per batch, for Output only";
  // The CPU's fused operation is the composition: the same reports as any CPU run.
  const auto rp = tp.run();
  ASSERT_EQ(r.size(), rp.size());
  for (size_t e = 0; e < r.size(); ++e) EXPECT_EQ(r[e].data_loss, rp[e].data_loss) << e;
}

TEST(FusedOutputActivation, MaxOutOutputsKeepTheUnfusedPath) {
  const auto rows = rows_of(16);
  const char* json = R"({"ErrorFunction": "L2", "Maxout": {"k": 2}, "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
       "Activation": "MaxOut"}]})";
  auto counting = std::make_unique<CountingBackend>();
  CountingBackend* be = counting.get();
  Fixture f(json, {sparse_set("input", 24, rows), sparse_set("output", 24, rows)}, 7,
            std::move(counting));
  EXPECT_FALSE(f.net->layer("Output").activation_deferrable());
  TrainingLoop t(*f.net, f.bound, two_epochs(), [](const std::string&) {});
  t.run();
  EXPECT_EQ(be->fused_losses, 0u);
}

}  // namespace
}  // namespace nn::test
