// The training loop's use of step graphs (Backend::begin_step_graph; CUDA Graphs on the CUDA
// backend): which steps it records, and the rule that makes a recorded step one graph on CUDA:
// nothing inside it waits for the device, allocates or frees memory, or reads a value back
// (each would split the step). A CountingBackend posing as a recording device backend counts
// them; the CUDA side itself runs only on a GPU (scripts/gpu-check.sh).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backend/counting_backend.h"
#include "core/profiler.h"
#include "model/model_test_util.h"
#include "train/training_loop.h"

namespace nn::test {
namespace {

TrainOptions graph_options(uint32_t epochs, OptimizerKind kind) {
  TrainOptions o;
  o.epochs = epochs;
  o.minibatch = 16;
  o.optimizer.kind = kind;
  o.optimizer.alpha = 0.01f;
  o.optimizer.lambda = 1e-4f;
  o.seed = 5;
  o.progress_seconds = 0;
  return o;
}

struct Case {
  const char* name;
  const char* json;
  OptimizerKind optimizer;
};

// The recommender autoencoder (sparse input updated row by row with RMSProp), the same with
// every stateful layer feature (dropout, batch normalisation, a sparseness penalty, transposed
// shared weights) under Adam, and a sampled output layer.
const Case kCases[] = {
    {"autoencoder", kTwoHiddenAutoencoder, OptimizerKind::RMSProp},
    {"features", R"({"Name": "ae", "ErrorFunction": "CrossEntropy", "Denoising": {"p": 0.2},
      "SparsenessPenalty": {"p": 0.1, "beta": 0.01}, "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Hidden", "Kind": "Hidden", "N": 16, "Activation": "Sigmoid", "pDropout": 0.1,
       "BatchNormalization": true, "Sparse": true},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
       "Activation": "Sigmoid", "SharedWeights": {"SourceInputLayer": "Input",
       "SourceOutputLayer": "Hidden", "InputLayer": "Hidden", "Transposed": true}}]})",
     OptimizerKind::Adam},
    {"sampled", R"({"Name": "ae", "ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Tanh"},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
       "Activation": "Sigmoid", "Sampling": {"Negatives": 5}}]})",
     OptimizerKind::SGD},
};

struct RecordingRun {
  std::unique_ptr<Fixture> fixture;
  CountingBackend* backend;
};

RecordingRun recording_run(const Case& c, size_t examples) {
  auto counting = std::make_unique<CountingBackend>(/*host_memory=*/false);
  CountingBackend* be = counting.get();
  be->record_steps = true;
  const auto rows = taste_rows(examples, 3);
  auto f = std::make_unique<Fixture>(
      c.json,
      std::vector<ExampleSet>{sparse_set("input", 32, rows), sparse_set("output", 32, rows)}, 7,
      std::move(counting));
  return {std::move(f), be};
}

// 100 examples in batches of 16: six full batches and one of 4 per epoch. The first step of each
// shape runs as usual (the full batch's in epoch 1, the short one's at the end of epoch 1); every
// later step is recorded. None of them waits for the stream or reads a value back; a buffer may
// still grow in epoch 1 (a batch with more non-zeros than any before: one split on CUDA), but
// from epoch 2 on no recorded step allocates or frees anything.
TEST(StepGraphs, EveryStepAfterTheFirstOfItsShapeIsRecordedWhole) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    RecordingRun r = recording_run(c, 100);
    std::vector<std::string> log;
    TrainingLoop t(*r.fixture->net, r.fixture->bound, graph_options(3, c.optimizer),
                   [&log](const std::string& line) { log.push_back(line); });
    size_t splits_in_epoch_1 = 0;
    t.on_epoch = [&](const EpochReport& e) {
      if (e.epoch == 1) splits_in_epoch_1 = r.backend->splits;
    };
    t.run();
    ASSERT_EQ(t.step(), 21u);
    EXPECT_EQ(r.backend->steps_begun, 19u);
    EXPECT_EQ(r.backend->steps_ended, 19u);
    EXPECT_EQ(r.backend->steps_abandoned, 0u);
    EXPECT_FALSE(r.backend->in_step);
    EXPECT_EQ(r.backend->wait_splits, 0u) << "a recorded step waited or read a value back";
    EXPECT_EQ(r.backend->splits, splits_in_epoch_1) << "a buffer grew after epoch 1";
    bool logged = false;
    for (const std::string& line : log) logged |= line == "19 of 21 steps ran as CUDA graphs";
    EXPECT_TRUE(logged);
  }
}

