// nn-tune's records in its Output folder: results.tsv (one row per finished rung of a trial) and
// trials.jsonl (the trials' settings, one line each, in the order they were drawn), read back
// when a tune starts again.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nn-tune/tune_file.h"

namespace nn::tool {

struct Row {  // one finished rung of one trial (results.tsv)
  uint32_t trial = 0, rung = 0, epochs = 0, best_epoch = 0;
  double metric = -std::numeric_limits<double>::infinity();
  double seconds = 0;
  std::string status;  // ok or failed (exit status)
};

// The rows of results.tsv; a line cut short by a kill is skipped (its rung runs again).
std::vector<Row> read_results(const std::string& path);
// Appends one row (the header first in a new file; a line left unfinished is ended first).
void append_row(const std::string& path, const Row& r, const nlohmann::json& settings);

// The trials' settings the Output folder holds (none in a new folder). For Random and Grid they
// must be the tune file's draws, and are written all at once when the folder is new; for TPE
// they are drawn one by one (append_trial), and the folder's search.json, the tune file's
// search as it was, must match. A changed search gets another Output: ConfigError otherwise.
std::vector<nlohmann::json> load_trials(const TuneFile& t);
void append_trial(const TuneFile& t, const nlohmann::json& settings);

std::string trial_dir(const TuneFile& t, uint32_t trial);

}  // namespace nn::tool
