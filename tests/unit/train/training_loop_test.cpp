// TrainingLoop behaviour: it learns, checkpoints resume exactly, sparse and dense inputs agree,
// divergence is reported, and binding errors name what is wrong.
#include "train/training_loop.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <numeric>

#include "backend/counting_backend.h"
#include "core/error.h"
#include "io/network_file.h"
#include "model/model_test_util.h"
#include "train/step.h"

namespace nn::test {
namespace {

namespace fs = std::filesystem;

const char* kAutoencoder = R"({
  "Name": "ae", "ErrorFunction": "CrossEntropy", "Denoising": {"p": 0.2},
  "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
    {"Name": "Hidden", "Kind": "Hidden", "N": 16, "Activation": "Sigmoid", "pDropout": 0.1},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid"}
  ]})";

TrainOptions options(uint32_t epochs) {
  TrainOptions o;
  o.epochs = epochs;
  o.minibatch = 16;
  o.optimizer.kind = OptimizerKind::Adam;
  o.optimizer.alpha = 0.01f;
  o.optimizer.mu = 0.9f;
  o.optimizer.mu1 = 0.999f;
  o.optimizer.lambda = 1e-4f;
  o.seed = 99;
  o.progress_seconds = 0;
  return o;
}

std::vector<std::vector<float>> all_params(Network& net) {
  std::vector<std::vector<float>> out;
  for (Parameter* p : net.parameters()) out.push_back(p->value.to_host());
  return out;
}

TEST(TrainingLoop, LearnsCoOccurrence) {
  auto rows = taste_rows(256, 1);
  Fixture f(kAutoencoder, {sparse_set("input", 32, rows), sparse_set("output", 32, rows)});
  TrainingLoop t(*f.net, f.bound, options(15), null_log());
  auto reports = t.run();
  ASSERT_EQ(reports.size(), 15u);
  EXPECT_LT(reports.back().data_loss, 0.6 * reports.front().data_loss);
  for (const auto& r : reports) EXPECT_TRUE(std::isfinite(r.loss));
}

// The autoencoder with every stateful layer feature: batch normalisation (running statistics,
// scale/bias optimizer state), a transposed shared weight, dropout, a sparseness penalty.
const char* kFeatureAutoencoder = R"({
  "Name": "ae-features", "ErrorFunction": "CrossEntropy", "Denoising": {"p": 0.2},
  "SparsenessPenalty": {"p": 0.1, "beta": 0.01},
  "Layers": [
    {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
    {"Name": "Hidden", "Kind": "Hidden", "N": 16, "Activation": "Sigmoid", "pDropout": 0.1,
     "BatchNormalization": true, "Sparse": true},
    {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid",
     "SharedWeights": {"SourceInputLayer": "Input", "SourceOutputLayer": "Hidden",
                       "InputLayer": "Hidden", "Transposed": true}}
  ]})";

// Four epochs straight equal two epochs, a checkpoint, and two more from it (bit for bit).
void expect_resume_equals_uninterrupted_run(const char* json) {
  const fs::path dir = fs::temp_directory_path() / ("nn_resume_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto rows = taste_rows(100, 2);
  std::vector<ExampleSet> data{sparse_set("input", 32, rows), sparse_set("output", 32, rows)};

  Fixture straight(json, data);
  TrainingLoop a(*straight.net, straight.bound, options(4), null_log());
  a.run();

  Fixture first(json, data);
  TrainOptions o = options(2);
  o.checkpoint_name = (dir / "ck").string();
  o.checkpoint_interval = 1;
  TrainingLoop b(*first.net, first.bound, o, null_log());
  b.run();
  ASSERT_TRUE(fs::exists(dir / "ck2.nc"));

  NetworkFile ck = read_network_file((dir / "ck2.nc").string());
  ASSERT_TRUE(ck.training.present);
  EXPECT_EQ(ck.training.epoch, 2u);
  Fixture second(json, data, /*seed=*/12345);  // different init: must be overwritten
  second.net->load_arrays(ck);
  TrainingLoop c(*second.net, second.bound, options(4), null_log());
  c.restore(ck.training);
  c.run();
  EXPECT_EQ(c.epoch(), 4u);
  EXPECT_EQ(all_params(*straight.net), all_params(*second.net));
  // Not parameters, but state that prediction uses: batch normalisation's running statistics.
  EXPECT_EQ(straight.net->to_file().layers.size(), second.net->to_file().layers.size());
  for (size_t i = 0; i < straight.net->to_file().layers.size(); ++i) {
    EXPECT_EQ(straight.net->to_file().layers[i].bn_running_mean,
              second.net->to_file().layers[i].bn_running_mean);
    EXPECT_EQ(straight.net->to_file().layers[i].bn_running_variance,
              second.net->to_file().layers[i].bn_running_variance);
  }
  fs::remove_all(dir);
}

TEST(TrainingLoop, ResumeFromCheckpointEqualsUninterruptedRun) {
  expect_resume_equals_uninterrupted_run(kAutoencoder);
}

TEST(TrainingLoop, ResumeWithBatchNormSharedWeightsAndPenaltyEqualsUninterruptedRun) {
  expect_resume_equals_uninterrupted_run(kFeatureAutoencoder);
}

TEST(TrainingLoop, SparseAndDenseInputsGiveTheSameResult) {
  auto rows = taste_rows(64, 3);
  std::vector<std::vector<float>> values(rows.size());
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t j = 0; j < rows[r].size(); ++j) values[r].push_back(0.5f + 0.25f * float(j % 3));
  const char* json = R"({"ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input"},
      {"Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Tanh"},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid"}]})";
  ExampleSet sp = sparse_set("input", 32, rows, values);
  Fixture sparse(json, {sp, sparse_set("output", 32, rows)});
  Fixture dense(json, {densify(sp), densify(sparse_set("output", 32, rows))});
  TrainOptions o = options(3);
  TrainingLoop ts(*sparse.net, sparse.bound, o, null_log());
  TrainingLoop td(*dense.net, dense.bound, o, null_log());
  auto rs = ts.run();
  auto rd = td.run();
  for (size_t e = 0; e < rs.size(); ++e) EXPECT_NEAR(rs[e].loss, rd[e].loss, 1e-4 * rs[e].loss);
  auto ps = all_params(*sparse.net), pd = all_params(*dense.net);
  ASSERT_EQ(ps.size(), pd.size());
  for (size_t i = 0; i < ps.size(); ++i)
    for (size_t j = 0; j < ps[i].size(); ++j) EXPECT_NEAR(ps[i][j], pd[i][j], 1e-4f);
}

