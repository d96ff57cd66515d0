// Data-parallel training with several ranks in one process (thread_communicator.h): three ranks
// with uneven row splits (batches of 7: 3 + 2 + 2 rows; the last batch of 40 examples: 2 + 2 + 1)
// end with the weights of a single process. The ranks' gradients are means over their own rows,
// so only weights of rows / global rows make their sum the global batch mean; a weight of
// 1 / ranks (or none) gives other weights, which this test sees without mpirun.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "model/model_test_util.h"
#include "train/thread_communicator.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

const char* kNetwork = R"({
  "Name": "dp", "ErrorFunction": "CrossEntropy",
  "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
    {"Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Sigmoid"},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid"}
  ]})";

TrainOptions options() {
  TrainOptions o;
  o.epochs = 3;
  o.minibatch = 7;  // 40 examples: five batches of 7 (3 + 2 + 2 rows), then 5 (2 + 2 + 1)
  o.optimizer.kind = OptimizerKind::SGD;  // the weights move by the gradient itself
  o.optimizer.alpha = 0.5f;
  o.seed = 21;
  o.progress_seconds = 0;
  return o;
}

std::vector<std::vector<float>> train(int ranks, int rank,
                                      const std::shared_ptr<ThreadGroup>& group) {
  const auto rows = random_rows(17, 40, 20, 4);
  Fixture f(kNetwork, {sparse_set("input", 20, rows), sparse_set("output", 20, rows)}, 5,
            make_backend("cpu", 1));
  std::unique_ptr<Communicator> comm;
  if (ranks > 1) comm = std::make_unique<ThreadCommunicator>(group, rank);
  TrainingLoop loop(*f.net, f.bound, options(), null_log(), comm.get());
  loop.run();
  std::vector<std::vector<float>> weights;
  for (Parameter* p : f.net->parameters()) weights.push_back(p->value.to_host());
  return weights;
}

TEST(DataParallelThreads, UnevenSplitsOverThreeRanksEqualOneProcess) {
  const auto one = train(1, 0, nullptr);
  auto group = std::make_shared<ThreadGroup>(3);
  std::vector<std::vector<std::vector<float>>> ranks(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] { ranks[size_t(r)] = train(3, r, group); });
  for (auto& t : threads) t.join();

  ASSERT_EQ(ranks[0].size(), one.size());
  double largest_change = 0;
  for (size_t p = 0; p < one.size(); ++p)
    for (size_t i = 0; i < one[p].size(); ++i) {
      for (int r = 0; r < 3; ++r)  // every rank holds the same network
        ASSERT_EQ(ranks[size_t(r)][p][i], ranks[0][p][i]) << "rank " << r << " parameter " << p;
      EXPECT_NEAR(ranks[0][p][i], one[p][i], 1e-5f * std::max(1.0f, std::fabs(one[p][i])))
          << "parameter " << p << " entry " << i;
      largest_change = std::max(largest_change, double(std::fabs(one[p][i])));
    }
  EXPECT_GT(largest_change, 0.0);
}

}  // namespace
}  // namespace nn::test

namespace nn::test {
namespace {

// A sampled output layer (train/sampled_output.h) trained by three ranks: they agree on the
// columns (the union of their targets, the same draws) and sum their compact gradients weighted
// by rows, so they end with one process's weights; ranks without rows in the short last batch
// still take part.
std::vector<std::vector<float>> train_sampled(int ranks, int rank,
                                              const std::shared_ptr<ThreadGroup>& group) {
  const auto in = random_rows(17, 40, 20, 4);
  const auto out = random_rows(18, 40, 60, 2);
  const char* json = R"({"ErrorFunction": "CrossEntropy", "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
    {"Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Tanh"},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "SoftMax",
     "Sampling": {"Negatives": 6, "Distribution": "Popularity"}}]})";
  Fixture f(json, {sparse_set("input", 20, in), sparse_set("output", 60, out)}, 5,
            make_backend("cpu", 1));
  std::unique_ptr<Communicator> comm;
  if (ranks > 1) comm = std::make_unique<ThreadCommunicator>(group, rank);
  TrainOptions o = options();
  o.minibatch = 13;  // 40 examples: 13, 13, 13, then 1 row (two ranks without rows)
  o.optimizer.kind = OptimizerKind::Adam;
  o.optimizer.alpha = 0.01f;
  TrainingLoop loop(*f.net, f.bound, o, null_log(), comm.get());
  loop.run();
  std::vector<std::vector<float>> weights;
  for (Parameter* p : f.net->parameters()) weights.push_back(p->value.to_host());
  return weights;
}

TEST(DataParallelThreads, SampledOutputOverThreeRanksEqualsOneProcess) {
  const auto one = train_sampled(1, 0, nullptr);
  auto group = std::make_shared<ThreadGroup>(3);
  std::vector<std::vector<std::vector<float>>> ranks(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back([&, r] { ranks[size_t(r)] = train_sampled(3, r, group); });
  for (auto& t : threads) t.join();
  ASSERT_EQ(ranks[0].size(), one.size());
  for (size_t p = 0; p < one.size(); ++p)
    for (size_t i = 0; i < one[p].size(); ++i) {
      for (int r = 1; r < 3; ++r)
        ASSERT_EQ(ranks[size_t(r)][p][i], ranks[0][p][i]) << "rank " << r << " parameter " << p;
      EXPECT_NEAR(ranks[0][p][i], one[p][i], 2e-5f * std::max(1.0f, std::fabs(one[p][i])))
          << "parameter " << p << " entry " << i;
    }
}

}  // namespace
}  // namespace nn::test
