// The public job API (nn/train_job.h, nn/predict_job.h, nn/command_file.h, nn/generate.h): a
// training run resumed from its checkpoint ends exactly where an uninterrupted one does, a
// prediction job writes the lines the Evaluator's top K gives, metrics come back to the caller,
// a command file means the job its keys say, and bad inputs are named in the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "core/test_util.h"
#include "nn/nn.h"

namespace nn::api {
namespace {

using nn::test::error_of;
using nn::test::ScratchDir;

const char* kNetwork = R"({ "Name": "jobs", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Sigmoid" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
      "Activation": "Sigmoid" } ] })";

// 30 users with three tastes of six items each (tests/tools/lib/common.sh, tiny_ratings).
std::string ratings() {
  std::ostringstream out;
  for (int u = 0; u < 30; ++u) {
    out << 'u' << u << '\t';
    std::string items;
    for (int j = 0; j < 6; ++j)
      if ((u + j) % 4 != 0) items += (items.empty() ? "m" : ":m") + std::to_string(u % 3 * 6 + j);
    out << items << '\n';
  }
  return out.str();
}

// label<TAB>index lines -> index -> label.
std::map<uint32_t, std::string> read_labels(const std::string& path) {
  std::map<uint32_t, std::string> labels;
  std::ifstream in(path);
  std::string label;
  uint32_t index = 0;
  while (in >> label >> index) labels[index] = label;
  return labels;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A scratch directory with ratings.txt, input.nc, output.nc (18 items wide), features.idx,
// samples.idx and network.json.
class Jobs : public ::testing::Test {
 protected:
  void SetUp() override {
    ratings_ = dir_.write("ratings.txt", ratings());
    network_json_ = dir_.write("network.json", kNetwork);
    for (const char* name : {"input", "output"}) {
      GenerateJob g;
      g.dataset = name;
      g.input = ratings_;
      g.output = path(std::string(name) + ".nc");
      g.features = path("features.idx");
      g.samples = path("samples.idx");
      g.create_features = std::string(name) == "input";
      g.align = 1;  // 18 units, every one of them a labelled item
      DatasetGenerator(g).generate();
    }
  }

  std::string path(const std::string& name) const { return dir_.path() + "/" + name; }

  TrainJob train(uint32_t epochs, const std::string& results) const {
    TrainJob job;
    job.network_json = network_json_;
    job.data_files = {path("input.nc"), path("output.nc")};
    job.results = path(results);
    job.epochs = epochs;
    job.minibatch = 8;
    job.optimizer = "adam";
    job.alpha = 0.01f;
    job.seed = 11;
    job.backend = "cpu";
    job.threads = 2;
    return job;
  }

  ScratchDir dir_;
  std::string ratings_, network_json_;
};

TEST_F(Jobs, GeneratorReportsWhatItWrote) {
  GenerateJob g;
  g.dataset = "input";
  g.input = ratings_;
  g.output = path("again.nc");
  g.features = path("features.idx");
  g.samples = path("samples.idx");
  const GenerateReport r = DatasetGenerator(g).generate();
  EXPECT_EQ(r.samples, 30u);
  EXPECT_EQ(r.features, 18u);
  EXPECT_EQ(r.new_features, 0u);
  EXPECT_EQ(r.width, 128u);  // aligned to 128
  const auto sets = Dataset::read_netcdf(path("again.nc"));
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0].examples(), 30u);
  EXPECT_TRUE(sets[0].indicator());

  g.features = path("missing.idx");
  EXPECT_CONTAINS(error_of<DataError>([&] { DatasetGenerator{g}; }), "missing.idx");
}

