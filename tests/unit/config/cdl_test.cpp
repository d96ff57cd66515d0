// CDL command files: defaults, case-insensitive keys, the keys DSSTNE documented but did not parse,
// required keys, range checks, and relative paths resolved against the file's directory.
#include <gtest/gtest.h>

#include <filesystem>

#include "config/parse.h"
#include "core/test_util.h"

namespace nn {
namespace {

using test::error_of;

std::string error_for(const std::string& text) {
  return error_of([&] { parse_cdl(text, "run.cdl"); });
}

const char* kTrain = R"({"Network": "net.json", "Command": "Train", "Data": "data.nc",
                         "TrainingParameters": {"Epochs": 5}})";

TEST(Cdl, TrainDefaults) {
  const CdlSpec c = parse_cdl(kTrain, "run.cdl");
  EXPECT_EQ(c.source, "run.cdl");
  EXPECT_EQ(c.command, Command::Train);
  EXPECT_EQ(c.network, "net.json");  // no directory in the source name: left as written
  EXPECT_EQ(c.data, std::vector<std::string>{"data.nc"});
  EXPECT_FALSE(c.random_seed.has_value());
  const TrainingParameters& t = c.training;
  EXPECT_EQ(t.epochs, 5);
  EXPECT_EQ(t.minibatch, 1024u);
  EXPECT_FLOAT_EQ(t.alpha, 0.1f);
  EXPECT_FLOAT_EQ(t.lambda, 0.001f);
  EXPECT_EQ(t.lambda1, 0.0f);
  EXPECT_FLOAT_EQ(t.mu, 0.9f);
  EXPECT_FLOAT_EQ(t.mu1, 0.999f);
  EXPECT_EQ(t.alpha_interval, 0);
  EXPECT_FLOAT_EQ(t.alpha_multiplier, 0.5f);
  EXPECT_EQ(t.optimizer, OptimizerKind::SGD);
  EXPECT_EQ(t.checkpoint_name, "check");
  EXPECT_EQ(t.checkpoint_interval, 1);
  EXPECT_EQ(t.results, "network.nc");
  EXPECT_FALSE(t.shuffle_indices.has_value());
  const PredictionParameters& p = c.prediction;
  EXPECT_EQ(p.minibatch, 1024u);
  EXPECT_EQ(p.k, 10);
  EXPECT_EQ(p.score_format, "%.3f");
  EXPECT_EQ(p.output, "");
}

TEST(Cdl, EveryKeyCaseInsensitive) {
  const CdlSpec c = parse_cdl(R"({
    "version": 0.1, "NETWORK": "n.json", "command": "train", "DATA": ["a.nc", "b.nc"],
    "randomseed": 12345,
    "trainingparameters": {
      "EPOCHS": 60, "minibatch": 256, "ALPHA": 0.025, "lambda": 0.0001, "LAMBDA1": 0.00001,
      "MU": 0.5, "mu1": 0.99, "alphainterval": 20.7, "ALPHAMULTIPLIER": 0.8,
      "optimizer": "nesterov", "checkpointNAME": "ck", "CHECKPOINTINTERVAL": 0,
      "results": "out.nc", "shuffleindices": false},
    "PREDICTIONPARAMETERS": {"MINIBATCH": 64, "topk": 100}})",
                              "dir/run.cdl");
  EXPECT_FLOAT_EQ(c.version, 0.1f);
  EXPECT_EQ(c.command, Command::Train);
  EXPECT_EQ(c.network, "dir/n.json");
  EXPECT_EQ(c.data, (std::vector<std::string>{"dir/a.nc", "dir/b.nc"}));
  EXPECT_EQ(c.random_seed, 12345u);
  const TrainingParameters& t = c.training;
  EXPECT_EQ(t.epochs, 60);
  EXPECT_EQ(t.minibatch, 256u);
  EXPECT_FLOAT_EQ(t.alpha, 0.025f);
  EXPECT_FLOAT_EQ(t.lambda, 0.0001f);
  EXPECT_FLOAT_EQ(t.lambda1, 0.00001f);
  EXPECT_FLOAT_EQ(t.mu, 0.5f);
  EXPECT_FLOAT_EQ(t.mu1, 0.99f);
  EXPECT_EQ(t.alpha_interval, 20);  // truncated, as DSSTNE does
  EXPECT_FLOAT_EQ(t.alpha_multiplier, 0.8f);
  EXPECT_EQ(t.optimizer, OptimizerKind::Nesterov);
  EXPECT_EQ(t.checkpoint_name, "dir/ck");
  EXPECT_EQ(t.checkpoint_interval, 0);
  EXPECT_EQ(t.results, "dir/out.nc");
  ASSERT_TRUE(t.shuffle_indices.has_value());
  EXPECT_FALSE(*t.shuffle_indices);
  EXPECT_EQ(c.prediction.minibatch, 64u);
  EXPECT_EQ(c.prediction.k, 100);
}

