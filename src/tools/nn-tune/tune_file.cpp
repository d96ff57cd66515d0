// The tune file, its search space and the trials' files (tune_file.h).
#include "nn-tune/tune_file.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "nn-tune/sampler.h"
#include "nn/error.h"

namespace nn::tool {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& file, const std::string& key, const std::string& what) {
  throw ConfigError(file + ": " + key + ": " + what);
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError(path + ": cannot open");
  try {
    return json::parse(in, nullptr, true, /*ignore_comments=*/true);
  } catch (const json::parse_error& e) {
    throw ConfigError(path + ": not JSON: " + e.what());
  }
}

std::string absolute_from(const std::string& dir, const std::string& p) {
  return fs::path(p).is_absolute() ? p : (fs::path(dir) / p).lexically_normal().string();
}

std::vector<std::string> file_list(const json& j, const std::string& file, const std::string& key,
                                   const std::string& dir) {
  std::vector<std::string> out;
  if (j.is_string()) {
    out.push_back(absolute_from(dir, j.get<std::string>()));
  } else if (j.is_array() && !j.empty()) {
    for (const auto& v : j) {
      if (!v.is_string()) bad(file, key, "expected file names (strings)");
      out.push_back(absolute_from(dir, v.get<std::string>()));
    }
  } else {
    bad(file, key, "expected a file name or a non-empty array of them");
  }
  return out;
}

SearchParam parse_param(const std::string& file, const std::string& path, const json& v) {
  const std::string key = "Space." + path;
  if (path.rfind("Network.", 0) != 0 && path.rfind("TrainingParameters.", 0) != 0)
    bad(file, key, "a path starts with Network. (the network JSON) or TrainingParameters.");
  SearchParam p;
  p.path = path;
  if (v.is_array()) {
    if (v.empty()) bad(file, key, "an empty list of values");
    p.choices = v;
    return p;
  }
  if (!v.is_object() || v.size() != 1)
    bad(file, key,
        "expected a list of values or one of {\"Uniform\": [low, high]}, {\"LogUniform\": "
        "[low, high]}, {\"IntUniform\": [low, high]}");
  const std::string kind = v.begin().key();
  const json& range = v.begin().value();
  if (kind == "Uniform")
    p.kind = SearchParam::Kind::Uniform;
  else if (kind == "LogUniform")
    p.kind = SearchParam::Kind::LogUniform;
  else if (kind == "IntUniform")
    p.kind = SearchParam::Kind::IntUniform;
  else
    bad(file, key + "." + kind, "unknown range; expected Uniform, LogUniform or IntUniform");
  if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number())
    bad(file, key + "." + kind, "expected [low, high]");
  p.low = range[0].get<double>();
  p.high = range[1].get<double>();
  if (!(p.low < p.high)) bad(file, key + "." + kind, "expected low < high");
  if (p.kind == SearchParam::Kind::LogUniform && p.low <= 0)
    bad(file, key + "." + kind, "a log range needs low > 0");
  return p;
}

bool equal_ignoring_case(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// The JSON value that `segments` (from `from`) names in `doc`, created when only the last is
// missing from an object.
json& resolve(json& doc, const std::vector<std::string>& segments, size_t from,
              const std::string& path) {
  json* at = &doc;
  for (size_t i = from; i < segments.size(); ++i) {
    const std::string& s = segments[i];
    const bool last = i + 1 == segments.size();
    if (at->is_object()) {
      // Keys match without regard to case, as the config readers match them.
      std::string key = s;
      for (auto it = at->begin(); it != at->end(); ++it)
        if (equal_ignoring_case(it.key(), s)) key = it.key();
      if (!at->contains(key) && !last)
        throw ConfigError("search path " + path + ": no key '" + s + "' in the config");
      at = &(*at)[key];
    } else if (at->is_array()) {
      json* found = nullptr;
      if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) {
        const size_t index = std::stoul(s);
        if (index < at->size()) found = &(*at)[index];
      } else {
        for (auto& e : *at)
          if (e.is_object() && e.contains("Name") && e["Name"] == s) found = &e;
      }
      if (!found)
        throw ConfigError("search path " + path + ": no element '" + s +
                          "' (an index or a Name) in the config's array");
      at = found;
    } else {
      throw ConfigError("search path " + path + ": '" + segments[i - 1] +
                        "' is neither an object nor an array in the config");
    }
  }
  return *at;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream ss(path);
  std::string part;
  while (std::getline(ss, part, '.')) out.push_back(part);
  return out;
}

}  // namespace