// Profiling times every range with events on the stream, so no step is recorded, and the
// profile says why.
TEST(StepGraphs, AProfiledRunRecordsNoStepAndSaysWhy) {
  RecordingRun r = recording_run(kCases[0], 64);
  std::vector<std::string> log;
  TrainingLoop t(*r.fixture->net, r.fixture->bound, graph_options(2, OptimizerKind::RMSProp),
                 [&log](const std::string& line) { log.push_back(line); });
  Profiler profiler(r.backend->make_profile_clock());
  t.set_profiler(&profiler, {/*table=*/false, ""});
  t.run();
  EXPECT_EQ(r.backend->steps_begun, 0u);
  bool said = false;
  for (const std::string& line : log)
    said |= line.find("profile: CUDA graphs: not used: --profile") == 0;
  EXPECT_TRUE(said);
}

// A step that throws while recorded is dropped (abandoned), not launched.
TEST(StepGraphs, AStepThatThrowsIsAbandoned) {
  RecordingRun r = recording_run(kCases[0], 64);
  TrainingLoop t(*r.fixture->net, r.fixture->bound, graph_options(2, OptimizerKind::RMSProp),
                 null_log());
  t.on_step = [](uint64_t step) {
    if (step == 3) throw std::runtime_error("stop at step 3");
  };
  EXPECT_THROW(t.run(), std::runtime_error);
  EXPECT_EQ(r.backend->steps_begun, 2u);  // steps 2 and 3
  EXPECT_EQ(r.backend->steps_ended, 1u);
  EXPECT_EQ(r.backend->steps_abandoned, 1u);
  EXPECT_FALSE(r.backend->in_step);
}

// Uploads beside the stream (Backend::begin_side_uploads): each step's inputs and targets are
// copied before the step, in a window that waits only for the step before the previous one (the
// last to read the same buffer set), so the copies can run while the previous step does. At an
// epoch's start both sets wait for everything before (validation, checkpoints).
TEST(UploadsBesideTheStream, EachStepsBatchWaitsForTheStepBeforeThePrevious) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    RecordingRun r = recording_run(c, 100);
    r.backend->side_stream = true;
    TrainingLoop t(*r.fixture->net, r.fixture->bound, graph_options(2, c.optimizer), null_log());
    t.run();
    ASSERT_EQ(t.step(), 14u);
    // Marks: epoch 1 starts with mark 1, then step k (1-based) ends with mark k + 1; epoch 2
    // starts with mark 9 and its steps end with marks 10 to 16.
    const std::vector<uint64_t> want{1, 1, 2, 3, 4, 5, 6, 9, 9, 10, 11, 12, 13, 14};
    EXPECT_EQ(r.backend->side_waits, want);
    EXPECT_FALSE(r.backend->in_side);
    // Every step copies at least its input's row offsets and indices beside the stream (and the
    // targets' where the loss is not the sampled layer's own).
    EXPECT_GE(r.backend->side_uploads, 14u * (std::string(c.name) == "sampled" ? 2u : 4u));
  }
}

// Training with the inputs in two alternating buffer sets, copied ahead of each step, gives the
// bits of the same training on the plain CPU backend (whose uploads are plain copies).
TEST(UploadsBesideTheStream, TrainingGivesTheSameWeights) {
  const Case& c = kCases[1];
  RecordingRun r = recording_run(c, 100);
  r.backend->side_stream = true;
  const auto rows = taste_rows(100, 3);
  Fixture cpu(c.json, {sparse_set("input", 32, rows), sparse_set("output", 32, rows)});
  TrainingLoop a(*r.fixture->net, r.fixture->bound, graph_options(3, c.optimizer), null_log());
  TrainingLoop b(*cpu.net, cpu.bound, graph_options(3, c.optimizer), null_log());
  const auto ra = a.run();
  const auto rb = b.run();
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t e = 0; e < ra.size(); ++e) EXPECT_EQ(ra[e].data_loss, rb[e].data_loss) << e;
  const auto pa = r.fixture->net->parameters(), pb = cpu.net->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_EQ(pa[i]->value.to_host(), pb[i]->value.to_host());
}

// The CPU backend records nothing and says so.
TEST(StepGraphs, TheCpuBackendRunsEachCallAsItIsMade) {
  const auto cpu = make_backend("cpu", 1);
  EXPECT_EQ(cpu->begin_step_graph(), "the cpu backend runs each call as it is made");
  cpu->end_step_graph();  // nothing to end: no effect
}

}  // namespace
}  // namespace nn::test
