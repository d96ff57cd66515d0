// nn-tune's input: the tune file (JSON; docs/tuning.md), its search space, the draws of the
// trials' settings from it, and the writing of one trial's network JSON and command file.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

namespace nn::tool {

// One searched setting: a path into the network JSON ("Network.Denoising.p",
// "Network.Layers.Hidden.N": an array element by its index or its "Name") or into the command
// file's TrainingParameters ("TrainingParameters.Alpha"), and its values.
struct SearchParam {
  std::string path;
  enum class Kind { Choice, Uniform, LogUniform, IntUniform } kind = Kind::Choice;
  nlohmann::json choices;  // Choice: the values
  double low = 0, high = 0;
};

struct TuneFile {
  std::string dir;     // the tune file's folder: relative paths are relative to it
  std::string config;  // folder with network.json and train.cdl
  std::vector<std::string> data, validation;
  std::string metric = "recall";  // recall or ndcg, at k
  uint32_t k = 20;
  std::vector<SearchParam> space;
  std::string sampler = "Random";  // Random, Grid or TPE
  uint32_t trials = 8;
  uint32_t startup_trials = 3;  // TPE: random draws before the model
  bool constant_liar = false;   // TPE: trials still without a result count as the worst
  bool multivariate = false;    // TPE: one joint density over the paths (a kernel per trial)
  bool asynchronous = false;    // "Schedule": "ASHA" (promotions as results come), else Halving
  uint64_t seed = 1;
  uint32_t min_epochs = 1, max_epochs = 1, eta = 3;  // successive halving
  // Wall-clock budget of one run of the tune ("Seconds"; 0: none): no trial starts after it, and
  // the winner is the best of the deepest rung reached.
  double seconds = 0;
  std::string output = "tune";
};

// Reads and checks the file; ConfigError naming the file and the key (JSON path) otherwise.
TuneFile read_tune_file(const std::string& path);

// The trials' settings, one JSON object {path: value} per trial: `trials` random draws from
// `seed`, or every combination of the Choice values (Grid; `trials` is then their count). Not
// for TPE, whose draws depend on the results (sampler.h).
std::vector<nlohmann::json> draw_trials(const TuneFile& t);

// The rungs of successive halving: min_epochs, min_epochs * eta, ... up to max_epochs (the last
// rung is max_epochs).
std::vector<uint32_t> rung_epochs(const TuneFile& t);

// Writes <dir>/network.json and <dir>/train.cdl: the config's with the trial's settings applied,
// the data and validation files made absolute, checkpoints every epoch (the rungs resume them),
// validation every epoch at k, the best evaluated network kept, TensorBoard events in
// <Output>/tensorboard/<trial folder's name>.
void write_trial_files(const TuneFile& t, const nlohmann::json& settings, const std::string& dir);

// Reads a trial's per-epoch log (<dir>/network.epochs.jsonl): the best validation metric over
// the epochs up to `epochs`, and that epoch (0 and -inf when there is none).
std::pair<double, uint32_t> best_metric(const TuneFile& t, const std::string& dir, uint32_t epochs);

}  // namespace nn::tool