TuneFile read_tune_file(const std::string& path) {
  const json j = read_json(path);
  if (!j.is_object()) throw ConfigError(path + ": expected a JSON object");
  TuneFile t;
  t.dir = fs::absolute(fs::path(path)).parent_path().string();
  static const char* const known[] = {"Config",        "Data",         "ValidationData", "Metric",
                                      "Space",         "Sampler",      "Trials",         "Seed",
                                      "Epochs",        "Seconds",      "Output",         "Schedule",
                                      "StartupTrials", "ConstantLiar", "Multivariate"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool ok = false;
    for (const char* k : known) ok = ok || it.key() == k;
    if (!ok) bad(path, it.key(), "unknown key");
  }
  for (const char* required : {"Config", "Data", "ValidationData", "Space", "Epochs"})
    if (!j.contains(required)) bad(path, required, "required");
  if (!j["Config"].is_string()) bad(path, "Config", "expected a folder name");
  t.config = absolute_from(t.dir, j["Config"].get<std::string>());
  for (const char* f : {"network.json", "train.cdl"})
    if (!fs::exists(fs::path(t.config) / f)) bad(path, "Config", t.config + " has no " + f);
  t.data = file_list(j["Data"], path, "Data", t.dir);
  t.validation = file_list(j["ValidationData"], path, "ValidationData", t.dir);
  if (j.contains("Metric")) {
    const std::string m = j["Metric"].is_string() ? j["Metric"].get<std::string>() : "";
    const size_t at = m.find('@');
    const std::string name = m.substr(0, at);
    if (at == std::string::npos || (name != "recall" && name != "ndcg") ||
        m.find_first_not_of("0123456789", at + 1) != std::string::npos || at + 1 == m.size())
      bad(path, "Metric", "expected recall@K or ndcg@K (K a positive integer)");
    t.metric = name;
    t.k = uint32_t(std::stoul(m.substr(at + 1)));
    if (t.k == 0) bad(path, "Metric", "K must be positive");
  }
  if (!j["Space"].is_object() || j["Space"].empty())
    bad(path, "Space", "expected an object {path: values or range}");
  for (auto it = j["Space"].begin(); it != j["Space"].end(); ++it)
    t.space.push_back(parse_param(path, it.key(), it.value()));
  if (j.contains("Sampler")) {
    if (j["Sampler"] != "Random" && j["Sampler"] != "Grid" && j["Sampler"] != "TPE")
      bad(path, "Sampler", "expected Random, Grid or TPE");
    t.sampler = j["Sampler"].get<std::string>();
  }
  if (j.contains("Schedule")) {
    if (j["Schedule"] != "Halving" && j["Schedule"] != "ASHA")
      bad(path, "Schedule", "expected Halving (rung by rung) or ASHA (asynchronous)");
    t.asynchronous = j["Schedule"] == "ASHA";
  }
  if (t.sampler == "Grid")
    for (const auto& p : t.space)
      if (p.kind != SearchParam::Kind::Choice)
        bad(path, "Space." + p.path, "Grid needs lists of values, not ranges");
  if (j.contains("Trials")) {
    if (!j["Trials"].is_number_unsigned() || j["Trials"].get<uint64_t>() == 0 ||
        j["Trials"].get<uint64_t>() > 100000)
      bad(path, "Trials", "expected an integer from 1 to 100000");
    t.trials = j["Trials"].get<uint32_t>();
  }
  // TPE's random draws before its model: a tenth of the trials, 3 to 10 of them.
  t.startup_trials = std::clamp<uint32_t>(t.trials / 10, 3, 10);
  if (j.contains("StartupTrials")) {
    if (t.sampler != "TPE") bad(path, "StartupTrials", "only for \"Sampler\": \"TPE\"");
    if (!j["StartupTrials"].is_number_unsigned() || j["StartupTrials"].get<uint64_t>() == 0)
      bad(path, "StartupTrials", "expected a positive integer");
    t.startup_trials = j["StartupTrials"].get<uint32_t>();
  }
  if (j.contains("ConstantLiar")) {
    if (t.sampler != "TPE") bad(path, "ConstantLiar", "only for \"Sampler\": \"TPE\"");
    if (!j["ConstantLiar"].is_boolean()) bad(path, "ConstantLiar", "expected true or false");
    t.constant_liar = j["ConstantLiar"].get<bool>();
  }
  if (j.contains("Multivariate")) {
    if (t.sampler != "TPE") bad(path, "Multivariate", "only for \"Sampler\": \"TPE\"");
    if (!j["Multivariate"].is_boolean()) bad(path, "Multivariate", "expected true or false");
    t.multivariate = j["Multivariate"].get<bool>();
  }
  if (j.contains("Seed")) {
    if (!j["Seed"].is_number_unsigned()) bad(path, "Seed", "expected an integer >= 0");
    t.seed = j["Seed"].get<uint64_t>();
  }
  const json& e = j["Epochs"];
  if (!e.is_object() || !e.contains("Max") || !e["Max"].is_number_unsigned())
    bad(path, "Epochs", "expected {\"Min\": m, \"Max\": M, \"Eta\": 3} (Max required)");
  t.max_epochs = e["Max"].get<uint32_t>();
  t.min_epochs = e.value("Min", t.max_epochs);
  t.eta = e.value("Eta", 3u);
  if (t.max_epochs == 0 || t.min_epochs == 0 || t.min_epochs > t.max_epochs)
    bad(path, "Epochs", "expected 1 <= Min <= Max");
  if (t.eta < 2) bad(path, "Epochs.Eta", "expected an integer >= 2");
  if (j.contains("Seconds")) {
    if (!j["Seconds"].is_number() || !(j["Seconds"].get<double>() > 0))
      bad(path, "Seconds", "expected a positive number of seconds");
    t.seconds = j["Seconds"].get<double>();
  }
  if (j.contains("Output")) {
    if (!j["Output"].is_string() || j["Output"].get<std::string>().empty())
      bad(path, "Output", "expected a folder name");
    t.output = j["Output"].get<std::string>();
  }
  t.output = absolute_from(t.dir, t.output);
  return t;
}

