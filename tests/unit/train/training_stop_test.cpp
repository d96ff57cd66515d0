// A stop request (core/stop_request.h, what SIGTERM sets in the tools) ends training after the
// minibatch in flight with a checkpoint of that exact state, mid-epoch included; a run resumed
// from it ends with the same parameters, bit for bit, and the same losses as an uninterrupted run.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

#include "core/error.h"
#include "core/stop_request.h"
#include "data/data_test_util.h"
#include "io/network_file.h"
#include "model/model_test_util.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

const char* kNetwork = R"({
  "Name": "ae", "ErrorFunction": "CrossEntropy", "Denoising": {"p": 0.2},
  "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
    {"Name": "Hidden", "Kind": "Hidden", "N": 16, "Activation": "Sigmoid", "pDropout": 0.1,
     "BatchNormalization": true},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid"}
  ]})";

std::vector<ExampleSet> data() {
  Rng rng(3);
  std::vector<std::vector<uint32_t>> rows(100);
  for (auto& r : rows) {
    const uint32_t taste = uint32_t(rng.below(4));
    for (uint32_t j = 0; j < 8; ++j)
      if (rng.uniform() < 0.6) r.push_back(taste * 8 + j);
    if (r.empty()) r.push_back(taste * 8);
  }
  return {sparse_set("input", 32, rows), sparse_set("output", 32, rows)};
}

TrainOptions options(const std::string& checkpoints) {
  TrainOptions o;
  o.epochs = 4;
  o.minibatch = 16;  // 7 minibatches per epoch
  o.optimizer.kind = OptimizerKind::Adam;
  o.optimizer.alpha = 0.01f;
  o.optimizer.lambda = 1e-4f;
  o.seed = 99;
  o.progress_seconds = 0;
  o.checkpoint_name = checkpoints;
  o.checkpoint_interval = checkpoints.empty() ? 0 : 1;
  return o;
}

std::vector<std::vector<float>> parameters(Network& net) {
  std::vector<std::vector<float>> out;
  for (Parameter* p : net.parameters()) out.push_back(p->value.to_host());
  return out;
}

// Requests a stop at the start of update `step` (as a signal arriving during that minibatch).
void stop_at(TrainingLoop& loop, uint64_t step) {
  loop.on_step = [step](uint64_t s) {
    if (s == step) request_stop(SIGTERM);
  };
}

struct Outcome {
  std::vector<std::vector<float>> params;
  std::vector<double> losses;
  TrainingState saved;  // the stopped run's checkpoint
};

Outcome uninterrupted() {
  Fixture f(kNetwork, data());
  TrainingLoop loop(*f.net, f.bound, options(""), null_log());
  Outcome out;
  for (const EpochReport& r : loop.run()) out.losses.push_back(r.loss);
  out.params = parameters(*f.net);
  return out;
}

// Trains with a stop at `step`, then resumes from the checkpoint it names.
Outcome stopped_and_resumed(uint64_t step, const TrainOptions& o, const std::string& expected) {
  clear_stop_request();
  Outcome out;
  {
    Fixture f(kNetwork, data());
    TrainingLoop loop(*f.net, f.bound, o, null_log());
    stop_at(loop, step);
    for (const EpochReport& r : loop.run()) out.losses.push_back(r.loss);
    EXPECT_EQ(loop.stopped(), SIGTERM);
    EXPECT_EQ(loop.stop_checkpoint(), expected);
    EXPECT_EQ(loop.step(), step);  // the minibatch in flight finished, no other
  }
  clear_stop_request();
  const NetworkFile ck = read_network_file(expected);
  out.saved = ck.training;
  Fixture g(kNetwork, data(), /*seed=*/1234);  // other initial weights: the file's must win
  g.net->load_arrays(ck);
  TrainingLoop loop(*g.net, g.bound, o, null_log());
  loop.restore(ck.training, expected);
  for (const EpochReport& r : loop.run()) out.losses.push_back(r.loss);
  EXPECT_EQ(loop.stopped(), 0);
  EXPECT_EQ(loop.epoch(), 4u);
  out.params = parameters(*g.net);
  return out;
}

TEST(TrainingStop, MidEpochStopThenResumeEqualsAnUninterruptedRun) {
  TempDir dir;
  const Outcome straight = uninterrupted();
  // Update 10 is minibatch 3 of epoch 2: the checkpoint holds epoch 1 done and 3 minibatches.
  const Outcome resumed = stopped_and_resumed(10, options(dir.file("ck")), dir.file("ck1_3.nc"));
  EXPECT_EQ(resumed.params, straight.params);
  EXPECT_EQ(resumed.losses, straight.losses);  // epoch 2's loss spans both runs
  EXPECT_EQ(resumed.saved.epoch, 1u);
  EXPECT_EQ(resumed.saved.batch, 3u);
  EXPECT_EQ(resumed.saved.step, 10u);
  // The resumed run's epoch-2 checkpoint supersedes the stopped run's.
  EXPECT_FALSE(std::filesystem::exists(dir.file("ck1_3.nc")));
  EXPECT_TRUE(std::filesystem::exists(dir.file("ck2.nc")));
}

// A stop during an epoch's last minibatch ends the epoch (its checkpoint is the stop's).
TEST(TrainingStop, StopInAnEpochsLastMinibatchStopsAtTheEpochBoundary) {
  TempDir dir;
  const Outcome resumed = stopped_and_resumed(14, options(dir.file("ck")), dir.file("ck2.nc"));
  EXPECT_EQ(resumed.params, uninterrupted().params);
}

// Without checkpoints the state goes to stop_checkpoint_name.
TEST(TrainingStop, RunWithoutCheckpointsSavesItsStateBesideTheResults) {
  TempDir dir;
  TrainOptions o = options("");
  o.stop_checkpoint_name = dir.file("net");
  const Outcome resumed = stopped_and_resumed(5, o, dir.file("net0_5.nc"));
  EXPECT_EQ(resumed.params, uninterrupted().params);
}

TEST(TrainingStop, MidEpochStateNeedsTheSameMinibatch) {
  TempDir dir;
  clear_stop_request();
  {
    Fixture f(kNetwork, data());
    TrainingLoop loop(*f.net, f.bound, options(dir.file("ck")), null_log());
    stop_at(loop, 3);
    loop.run();
  }
  clear_stop_request();
  const NetworkFile ck = read_network_file(dir.file("ck0_3.nc"));
  Fixture g(kNetwork, data());
  TrainOptions o = options(dir.file("ck"));
  o.minibatch = 8;
  TrainingLoop loop(*g.net, g.bound, o, null_log());
  try {
    loop.restore(ck.training, dir.file("ck0_3.nc"));
    ADD_FAILURE() << "restored";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("-b 16"), std::string::npos) << e.what();
  }
}

TEST(TrainingStop, StopBeforeAnyUpdateSavesNothing) {
  TempDir dir;
  clear_stop_request();
  request_stop(SIGINT);
  Fixture f(kNetwork, data());
  TrainingLoop loop(*f.net, f.bound, options(dir.file("ck")), null_log());
  EXPECT_TRUE(loop.run().empty());
  EXPECT_EQ(loop.stopped(), SIGINT);
  EXPECT_EQ(loop.stop_checkpoint(), "");
  EXPECT_EQ(loop.stop_position(), "before training started");
  clear_stop_request();
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace nn::test