TEST(TrainingLoop, DivergenceNamesEpochAndBatch) {
  auto rows = taste_rows(64, 4);
  const char* json = R"({"ErrorFunction": "L2", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input"},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Linear"}]})";
  Fixture f(json, {sparse_set("input", 32, rows), sparse_set("output", 32, rows)});
  TrainOptions o = options(50);
  o.optimizer.kind = OptimizerKind::SGD;
  o.optimizer.alpha = 1e6f;
  TrainingLoop t(*f.net, f.bound, o, null_log());
  try {
    t.run();
    FAIL() << "expected DivergenceError";
  } catch (const DivergenceError& e) {
    EXPECT_NE(std::string(e.what()).find("epoch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("batch"), std::string::npos) << e.what();
  }
}

// On a device backend (posed by CountingBackend with host_memory false) the losses, penalties
// and regularisation are summed in backend memory and read back once per epoch (no
// value-returning call, a few downloads), with the same per-epoch reports as on the CPU.
TEST(TrainingLoop, LossesAreReadBackOncePerEpochOnDeviceBackends) {
  auto rows = taste_rows(256, 3);
  const char* json = R"({"Name": "ae", "ErrorFunction": "CrossEntropy",
      "SparsenessPenalty": {"p": 0.1, "beta": 0.05},
      "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "Hidden", "Kind": "Hidden", "N": 12, "Activation": "Sigmoid", "Sparse": true},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid"}]})";
  auto counting = std::make_unique<CountingBackend>(/*host_memory=*/false);
  CountingBackend* be = counting.get();
  Fixture dev(json, {sparse_set("input", 32, rows), sparse_set("output", 32, rows)}, 7,
              std::move(counting));
  Fixture cpu(json, {sparse_set("input", 32, rows), sparse_set("output", 32, rows)}, 7);
  TrainOptions o = options(3);
  o.optimizer.lambda1 = 1e-5f;
  TrainingLoop td(*dev.net, dev.bound, o, null_log());
  TrainingLoop tc(*cpu.net, cpu.bound, o, null_log());
  be->clear();
  const auto rd = td.run();
  EXPECT_EQ(be->value_returns, 0u) << "a loss or reduction returned a value (a GPU sync)";
  EXPECT_EQ(be->synchronizations, 0u) << "the loop waited for the stream";
  // Per epoch: the loss sums and the regularisation sums (256 / 16 = 16 batches, under the
  // divergence-check interval).
  EXPECT_LE(be->downloads, 2u * 3u);
  const auto rc = tc.run();
  ASSERT_EQ(rd.size(), rc.size());
  for (size_t e = 0; e < rd.size(); ++e) {
    EXPECT_EQ(rd[e].data_loss, rc[e].data_loss) << e;
    EXPECT_EQ(rd[e].reg_loss, rc[e].reg_loss) << e;
    EXPECT_GT(rd[e].reg_loss, 0.0);
  }
}

// Without a profiler the update of a step is one multi-tensor call for every parameter (one
// kernel launch on a GPU, not one per array: Backend::optimizer_step_multi), with the results of
// updating them one by one (ProfileTraining.ProfilingChangesNoResult compares the two paths).
TEST(TrainingLoop, OneOptimizerCallUpdatesEveryParameterOfAStep) {
  auto rows = taste_rows(64, 3);
  const char* json = R"({"Name": "ae", "ErrorFunction": "CrossEntropy", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true},
      {"Name": "H1", "Kind": "Hidden", "N": 12, "Activation": "Sigmoid"},
      {"Name": "H2", "Kind": "Hidden", "N": 8, "Activation": "Tanh"},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Sigmoid"}]})";
  auto counting = std::make_unique<CountingBackend>(/*host_memory=*/false);
  CountingBackend* be = counting.get();
  Fixture f(json, {sparse_set("input", 32, rows), sparse_set("output", 32, rows)}, 7,
            std::move(counting));
  ASSERT_EQ(f.net->parameters().size(), 6u);  // three weight matrices and three biases
  TrainingLoop t(*f.net, f.bound, options(2), null_log());  // Adam: no row-sparse input update
  be->clear();
  t.run();
  EXPECT_EQ(t.step(), 8u);
  EXPECT_EQ(be->optimizer_launches, t.step());
}