TEST(Cdl, AllOptimizersInAnyCase) {
  const std::pair<const char*, OptimizerKind> cases[] = {
      {"sgd", OptimizerKind::SGD},           {"Momentum", OptimizerKind::Momentum},
      {"NESTEROV", OptimizerKind::Nesterov}, {"adagrad", OptimizerKind::AdaGrad},
      {"AdaDelta", OptimizerKind::AdaDelta}, {"RMSPROP", OptimizerKind::RMSProp},
      {"adam", OptimizerKind::Adam}};
  for (const auto& [name, kind] : cases) {
    const std::string text = std::string(R"({"Network": "n", "Command": "Train", "Data": "d",
        "TrainingParameters": {"Epochs": 1, "Optimizer": ")") +
                             name + "\"}}";
    EXPECT_EQ(parse_cdl(text, "").training.optimizer, kind) << name;
  }
}

TEST(Cdl, PredictWithAllPredictionParameters) {
  const CdlSpec c = parse_cdl(R"({"Network": "trained.nc", "Command": "Predict",
    "Data": "test.nc", "PredictionParameters": {
      "MiniBatch": 32, "K": 5, "Output": "recs.txt", "Filter": "seen.txt",
      "InputIndex": "features.idx", "OutputIndex": "/abs/items.idx", "SampleIndex": "samples.idx",
      "Layer": "Output", "ScoreFormat": "%8.4e", "Target": "held_out.nc"}})",
                              "/work/exp/predict.cdl");
  EXPECT_EQ(c.command, Command::Predict);
  EXPECT_EQ(c.network, "/work/exp/trained.nc");
  EXPECT_EQ(c.training.epochs, 0);  // not required for Predict
  const PredictionParameters& p = c.prediction;
  EXPECT_EQ(p.minibatch, 32u);
  EXPECT_EQ(p.k, 5);
  EXPECT_EQ(p.output, "/work/exp/recs.txt");
  EXPECT_EQ(p.filter, "/work/exp/seen.txt");
  EXPECT_EQ(p.input_index, "/work/exp/features.idx");
  EXPECT_EQ(p.output_index, "/abs/items.idx");  // absolute paths stay as they are
  EXPECT_EQ(p.sample_index, "/work/exp/samples.idx");
  EXPECT_EQ(p.layer, "Output");  // a layer name, not a path
  EXPECT_EQ(p.score_format, "%8.4e");
  EXPECT_EQ(p.target, "/work/exp/held_out.nc");
}

TEST(Cdl, StdoutOutputIsNotResolved) {
  const CdlSpec c = parse_cdl(R"({"Network": "n.nc", "Command": "Predict", "Data": "d.nc",
                                  "PredictionParameters": {"Output": "-"}})",
                              "x/p.cdl");
  EXPECT_EQ(c.prediction.output, "-");
  EXPECT_EQ(c.prediction.filter, "");  // unset stays unset
}

TEST(Cdl, ValidateNeedsNoEpochs) {
  EXPECT_EQ(
      parse_cdl(R"({"Network": "n.json", "Command": "validate", "Data": "d.nc"})", "").command,
      Command::Validate);
}

TEST(Cdl, RandomSeedMinusOneMeansToolPicks) {
  const CdlSpec c = parse_cdl(R"({"Network": "n", "Command": "Predict", "Data": "d",
                                  "RandomSeed": -1})",
                              "");
  EXPECT_FALSE(c.random_seed.has_value());
  EXPECT_EQ(parse_cdl(R"({"Network": "n", "Command": "Predict", "Data": "d", "RandomSeed": 0})", "")
                .random_seed,
            0u);
}

