// Per-epoch JSON-lines log (see epoch_log.h).
#include "train/epoch_log.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"

namespace nn {
namespace {

// JSON has no NaN or infinity; such values are written as null.
nlohmann::json number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}

}  // namespace

std::string beside_results(const std::string& results, const std::string& suffix) {
  std::string stem = results == "-" ? std::string("network") : results;  // "-": standard output
  if (stem.size() > 3 && stem.compare(stem.size() - 3, 3, ".nc") == 0) stem.resize(stem.size() - 3);
  return stem + suffix;
}

std::string epoch_record(const EpochReport& r) {
  nlohmann::ordered_json j;
  j["epoch"] = r.epoch;
  j["loss"] = number(r.loss);
  j["data_loss"] = number(r.data_loss);
  j["reg_loss"] = number(r.reg_loss);
  j["examples_per_second"] = number(r.examples_per_second);
  j["seconds"] = number(r.seconds);
  // The rate is a float: printed with a float's digits (0.025, not 0.02500000037252903).
  char alpha[32];
  std::snprintf(alpha, sizeof alpha, "%.7g", r.alpha);
  j["alpha"] = number(std::strtod(alpha, nullptr));
  if (r.validated) {
    nlohmann::ordered_json v;
    for (const auto& [name, value] : r.validation.values) v[name] = number(value);
    j["validation"] = v;
  }
  return j.dump();
}

EpochLog::EpochLog(const std::string& path, bool append, uint64_t last_epoch) : path_(path) {
  if (!append) return;
  std::ifstream in(path, std::ios::binary);
  std::string line;
  while (std::getline(in, line)) {
    // A line that does not parse (a hand edit) is kept as it was; only later epochs are dropped.
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("epoch") && j["epoch"].is_number_unsigned() &&
        j["epoch"].get<uint64_t>() > last_epoch)
      continue;
    content_ += line;
    content_ += '\n';
  }
}

// The whole log is rewritten through the atomic write path each epoch (a few hundred bytes per
// epoch): a full disk or a kill leaves the previous complete log, never a truncated or empty one.
void EpochLog::write(const EpochReport& r) {
  content_ += epoch_record(r);
  content_ += '\n';
  AtomicFile out(path_);
  out.write(content_);
  out.commit();
}

}  // namespace nn