std::vector<json> draw_trials(const TuneFile& t) {
  std::vector<json> out;
  if (t.sampler == "Grid") {
    out.push_back(json::object());
    for (const SearchParam& p : t.space) {
      std::vector<json> next;
      for (const json& partial : out)
        for (const json& v : p.choices) {
          json s = partial;
          s[p.path] = v;
          next.push_back(s);
        }
      out = std::move(next);
    }
    return out;
  }
  // Random: one generator for all the draws (the sequence of the first nn-tune, which folders
  // made then still hold in trials.jsonl).
  std::mt19937_64 rng(t.seed);
  for (uint32_t i = 0; i < t.trials; ++i) out.push_back(random_draw(t.space, rng));
  return out;
}

std::vector<uint32_t> rung_epochs(const TuneFile& t) {
  std::vector<uint32_t> out;
  for (uint64_t e = t.min_epochs; e < t.max_epochs; e *= t.eta) out.push_back(uint32_t(e));
  out.push_back(t.max_epochs);
  return out;
}

void write_trial_files(const TuneFile& t, const json& settings, const std::string& dir) {
  json network = read_json((fs::path(t.config) / "network.json").string());
  json cdl = read_json((fs::path(t.config) / "train.cdl").string());
  if (!cdl.contains("TrainingParameters") || !cdl["TrainingParameters"].is_object())
    cdl["TrainingParameters"] = json::object();
  for (auto it = settings.begin(); it != settings.end(); ++it) {
    const std::vector<std::string> segments = split_path(it.key());
    if (segments[0] == "Network")
      resolve(network, segments, 1, it.key()) = it.value();
    else
      resolve(cdl, segments, 0, it.key()) = it.value();
  }
  json& p = cdl["TrainingParameters"];
  for (const char* drop : {"ValidationData", "WarmStart", "TensorBoard", "Trace", "Resume"})
    p.erase(drop);
  cdl["Network"] = "network.json";
  cdl["Data"] = t.data;
  p["ValidationData"] = t.validation;
  p["ValidationK"] = t.k;
  p["ValidationInterval"] = 1;
  p["KeepBest"] = true;
  p["CheckpointName"] = "checkpoint";
  p["CheckpointInterval"] = 1;
  p["CheckpointsKept"] = 1;
  p["Results"] = "network.nc";
  // Every trial a run of one TensorBoard log folder: the hparams dashboard lists the trials with
  // their settings and validation metrics side by side (a promoted trial's rungs continue it).
  p["TensorBoard"] = (fs::path(t.output) / "tensorboard" / fs::path(dir).filename()).string();
  fs::create_directories(dir);
  std::ofstream(fs::path(dir) / "network.json") << network.dump(2) << "\n";
  std::ofstream(fs::path(dir) / "train.cdl") << cdl.dump(2) << "\n";
}

std::pair<double, uint32_t> best_metric(const TuneFile& t, const std::string& dir,
                                        uint32_t epochs) {
  std::ifstream in(fs::path(dir) / "network.epochs.jsonl");
  const std::string name = t.metric + "@" + std::to_string(t.k);
  double best = -std::numeric_limits<double>::infinity();
  uint32_t at = 0;
  std::string line;
  while (std::getline(in, line)) {
    const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("epoch") || !j.contains("validation")) continue;
    const uint32_t e = j["epoch"].get<uint32_t>();
    const json& v = j["validation"];
    if (e > epochs || !v.contains(name) || !v[name].is_number()) continue;
    if (v[name].get<double>() > best) {
      best = v[name].get<double>();
      at = e;
    }
  }
  return {best, at};
}

}  // namespace nn::tool