TEST(Cdl, LoadResolvesPathsAgainstTheFilesDirectory) {
  test::ScratchDir dir;
  const std::string path = dir.write("exp/train.cdl", kTrain);
  const CdlSpec c = load_cdl(path);
  const std::filesystem::path base = std::filesystem::path(dir.path()) / "exp";
  EXPECT_EQ(c.source, path);
  EXPECT_EQ(c.network, (base / "net.json").string());
  EXPECT_EQ(c.data, std::vector<std::string>{(base / "data.nc").string()});
  EXPECT_EQ(c.training.results, (base / "network.nc").string());  // defaults too
  EXPECT_EQ(c.training.checkpoint_name, (base / "check").string());
}

TEST(Cdl, ProfilingKeys) {
  const CdlSpec off = parse_cdl(kTrain, "run.cdl");
  EXPECT_FALSE(off.training.profile);
  EXPECT_EQ(off.training.trace, "");
  EXPECT_FALSE(off.training.trace_steps.has_value());
  const CdlSpec on = parse_cdl(R"({"Network": "n", "Command": "Train", "Data": "d",
      "TrainingParameters": {"Epochs": 1, "profile": true, "Trace": "t.json", "TraceSteps": 0}})",
                               "run.cdl");
  EXPECT_TRUE(on.training.profile);
  EXPECT_EQ(on.training.trace, "t.json");
  EXPECT_EQ(on.training.trace_steps, 0u);
  test::ScratchDir dir;
  const CdlSpec loaded = load_cdl(dir.write("exp/train.cdl", R"({"Network": "n", "Command": "Train",
      "Data": "d", "TrainingParameters": {"Epochs": 1, "Trace": "t.json"}})"));
  EXPECT_EQ(loaded.training.trace,
            (std::filesystem::path(dir.path()) / "exp" / "t.json").string());  // beside the file
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "TrainingParameters": {"Epochs": 1, "Trace": ""}})"),
                  "run.cdl: TrainingParameters.Trace: must not be empty");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "TrainingParameters": {"Epochs": 1, "Profile": "yes"}})"),
                  "TrainingParameters.Profile");
}

TEST(Cdl, TensorBoardKeys) {
  const CdlSpec off = parse_cdl(kTrain, "run.cdl");
  EXPECT_EQ(off.training.tensorboard, "");
  EXPECT_EQ(off.training.tensorboard_interval, 0u);
  test::ScratchDir dir;
  const CdlSpec on = load_cdl(dir.write("exp/train.cdl", R"({"Network": "n", "Command": "Train",
      "Data": "d", "TrainingParameters": {"Epochs": 1, "TensorBoard": "runs/a",
      "tensorboardInterval": 50}})"));
  EXPECT_EQ(on.training.tensorboard,
            (std::filesystem::path(dir.path()) / "exp" / "runs/a").string());  // beside the file
  EXPECT_EQ(on.training.tensorboard_interval, 50u);
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "TrainingParameters": {"Epochs": 1, "TensorBoard": ""}})"),
                  "run.cdl: TrainingParameters.TensorBoard: must not be empty");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "TrainingParameters": {"TensorBoardInterval": -1}})"),
                  "TrainingParameters.TensorBoardInterval");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "TrainingParameters": {"Tensorboards": "x"}})"),
                  "TensorBoard");  // the nearest known key is suggested
}

TEST(Cdl, SparseUpdateKeys) {
  EXPECT_EQ(parse_cdl(kTrain, "run.cdl").training.sparse_update, "Exact");
  const auto with = [](const std::string& params) {
    return parse_cdl(R"({"Network": "n", "Command": "Train", "Data": "d",
        "TrainingParameters": {"Epochs": 1, )" +
                         params + "}}",
                     "run.cdl")
        .training.sparse_update;
  };
  EXPECT_EQ(with(R"("SparseUpdate": "lazy")"), "lazy");  // any case (train_options reads it)
  EXPECT_EQ(with(R"("SparseUpdate": "Dense")"), "Dense");
  EXPECT_EQ(with(R"("LazyUpdate": true)"), "Lazy");
  EXPECT_EQ(with(R"("LazyUpdate": false)"), "Exact");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "TrainingParameters": {"Epochs": 1, "SparseUpdate": "Sparse"}})"),
                  "run.cdl: TrainingParameters.SparseUpdate: expected \"Exact\", \"Dense\" or "
                  "\"Lazy\", got \"Sparse\"");
}