// Minibatch reports (TensorBoard's minibatch scalars) come at every multiple of the interval,
// across epoch ends, and together hold exactly the error the epochs report; on a device backend
// (loss sums read back only for them) the same numbers as on the CPU.
TEST(TrainingLoop, MinibatchReportsAddUpToTheEpochLosses) {
  auto rows = taste_rows(256, 5);
  for (const bool host : {true, false}) {
    Fixture f(kAutoencoder, {sparse_set("input", 32, rows), sparse_set("output", 32, rows)}, 7,
              std::make_unique<CountingBackend>(host));
    TrainOptions o = options(3);  // 16 minibatches of 16 per epoch
    o.minibatch_report_interval = 6;
    TrainingLoop t(*f.net, f.bound, o, null_log());
    std::vector<MinibatchReport> reports;
    t.on_minibatch = [&](const MinibatchReport& m) { reports.push_back(m); };
    const std::vector<EpochReport> epochs = t.run();
    ASSERT_EQ(reports.size(), 8u) << "steps 6, 12, ..., 48";
    double error = 0, expected = 0;
    for (size_t i = 0; i < reports.size(); ++i) {
      EXPECT_EQ(reports[i].step, 6 * (i + 1));
      EXPECT_EQ(reports[i].epoch, (reports[i].step - 1) / 16 + 1);
      EXPECT_EQ(reports[i].examples, 96u);
      EXPECT_EQ(reports[i].alpha, 0.01f);
      EXPECT_GT(reports[i].examples_per_second, 0);
      error += reports[i].loss * double(reports[i].examples);
    }
    for (const EpochReport& e : epochs) expected += e.data_loss * 256;
    EXPECT_NEAR(error, expected, 1e-9 * expected) << (host ? "host" : "device");
  }
}

// The divergence check, deferred on device backends, still names the first bad batch.
TEST(TrainingLoop, DeferredDivergenceCheckNamesTheSameBatch) {
  auto rows = taste_rows(64, 4);
  const char* json = R"({"ErrorFunction": "L2", "Layers": [
      {"Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input"},
      {"Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output", "Activation": "Linear"}]})";
  std::string messages[2];
  for (int device = 0; device < 2; ++device) {
    Fixture f(json, {sparse_set("input", 32, rows), sparse_set("output", 32, rows)}, 7,
              std::make_unique<CountingBackend>(/*host_memory=*/device == 0));
    TrainOptions o = options(50);
    o.minibatch = 4;
    o.optimizer.kind = OptimizerKind::SGD;
    o.optimizer.alpha = 1e6f;
    TrainingLoop t(*f.net, f.bound, o, null_log());
    try {
      t.run();
      FAIL() << "expected DivergenceError";
    } catch (const DivergenceError& e) {
      messages[device] = e.what();
    }
  }
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_NE(messages[1].find("batch"), std::string::npos) << messages[1];
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Binding, MissingDatasetIsNamed) {
  auto rows = taste_rows(8, 5);
  std::vector<ExampleSet> sets{sparse_set("input", 32, rows)};
  NetworkSpec spec = parse_network_json(kAutoencoder, "ae.json");
  const std::string msg = error_of([&] { resolve_auto_sizes(spec, sets); });
  EXPECT_NE(msg.find("ae.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'Output'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'output'"), std::string::npos) << msg;
}

TEST(Binding, WidthLargerThanLayerIsRejected) {
  auto rows = taste_rows(8, 6);
  std::vector<ExampleSet> sets{sparse_set("input", 32, rows), sparse_set("output", 32, rows)};
  NetworkSpec spec = parse_network_json(kAutoencoder, "ae.json");
  resolve_auto_sizes(spec, sets);
  spec.layers[0].n[0] = 16;
  const std::string msg = error_of([&] { bind_datasets(spec, sets, true, "d.nc"); });
  EXPECT_NE(msg.find("32 features"), std::string::npos) << msg;
  EXPECT_NE(msg.find("16 units"), std::string::npos) << msg;
}

TEST(Binding, ExampleCountMismatchIsRejected) {
  std::vector<ExampleSet> sets{sparse_set("input", 32, taste_rows(8, 7)),
                               sparse_set("output", 32, taste_rows(9, 7))};
  NetworkSpec spec = parse_network_json(kAutoencoder, "ae.json");
  resolve_auto_sizes(spec, sets);
  const std::string msg = error_of([&] { bind_datasets(spec, sets, true, "d.nc"); });
  EXPECT_NE(msg.find("9 examples"), std::string::npos) << msg;
}

}  // namespace
}  // namespace nn::test