TEST_F(Jobs, ResumedTrainingEndsWhereAnUninterruptedRunDoes) {
  TrainJob whole = train(4, "whole.nc");
  run_training(whole, null_log());

  TrainJob part = train(2, "part.nc");
  part.checkpoint_name = path("ck");
  part.checkpoint_interval = 2;
  std::vector<std::string> lines;
  run_training(part, [&](const std::string& l) { lines.push_back(l); });
  part.epochs = 4;
  part.resume = true;
  lines.clear();
  auto resumed = run_training(part, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_NE(std::find(lines.begin(), lines.end(), "resuming from " + path("ck2.nc")), lines.end());

  auto reference = Model::load(path("whole.nc"));
  auto from_file = Model::load(path("part.nc"));
  for (const WeightInfo& w : reference->weights()) {
    EXPECT_EQ(from_file->get_weights(w.name), reference->get_weights(w.name)) << w.name;
    EXPECT_EQ(resumed->get_weights(w.name), reference->get_weights(w.name)) << w.name;
  }
  // The per-epoch log beside the results holds every epoch, the resumed ones appended.
  std::istringstream log(read_text(path("part.epochs.jsonl")));
  std::string line;
  int records = 0;
  while (std::getline(log, line)) EXPECT_CONTAINS(line, "\"epoch\":" + std::to_string(++records));
  EXPECT_EQ(records, 4);
}

TEST_F(Jobs, TrainingStopsWhenTheCallbackSaysSoAndStillWritesTheResult) {
  TrainJob job = train(10, "stopped.nc");
  job.epoch_log = false;
  std::vector<uint64_t> epochs;
  run_training(job, null_log(), [&](const EpochStats& s) {
    epochs.push_back(s.epoch);
    return s.epoch < 3;
  });
  EXPECT_EQ(epochs, (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_NO_THROW(Model::load(path("stopped.nc")));
  EXPECT_FALSE(std::ifstream(path("stopped.epochs.jsonl")).good());
}

TEST_F(Jobs, GradientCheckPassesOnAFreshNetwork) {
  TrainJob job = train(1, "unused.nc");
  job.optimizer = "SGD";
  GradientCheckSettings check;
  check.max_entries = 50;
  const GradientCheckResult r = run_gradient_check(job, check, null_log());
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(r.arrays, 4u);  // two weight matrices, two biases
}

TEST_F(Jobs, PredictionWritesTheLinesOfTheEvaluatorsTopK) {
  run_training(train(3, "net.nc"), null_log());
  PredictJob job;
  job.network = path("net.nc");
  job.data_files = {path("input.nc")};
  job.sample_index = path("samples.idx");
  job.output_index = path("features.idx");
  job.filter = ratings_;  // each user's own items are left out
  job.output = path("recs.txt");
  job.target = path("output.nc");
  job.k = 5;
  job.backend = "cpu";
  const PredictResult result = run_prediction(job, null_log());
  EXPECT_EQ(result.examples, 30u);
  EXPECT_EQ(result.layer, "Output");
  ASSERT_EQ(result.precision.size(), 5u);
  EXPECT_EQ(result.evaluated, 30u);
  // The items the filter leaves out are the targets: none can be found.
  EXPECT_EQ(result.recall[4], 0.0);

  // The same ranking through the Evaluator, formatted as nn-predict formats it.
  auto model = Model::load(path("net.nc"));
  Evaluator ev(model, 64);
  const Dataset input = Dataset::read_netcdf(path("input.nc")).at(0);
  std::vector<uint64_t> row_ptr;
  std::vector<uint32_t> index;
  std::vector<float> values;
  input.csr_arrays(row_ptr, index, values);
  const uint64_t rows = input.examples(), cols = input.features();
  const Exclusion exclude{row_ptr.data(), index.data(), rows};
  std::vector<uint32_t> top(rows * 5);
  std::vector<float> score(rows * 5);
  ev.top_k(CsrInput{row_ptr.data(), index.data(), nullptr, rows, cols}, 5, "", &exclude, top.data(),
           score.data());
  const auto samples = read_labels(path("samples.idx"));
  const auto items = read_labels(path("features.idx"));
  std::string expected;
  char num[32];
  for (uint64_t r = 0; r < rows; ++r) {
    expected += samples.at(uint32_t(r)) + "\t";
    for (int j = 0; j < 5; ++j) {
      std::snprintf(num, sizeof num, "%.3f", double(score[r * 5 + j]));
      expected += items.at(top[r * 5 + j]) + "," + num + ":";
    }
    expected += "\n";
  }
  EXPECT_EQ(read_text(path("recs.txt")), expected);
}

TEST_F(Jobs, CommandFilesMeanTheirKeys) {
  const std::string train_cdl = dir_.write("train.cdl", R"({ "Version": 0.9,
    "Network": "network.json", "Command": "Train", "Data": ["input.nc", "output.nc"],
    "RandomSeed": 5, "Backend": "cpu", "Parallel": "Data", "ForcePrecision": true,
    "TrainingParameters": { "Epochs": 7, "MiniBatch": 16, "Optimizer": "RMSProp",
      "Alpha": 0.002, "mu": 0.95, "CheckpointName": "ck", "CheckpointInterval": 3,
      "Results": "out.nc", "ValidationData": ["v.nc"], "Patience": 2 } })");
  const CommandFile cdl = CommandFile::read(train_cdl);
  EXPECT_EQ(cdl.command(), "Train");
  EXPECT_EQ(cdl.random_seed(), std::optional<uint64_t>(5));
  const TrainJob t = train_job(cdl);
  // Paths are relative to the command file.
  EXPECT_EQ(t.network_json, path("network.json"));
  EXPECT_EQ(t.data_files, (std::vector<std::string>{path("input.nc"), path("output.nc")}));
  EXPECT_EQ(t.epochs, 7u);
  EXPECT_EQ(t.minibatch, 16u);
  EXPECT_EQ(t.optimizer, "RMSProp");
  EXPECT_FLOAT_EQ(t.alpha, 0.002f);
  EXPECT_FLOAT_EQ(t.mu, 0.95f);
  EXPECT_EQ(t.seed, 5u);
  EXPECT_EQ(t.checkpoint_name, path("ck"));
  EXPECT_EQ(t.checkpoint_interval, 3);
  EXPECT_EQ(t.results, path("out.nc"));
  EXPECT_EQ(t.validation_files, (std::vector<std::string>{path("v.nc")}));
  EXPECT_EQ(t.patience, 2u);
  EXPECT_EQ(t.backend, "cpu");
  EXPECT_EQ(t.parallel, Parallelism::Data);
  EXPECT_TRUE(t.force_precision);

  const std::string predict_cdl = dir_.write("predict.cdl", R"({ "Version": 0.9,
    "Network": "net.nc", "Command": "Predict", "Data": "input.nc",
    "PredictionParameters": { "K": 3, "Filter": "f.txt", "OutputIndex": "o.idx",
      "ScoreFormat": "%4.3f" } })");
  const PredictJob p = predict_job(CommandFile::read(predict_cdl));
  EXPECT_EQ(p.network, path("net.nc"));
  EXPECT_EQ(p.data_files, (std::vector<std::string>{path("input.nc")}));
  EXPECT_EQ(p.k, 3u);
  EXPECT_EQ(p.filter, path("f.txt"));
  EXPECT_EQ(p.output_index, path("o.idx"));
  EXPECT_EQ(p.score_format, "%4.3f");
  EXPECT_TRUE(is_stdout_path(p.output));
  EXPECT_FALSE(p.force_precision);

  const std::string bad = dir_.write("bad.cdl", R"({ "Command": "Train", "Network": "n.json",
    "Data": "d.nc", "TrainingParameters": { "Epochs": 0 } })");
  EXPECT_CONTAINS(error_of<ConfigError>([&] { CommandFile::read(bad); }), "bad.cdl");
}