TEST(CdlErrors, MissingRequiredKeys) {
  EXPECT_CONTAINS(error_for(R"({"Command": "Train", "Data": "d",
                                "TrainingParameters": {"Epochs": 1}})"),
                  "run.cdl: Network: missing; required");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train",
                                "TrainingParameters": {"Epochs": 1}})"),
                  "run.cdl: Data: missing; required");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Data": "d"})"),
                  "run.cdl: Command: missing; required (Train, Predict, Validate or Serve)");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d"})"),
                  "run.cdl: TrainingParameters.Epochs: missing; required when Command is Train");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "TrainingParameters": {"Alpha": 0.1}})"),
                  "TrainingParameters.Epochs: missing");
}

TEST(CdlErrors, BadOptimizerAndCommandNames) {
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "TrainingParameters": {"Epochs": 1, "Optimizer": "LBFGS"}})"),
                  "run.cdl: TrainingParameters.Optimizer: unknown \"LBFGS\"; expected one of "
                  "SGD, Momentum, Nesterov, AdaGrad, AdaDelta, RMSProp, Adam");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Fit", "Data": "d"})"),
                  "run.cdl: Command: unknown \"Fit\"; expected one of Train, Predict, Validate");
}

TEST(CdlErrors, DataMustBeAStringOrNonEmptyArrayOfStrings) {
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Validate", "Data": []})"),
                  "run.cdl: Data: expected a string or a non-empty array of strings, got an array");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Validate", "Data": ["a", 2]})"),
                  "run.cdl: Data[1]: expected a string, got 2");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Validate", "Data": [""]})"),
                  "run.cdl: Data: dataset file names must not be empty");
}

// "Parallel" (ours): the mode under mpirun of every layer without its own key.
TEST(Cdl, ParallelKey) {
  EXPECT_EQ(parse_cdl(R"({"Network": "n", "Command": "Train", "Data": "d",
                          "TrainingParameters": {"Epochs": 1}})",
                      "run.cdl")
                .parallel,
            ParallelMode::Auto);
  EXPECT_EQ(parse_cdl(R"({"Network": "n", "Command": "Train", "Data": "d", "Parallel": "model",
                          "TrainingParameters": {"Epochs": 1}})",
                      "run.cdl")
                .parallel,
            ParallelMode::Model);
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "Parallel": "both", "TrainingParameters": {"Epochs": 1}})"),
                  "run.cdl: Parallel: expected \"Auto\", \"Data\" or \"Model\", not \"both\"");
}

// ForcePrecision (ours): BF16 kept even where it measures slower than FP32; a boolean.
TEST(Cdl, ForcePrecisionKey) {
  EXPECT_FALSE(parse_cdl(R"({"Network": "n", "Command": "Train", "Data": "d",
                             "TrainingParameters": {"Epochs": 1}})",
                         "run.cdl")
                   .force_precision);
  const CdlSpec forced = parse_cdl(R"({"Network": "n", "Command": "Train", "Data": "d",
                                       "Precision": "BF16", "ForcePrecision": true,
                                       "TrainingParameters": {"Epochs": 1}})",
                                   "run.cdl");
  EXPECT_TRUE(forced.force_precision);
  ASSERT_TRUE(forced.precision.has_value());
  EXPECT_EQ(*forced.precision, Precision::BF16);
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "ForcePrecision": "yes", "TrainingParameters": {"Epochs": 1}})"),
                  "run.cdl: ForcePrecision:");
}

TEST(CdlErrors, UnknownKeysListTheValidOnes) {
  EXPECT_CONTAINS(
      error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "Epochs": 3})"),
      "run.cdl: Epochs: unknown key; expected one of Version, Network, Command, Data, "
      "RandomSeed, MemoryLimit, Parallel, Link, Backend, Device, Precision, ForcePrecision, "
      "TrainingParameters, PredictionParameters");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "TrainingParameters": {"Epochs": 1, "MiniBach": 3}})"),
                  "run.cdl: TrainingParameters.MiniBach: unknown key; expected one of Epochs, "
                  "MiniBatch");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                                "TrainingParameters": {"Epochs": 1, "MiniBach": 3}})"),
                  "(did you mean MiniBatch?)");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Predict", "Data": "d",
                                "PredictionParameters": {"Top": 3}})"),
                  "PredictionParameters.Top: unknown key; expected one of MiniBatch, K, TopK");
}

