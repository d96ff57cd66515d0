// --resume (TrainJob::resume) takes the newest checkpoint that reads back whole: damaged newer
// ones are skipped with the reason in the log, none readable is an error listing them all, and
// checkpoints named the old way (net.nc2.nc) are still found. Also: a stop request ends
// run_training with nn::Interrupted naming the checkpoint it saved.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/test_util.h"
#include "nn/nn.h"
#include "nn/stop.h"

namespace nn::api {
namespace {

using nn::test::error_of;
using nn::test::ScratchDir;

const char* kNetwork = R"({ "Name": "resume", "ErrorFunction": "CrossEntropy",
  "Layers": [
    { "Name": "Input", "Kind": "Input", "N": "auto", "DataSet": "input", "Sparse": true },
    { "Name": "Hidden", "Kind": "Hidden", "N": 8, "Activation": "Sigmoid" },
    { "Name": "Output", "Kind": "Output", "N": "auto", "DataSet": "output",
      "Activation": "Sigmoid" } ] })";

class ResumeFallback : public ::testing::Test {
 protected:
  void SetUp() override {
    std::ostringstream ratings;
    for (int u = 0; u < 30; ++u) {
      ratings << 'u' << u << '\t';
      for (int j = 0, n = 0; j < 6; ++j)
        if ((u + j) % 4 != 0) ratings << (n++ ? ":m" : "m") << u % 3 * 6 + j;
      ratings << '\n';
    }
    const std::string text = dir_.write("ratings.txt", ratings.str());
    network_ = dir_.write("network.json", kNetwork);
    for (const char* name : {"input", "output"}) {
      GenerateJob g;
      g.dataset = name;
      g.input = text;
      g.output = path(std::string(name) + ".nc");
      g.features = path("features.idx");
      g.samples = path("samples.idx");
      g.create_features = std::string(name) == "input";
      DatasetGenerator(g).generate();
    }
  }

  std::string path(const std::string& name) const { return dir_.path() + "/" + name; }

  TrainJob job(uint32_t epochs, const std::string& results) const {
    TrainJob j;
    j.network_json = network_;
    j.data_files = {path("input.nc"), path("output.nc")};
    j.results = path(results);
    j.epochs = epochs;
    j.minibatch = 8;
    j.optimizer = "adam";
    j.alpha = 0.01f;
    j.seed = 5;
    j.backend = "cpu";
    j.threads = 1;
    j.epoch_log = false;
    j.checkpoint_name = path("ck");
    j.checkpoint_interval = 1;
    return j;
  }

  // The uninterrupted run, without checkpoints (the attribute checkpoint_name is the same).
  TrainJob whole(uint32_t epochs) const {
    TrainJob j = job(epochs, "whole.nc");
    j.checkpoint_interval = 0;
    return j;
  }

  void damage(const std::string& name, size_t at) const {
    std::fstream f(path(name), std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(std::streamoff(at));
    const char c = char(f.get() ^ 0x20);
    f.seekp(std::streamoff(at));
    f.put(c);
  }

  void expect_same_weights(const std::string& a, const std::string& b) const {
    auto x = Model::load(path(a)), y = Model::load(path(b));
    for (const WeightInfo& w : x->weights())
      EXPECT_EQ(x->get_weights(w.name), y->get_weights(w.name)) << w.name;
  }

  ScratchDir dir_;
  std::string network_;
};

TEST_F(ResumeFallback, DamagedNewestCheckpointIsSkipped) {
  run_training(whole(4), null_log());
  TrainJob part = job(3, "part.nc");
  run_training(part, null_log());  // ck1.nc, ck2.nc, ck3.nc
  damage("ck3.nc", 3000);
  damage("ck2.nc", 500);
  part.epochs = 4;
  part.resume = true;
  std::vector<std::string> lines;
  run_training(part, [&](const std::string& l) { lines.push_back(l); });
  std::string log;
  for (const auto& l : lines) log += l + "\n";
  EXPECT_CONTAINS(log, "--resume: skipped the newer checkpoint " + path("ck3.nc") + ": ");
  EXPECT_CONTAINS(log, "--resume: skipped the newer checkpoint " + path("ck2.nc") + ": ");
  EXPECT_CONTAINS(log, "checksum mismatch");
  EXPECT_CONTAINS(log, "resuming from " + path("ck1.nc"));
  expect_same_weights("whole.nc", "part.nc");
}

TEST_F(ResumeFallback, NoCheckpointReadingBackIsAnErrorListingThemAll) {
  TrainJob part = job(2, "part.nc");
  run_training(part, null_log());
  damage("ck2.nc", 100);
  std::ofstream(path("ck1.nc"), std::ios::trunc) << "not a network";
  part.resume = true;
  const std::string e = error_of<DataError>([&] { run_training(part, null_log()); });
  EXPECT_CONTAINS(e, "--resume: none of the 2 checkpoint(s) of '" + path("ck") + "'");
  EXPECT_CONTAINS(e, path("ck2.nc") + ": checksum mismatch");
  EXPECT_CONTAINS(e, path("ck1.nc") + ": ");
}

// nn-train -n net.nc used to name checkpoints net.nc2.nc; the prefix is now "net".
TEST_F(ResumeFallback, CheckpointsWithTheOldNamesAreFound) {
  run_training(whole(4), null_log());
  TrainJob part = job(2, "part.nc");
  run_training(part, null_log());
  std::filesystem::rename(path("ck2.nc"), path("ck.nc2.nc"));
  std::filesystem::remove(path("ck1.nc"));
  part.epochs = 4;
  part.resume = true;
  std::vector<std::string> lines;
  run_training(part, [&](const std::string& l) { lines.push_back(l); });
  EXPECT_NE(std::find(lines.begin(), lines.end(), "resuming from " + path("ck.nc2.nc")),
            lines.end());
  expect_same_weights("whole.nc", "part.nc");
}

// A stop request mid-epoch: Interrupted names the state's file, no result is written, and
// --resume from it ends with the uninterrupted run's weights (byte for byte: the tool tests).
TEST_F(ResumeFallback, StopRequestEndsTheJobWithInterrupted) {
  run_training(whole(3), null_log());
  TrainJob part = job(3, "part.nc");
  clear_stop_request();
  try {
    run_training(part, null_log(), nullptr, [](uint64_t step) {
      if (step == 6) request_stop(SIGTERM);  // minibatch 2 of epoch 2 (4 per epoch)
    });
    ADD_FAILURE() << "not interrupted";
  } catch (const Interrupted& e) {
    EXPECT_EQ(e.signal(), SIGTERM);
    EXPECT_EQ(e.checkpoint(), path("ck1_2.nc"));
    EXPECT_CONTAINS(e.what(), "stopped by SIGTERM in epoch 2 after minibatch 2 of 4 (update 6)");
  }
  clear_stop_request();
  EXPECT_FALSE(std::filesystem::exists(path("part.nc")));
  part.resume = true;
  run_training(part, null_log());
  expect_same_weights("whole.nc", "part.nc");
  EXPECT_FALSE(std::filesystem::exists(path("ck1_2.nc")));  // superseded, removed
}

}  // namespace
}  // namespace nn::api
