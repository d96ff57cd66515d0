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

namespace nn::test {
namespace {

// A sampled output layer split over three ranks (model parallel): every rank computes the same
// columns from the whole minibatch's targets and the columns of them in its slice for every
// row; SoftMax is normalised over the ranks, dE/dh summed back onto the ranks' rows. The
// gathered network equals one process's, for SoftMax and for Sigmoid, with the Hidden layer
// whole (data parallel) or split too, and with a last batch of one row. Also a whole sampled
// layer (data parallel) over a split Hidden layer.
struct SplitCase {
  const char* activation;
  const char* hidden_parallel;
  const char* output_parallel;
};

void PrintTo(const SplitCase& c, std::ostream* os) {
  *os << c.activation << ", Hidden " << c.hidden_parallel << ", Output " << c.output_parallel;
}

std::vector<std::vector<float>> train_sampled_split(const SplitCase& c, int ranks, int rank,
                                                    const std::shared_ptr<ThreadGroup>& group) {
  const auto in = random_rows(17, 40, 20, 4);
  const auto out = random_rows(18, 40, 61, 3);
  const std::string json = std::string(R"({"ErrorFunction": "CrossEntropy", "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
    {"Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Tanh", "Parallel": ")") +
                           c.hidden_parallel + R"("},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": ")" +
                           c.activation + R"(", "Parallel": ")" + c.output_parallel + R"(",
     "Sampling": {"Negatives": 9, "Distribution": "Popularity"}}]})";
  auto backend = make_backend("cpu", 1);
  std::vector<ExampleSet> sets{sparse_set("input", 20, in), sparse_set("output", 61, out)};
  NetworkSpec spec = parse_network_json(json, "test.json");
  resolve_auto_sizes(spec, sets);
  const BoundData bound = bind_datasets(spec, sets, true, "test data");
  std::unique_ptr<Communicator> comm;
  if (ranks > 1) comm = std::make_unique<ThreadCommunicator>(group, rank);
  NetworkParallel parallel;
  parallel.comm = comm.get();
  parallel.settings.minibatch = 13;
  parallel.settings.optimizer_states = 2;
  Network net(*backend, spec, bound.sparse_inputs(), parallel);
  if (ranks > 1) {
    EXPECT_EQ(net.layer("Output").sharded(), std::string(c.output_parallel) == "Model");
    EXPECT_EQ(net.layer("Hidden").sharded(), std::string(c.hidden_parallel) == "Model");
  }
  net.initialize(5);
  TrainOptions o = options();
  o.minibatch = 13;  // 40 examples: 13, 13, 13, then 1 row (two ranks without rows)
  o.optimizer.kind = OptimizerKind::Adam;
  o.optimizer.alpha = 0.01f;
  TrainingLoop loop(net, bound, o, null_log(), comm.get());
  loop.run();
  const NetworkFile file = net.to_file();  // collective: the slices gathered on rank 0
  std::vector<std::vector<float>> weights;
  for (const WeightArrays& w : file.weights) {
    weights.push_back(w.weights);
    weights.push_back(w.bias);
  }
  return weights;
}

class SampledOutputWithSplitLayers : public ::testing::TestWithParam<SplitCase> {};

TEST_P(SampledOutputWithSplitLayers, OverThreeRanksEqualsOneProcess) {
  const auto one = train_sampled_split(GetParam(), 1, 0, nullptr);
  auto group = std::make_shared<ThreadGroup>(3);
  std::vector<std::vector<std::vector<float>>> ranks(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r)
    threads.emplace_back(
        [&, r] { ranks[size_t(r)] = train_sampled_split(GetParam(), 3, r, group); });
  for (auto& t : threads) t.join();
  const auto& split = ranks[0];  // rank 0's file is the whole network
  ASSERT_EQ(split.size(), one.size());
  double largest_change = 0;
  for (size_t p = 0; p < one.size(); ++p) {
    ASSERT_EQ(split[p].size(), one[p].size()) << "array " << p;
    for (size_t i = 0; i < one[p].size(); ++i) {
      EXPECT_NEAR(split[p][i], one[p][i], 2e-5f * std::max(1.0f, std::fabs(one[p][i])))
          << "array " << p << " entry " << i;
      largest_change = std::max(largest_change, double(std::fabs(one[p][i])));
    }
  }
  EXPECT_GT(largest_change, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Cases, SampledOutputWithSplitLayers,
                         ::testing::Values(SplitCase{"SoftMax", "Data", "Model"},
                                           SplitCase{"SoftMax", "Model", "Model"},
                                           SplitCase{"Sigmoid", "Model", "Model"},
                                           SplitCase{"SoftMax", "Model", "Data"}),
                         [](const auto& info) {
                           return std::string(info.param.activation) + "Hidden" +
                                  info.param.hidden_parallel + "Output" +
                                  info.param.output_parallel;
                         });

}  // namespace
}  // namespace nn::test