TEST_F(Jobs, ErrorsNameTheBadInput) {
  TrainJob t = train(1, "x.nc");
  t.optimizer = "adamw";
  EXPECT_CONTAINS(error_of<ConfigError>([&] { run_training(t, null_log()); }),
                  "unknown optimizer 'adamw'");
  t = train(1, "x.nc");
  t.data_files = {path("nothing.nc")};
  EXPECT_CONTAINS(error_of<Error>([&] { run_training(t, null_log()); }), "nothing.nc");

  run_training(train(1, "net.nc"), null_log());
  PredictJob p;
  p.network = path("net.nc");
  p.data_files = {path("input.nc")};
  p.output = path("r.txt");
  p.backend = "cpu";
  p.layer = "Hiden";
  EXPECT_CONTAINS(error_of<ConfigError>([&] { run_prediction(p, null_log()); }),
                  "did you mean 'Hidden'");
  p.layer = "";
  p.filter = ratings_;
  EXPECT_CONTAINS(error_of<ConfigError>([&] { run_prediction(p, null_log()); }),
                  "so it needs the sample index (--sample-index) and the output index (-o)");
  p.filter = "";
  p.network = path("input.nc");
  EXPECT_CONTAINS(error_of<DataError>([&] { run_prediction(p, null_log()); }),
                  "is a dataset file, not a network file");
  EXPECT_FALSE(std::ifstream(path("r.txt")).good());  // nothing half-written
}

}  // namespace
}  // namespace nn::api