TEST(CdlErrors, RangeChecks) {
  const auto train_with = [](const std::string& params) {
    return error_for(R"({"Network": "n", "Command": "Train", "Data": "d",
                         "TrainingParameters": {)" +
                     params + "}}");
  };
  EXPECT_CONTAINS(train_with(R"("Epochs": 0)"),
                  "TrainingParameters.Epochs: must be between 1 and 2147483647, got 0");
  EXPECT_CONTAINS(train_with(R"("Epochs": 2.5)"),
                  "TrainingParameters.Epochs: expected an integer, got 2.5");
  EXPECT_CONTAINS(train_with(R"("Epochs": 1, "MiniBatch": 0)"),
                  "TrainingParameters.MiniBatch: must be between 1 and 4294967295, got 0");
  EXPECT_CONTAINS(train_with(R"("Epochs": 1, "Alpha": -0.5)"),
                  "TrainingParameters.Alpha: must be >= 0, got -0.5");
  EXPECT_CONTAINS(train_with(R"("Epochs": 1, "Lambda": -1)"),
                  "TrainingParameters.Lambda: must be >= 0, got -1");
  EXPECT_CONTAINS(train_with(R"("Epochs": 1, "Mu": 1)"),
                  "TrainingParameters.Mu: must be in [0, 1), got 1");
  EXPECT_CONTAINS(
      train_with(R"("Epochs": 1, "CheckpointInterval": -1)"),
      "TrainingParameters.CheckpointInterval: must be between 0 and 2147483647, got -1");
  EXPECT_CONTAINS(train_with(R"("Epochs": 1, "AlphaInterval": -2)"),
                  "TrainingParameters.AlphaInterval: must be >= 0, got -2");
  EXPECT_CONTAINS(train_with(R"("Epochs": 1, "AlphaMultiplier": 0)"),
                  "TrainingParameters.AlphaMultiplier: must be > 0, got 0");
  EXPECT_CONTAINS(train_with(R"("Epochs": 1, "Results": "")"),
                  "TrainingParameters.Results: must not be empty");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Predict", "Data": "d",
                                "PredictionParameters": {"K": 0}})"),
                  "PredictionParameters.K: must be between 1 and 2147483647, got 0");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Predict", "Data": "d",
                                "RandomSeed": -2})"),
                  "run.cdl: RandomSeed: must be >= -1, got -2");
  EXPECT_CONTAINS(error_for(R"({"Network": "n", "Command": "Predict", "Data": "d",
                                "PredictionParameters": {"K": 3, "TopK": 4}})"),
                  "PredictionParameters.TopK: given twice (K and its alias TopK)");
}

TEST(CdlErrors, ScoreFormatMustTakeExactlyOneFloat) {
  const auto with_format = [](const std::string& format) {
    return error_for(R"({"Network": "n", "Command": "Predict", "Data": "d",
                         "PredictionParameters": {"ScoreFormat": ")" +
                     format + "\"}}");
  };
  for (const char* bad : {"%s", "%d", "%.3f %.3f", "score", "%n", "%.3f%"})
    EXPECT_CONTAINS(with_format(bad), "PredictionParameters.ScoreFormat: expected a printf format")
        << bad;
  for (const char* good : {"%.3f", "%g", "%%%-+10.2e", "%4.3f"}) {
    EXPECT_NO_THROW(parse_cdl(R"({"Network": "n", "Command": "Predict", "Data": "d",
                                  "PredictionParameters": {"ScoreFormat": ")" +
                                  std::string(good) + "\"}}",
                              ""))
        << good;
  }
}

TEST(CdlErrors, SyntaxErrorAndMissingFile) {
  EXPECT_CONTAINS(error_for("{\"Network\": \"n\",\n \"Command\": Train}"),
                  "run.cdl: line 2, column 13: invalid JSON");
  test::ScratchDir dir;
  const std::string path = dir.path() + "/nope.cdl";
  EXPECT_CONTAINS(error_of<IoError>([&] { load_cdl(path); }),
                  path + ": cannot open CDL command file: No such file or directory");
}

}  // namespace
}  // namespace nn
